import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  encodeGguf,
  GgmlType,
  GgufError,
  type GgufKV,
  GgufMetadata,
  parseGguf,
  readGguf,
  readTensorData,
  GgufValueType as T,
  tensorBytes,
  writeGguf,
} from "./index.js";

const arr = (itemType: number, items: unknown) => ({ itemType, items }) as never;

/** One entry of every value type, arrays of every item type, and arrays nested two deep. */
const EVERY_TYPE: GgufKV[] = [
  { key: "u8", type: T.UINT8, value: 255 },
  { key: "i8", type: T.INT8, value: -128 },
  { key: "u16", type: T.UINT16, value: 65535 },
  { key: "i16", type: T.INT16, value: -32768 },
  { key: "u32", type: T.UINT32, value: 4294967295 },
  { key: "i32", type: T.INT32, value: -2147483648 },
  { key: "f32", type: T.FLOAT32, value: Math.fround(0.1) },
  { key: "bool", type: T.BOOL, value: true },
  { key: "string", type: T.STRING, value: "héllo ✓ 𝄞" },
  { key: "u64", type: T.UINT64, value: 18446744073709551615n },
  { key: "i64", type: T.INT64, value: -9223372036854775807n },
  { key: "f64", type: T.FLOAT64, value: 0.1 },
  { key: "a.u8", type: T.ARRAY, value: arr(T.UINT8, Uint8Array.of(1, 2, 255)) },
  { key: "a.i8", type: T.ARRAY, value: arr(T.INT8, Int8Array.of(-1, 2)) },
  { key: "a.u16", type: T.ARRAY, value: arr(T.UINT16, Uint16Array.of(65535)) },
  { key: "a.i16", type: T.ARRAY, value: arr(T.INT16, Int16Array.of(-2)) },
  { key: "a.u32", type: T.ARRAY, value: arr(T.UINT32, Uint32Array.of(7, 8)) },
  { key: "a.i32", type: T.ARRAY, value: arr(T.INT32, Int32Array.of(-7)) },
  { key: "a.f32", type: T.ARRAY, value: arr(T.FLOAT32, Float32Array.of(1.5, -2)) },
  { key: "a.bool", type: T.ARRAY, value: arr(T.BOOL, [true, false, true]) },
  { key: "a.string", type: T.ARRAY, value: arr(T.STRING, ["a", "", "ü"]) },
  { key: "a.u64", type: T.ARRAY, value: arr(T.UINT64, BigUint64Array.of(2n ** 64n - 1n)) },
  { key: "a.i64", type: T.ARRAY, value: arr(T.INT64, BigInt64Array.of(-(2n ** 63n))) },
  { key: "a.f64", type: T.ARRAY, value: arr(T.FLOAT64, Float64Array.of(Math.PI)) },
  { key: "a.empty", type: T.ARRAY, value: arr(T.STRING, []) },
  {
    key: "a.nested",
    type: T.ARRAY,
    value: arr(T.ARRAY, [arr(T.INT32, Int32Array.of(1, 2)), arr(T.ARRAY, [arr(T.STRING, ["deep"])])]),
  },
];

describe("metadata values", () => {
  const bytes = encodeGguf(EVERY_TYPE, []);
  const g = parseGguf(bytes);

  it("reads back every value type exactly", () => {
    expect([...g.metadata.keys()]).toEqual(EVERY_TYPE.map((kv) => kv.key));
    for (const kv of EVERY_TYPE) expect(g.metadata.get(kv.key), kv.key).toEqual(kv);
  });

  it("keeps 64-bit integers exact as bigint", () => {
    expect(g.metadata.get("u64")!.value).toBe(18446744073709551615n);
    expect(g.metadata.get("i64")!.value).toBe(-9223372036854775807n);
    expect(g.metadata.value("a.u64")).toEqual(BigUint64Array.of(18446744073709551615n));
  });

  it("encodes the layout the format defines", () => {
    // Header: "GGUF", version 3, 0 tensors, 26 entries; then the first key "u8" = uint8 255.
    const dv = new DataView(bytes.buffer, bytes.byteOffset);
    expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe("GGUF");
    expect(dv.getUint32(4, true)).toBe(3);
    expect(dv.getBigUint64(8, true)).toBe(0n);
    expect(dv.getBigUint64(16, true)).toBe(BigInt(EVERY_TYPE.length));
    expect(dv.getBigUint64(24, true)).toBe(2n); // key length
    expect(new TextDecoder().decode(bytes.subarray(32, 34))).toBe("u8");
    expect(dv.getUint32(34, true)).toBe(T.UINT8);
    expect(bytes[38]).toBe(255);
  });

  it("gives plain values", () => {
    expect(g.metadata.value("a.nested")).toEqual([Int32Array.of(1, 2), [["deep"]]]);
    expect(g.metadata.value("missing")).toBeUndefined();
  });
});

describe("typed accessors", () => {
  const md = new GgufMetadata([
    { key: "general.architecture", type: T.STRING, value: "qwen2" },
    { key: "qwen2.context_length", type: T.UINT32, value: 32768 },
    { key: "qwen2.rope.freq_base", type: T.FLOAT32, value: 1e6 },
    { key: "big", type: T.UINT64, value: 2n ** 60n },
    { key: "small64", type: T.UINT64, value: 42n },
    { key: "tokens", type: T.ARRAY, value: arr(T.STRING, ["a", "b"]) },
    { key: "scores", type: T.ARRAY, value: arr(T.FLOAT32, Float32Array.of(0.5)) },
  ]);

  it("reads common keys", () => {
    expect(md.architecture).toBe("qwen2");
    expect(md.archInteger("context_length")).toBe(32768);
    expect(md.optArchNumber("rope.freq_base")).toBe(1e6);
    expect(md.optArchNumber("rope.scaling.factor")).toBeUndefined();
    expect(md.integer("small64")).toBe(42);
    expect(md.stringArray("tokens")).toEqual(["a", "b"]);
    expect(Array.from(md.numberArray("scores"))).toEqual([0.5]);
    expect(md.alignment).toBe(32);
  });

  function codeOf(f: () => unknown): [string, string] {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(GgufError);
      return [(e as GgufError).code, (e as GgufError).message];
    }
    throw new Error("did not throw");
  }

  it("names a missing key", () => {
    const [code, msg] = codeOf(() => md.integer("qwen2.block_count"));
    expect(code).toBe("MISSING_KEY");
    expect(msg).toContain('"qwen2.block_count"');
  });

  it("names a mistyped key and what it holds", () => {
    const [code, msg] = codeOf(() => md.string("qwen2.context_length"));
    expect(code).toBe("WRONG_KEY_TYPE");
    expect(msg).toContain('"qwen2.context_length" holds uint32, expected string');
    expect(codeOf(() => md.stringArray("scores"))[1]).toContain("holds array of float32");
    expect(codeOf(() => md.optString("qwen2.rope.freq_base"))[0]).toBe("WRONG_KEY_TYPE");
  });

  it("refuses a 64-bit integer a number cannot hold instead of rounding it", () => {
    expect(codeOf(() => md.integer("big"))[0]).toBe("WRONG_KEY_TYPE");
  });
});

describe("tensors", () => {
  const data = new Uint8Array(18 * 2).map((_, i) => i);
  const f32 = new Uint8Array(new Float32Array([1, 2, 3]).buffer);
  const bytes = encodeGguf(
    [{ key: "general.alignment", type: T.UINT32, value: 64 }],
    [
      { name: "a", type: GgmlType.F32, dims: [3], data: f32 },
      { name: "b", type: GgmlType.Q4_0, dims: [32, 2], data },
    ],
  );
  const g = parseGguf(bytes);

  it("lays data out at multiples of general.alignment", () => {
    expect(g.alignment).toBe(64);
    expect(g.parts[0]!.dataOffset % 64).toBe(0);
    expect(g.tensors.map((t) => [t.name, t.offset, t.byteSize, t.nElements])).toEqual([
      ["a", 0, 12, 3],
      ["b", 64, 36, 64],
    ]);
    expect(bytes.length).toBe(g.parts[0]!.dataOffset + 128);
    expect(tensorBytes(bytes, g, "b")).toEqual(data);
    expect(new Float32Array(tensorBytes(bytes, g, "a").slice().buffer)).toEqual(new Float32Array([1, 2, 3]));
  });

  it("streams the same layout to a file, padding after every tensor", async () => {
    const dir = mkdtempSync(join(tmpdir(), "minfer-gguf-write-"));
    try {
      const path = join(dir, "t.gguf");
      const chunked = () => [data.subarray(0, 5), data.subarray(5)];
      await writeGguf(
        path,
        [{ key: "general.alignment", type: T.UINT32, value: 64 }],
        [
          { name: "a", type: GgmlType.F32, dims: [3], data: f32 },
          { name: "b", type: GgmlType.Q4_0, dims: [32, 2], data: chunked },
        ],
      );
      expect(Buffer.compare(readFileSync(path), bytes)).toBe(0);
      const file = await readGguf(path);
      expect(await readTensorData(file, "b")).toEqual(data);
      await expect(
        writeGguf(path, [], [{ name: "a", type: GgmlType.F32, dims: [4], data: () => [f32] }]),
      ).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      // The failed write left the earlier file alone and no partial file behind.
      expect(readdirSync(dir)).toEqual(["t.gguf"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses data of the wrong size", () => {
    expect(() => encodeGguf([], [{ name: "x", type: GgmlType.F32, dims: [4], data: f32 }])).toThrow(
      /12 bytes of data; its type and shape need 16/,
    );
  });
});

describe("GGUF version 2", () => {
  it("is read and written", () => {
    const bytes = encodeGguf([{ key: "k", type: T.STRING, value: "v" }], [], 2);
    const g = parseGguf(bytes);
    expect(g.version).toBe(2);
    expect(g.metadata.string("k")).toBe("v");
  });
});
