/**
 * Test-only helpers for hand-made GGUF bytes. Not exported from the package (index.ts does not
 * re-export this file).
 */
import { GgmlType } from "./ggml-types.js";
import type { GgufArray, GgufKV } from "./metadata.js";
import { GgufValueType } from "./value-types.js";
import { encodeGguf } from "./write.js";

const textEncoder = new TextEncoder();

/**
 * A little-endian byte builder for hand-made GGUF headers. Every writer returns `this`; `length`
 * is the offset the next write goes to, so tests can record the offsets of the fields they write.
 */
export class GgufByteBuilder {
  #buf = new Uint8Array(256);
  #view = new DataView(this.#buf.buffer);
  #len = 0;

  /** Bytes written so far (the offset of the next field). */
  get length(): number {
    return this.#len;
  }

  #room(n: number): number {
    const at = this.#len;
    if (at + n > this.#buf.length) {
      const bigger = new Uint8Array(Math.max(at + n, this.#buf.length * 2));
      bigger.set(this.#buf.subarray(0, at));
      this.#buf = bigger;
      this.#view = new DataView(bigger.buffer);
    }
    this.#len += n;
    return at;
  }

  u8(v: number): this {
    const at = this.#room(1);
    this.#view.setUint8(at, v);
    return this;
  }
  u32(v: number): this {
    const at = this.#room(4);
    this.#view.setUint32(at, v, true);
    return this;
  }
  i32(v: number): this {
    const at = this.#room(4);
    this.#view.setInt32(at, v, true);
    return this;
  }
  f32(v: number): this {
    const at = this.#room(4);
    this.#view.setFloat32(at, v, true);
    return this;
  }
  u64(v: number | bigint): this {
    const at = this.#room(8);
    this.#view.setBigUint64(at, BigInt(v), true);
    return this;
  }
  /** Raw bytes (a string is written as its UTF-8 bytes, without a length). */
  raw(b: Uint8Array | readonly number[] | string): this {
    const bytes = typeof b === "string" ? textEncoder.encode(b) : Uint8Array.from(b);
    const at = this.#room(bytes.length);
    this.#buf.set(bytes, at);
    return this;
  }
  /** A GGUF string: u64 byte length, then the bytes (given raw to allow invalid UTF-8). */
  str(s: string | Uint8Array | readonly number[]): this {
    const bytes = typeof s === "string" ? textEncoder.encode(s) : Uint8Array.from(s);
    return this.u64(bytes.length).raw(bytes);
  }
  zeros(n: number): this {
    this.#room(n);
    return this;
  }
  /** Zero bytes up to the next multiple of `alignment`. */
  pad(alignment: number): this {
    return this.zeros((alignment - (this.#len % alignment)) % alignment);
  }
  /** Magic "GGUF", version, tensor count, metadata count (24 bytes). */
  header(nTensors: number | bigint, nKv: number | bigint, version = 3): this {
    return this.raw("GGUF").u32(version).u64(nTensors).u64(nKv);
  }
  /** Key and value type of a metadata entry; the value is written by the caller. */
  key(key: string | Uint8Array, type: number): this {
    return this.str(key).u32(type);
  }
  kvU32(key: string, v: number): this {
    return this.key(key, GgufValueType.UINT32).u32(v);
  }
  kvString(key: string, v: string | Uint8Array): this {
    return this.key(key, GgufValueType.STRING).str(v);
  }
  /** One tensor info: name, dimension count, dims, ggml type, data offset. */
  tensorInfo(name: string, dims: readonly (number | bigint)[], type: number, offset: number | bigint): this {
    this.str(name).u32(dims.length);
    for (const d of dims) this.u64(d);
    return this.u32(type).u64(offset);
  }
  /** A copy of the bytes written. */
  finish(): Uint8Array {
    return this.#buf.slice(0, this.#len);
  }
}

/** Runs `fn` and returns what it threw; throws if it returned normally. */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error("expected the call to throw, but it returned");
}

/** Runs `fn` and returns what the promise it returns rejected with. */
export async function rejectionOf(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  throw new Error("expected the promise to reject, but it resolved");
}

/** Offsets of fields in a GGUF header, found by walking a (valid) file; used to aim mutations. */
export interface GgufFieldMap {
  /** Offsets of u64 counts and lengths: tensor/KV counts, string lengths, array counts, dims, tensor offsets. */
  readonly u64Fields: number[];
  /** Offsets of u32 metadata value types and array item types. */
  readonly valueTypeFields: number[];
  /** Offsets of u32 ggml tensor types. */
  readonly tensorTypeFields: number[];
  /** Offsets of u32 tensor dimension counts. */
  readonly nDimsFields: number[];
  /** Arrays: offset of the u64 count and the item type. */
  readonly arrays: { countAt: number; itemType: number }[];
  /** Where the walk stopped: the end of the tensor infos, or where the bytes ran out. */
  readonly end: number;
}

const FIXED_SIZE: Record<number, number> = {
  [GgufValueType.UINT8]: 1,
  [GgufValueType.INT8]: 1,
  [GgufValueType.BOOL]: 1,
  [GgufValueType.UINT16]: 2,
  [GgufValueType.INT16]: 2,
  [GgufValueType.UINT32]: 4,
  [GgufValueType.INT32]: 4,
  [GgufValueType.FLOAT32]: 4,
  [GgufValueType.UINT64]: 8,
  [GgufValueType.INT64]: 8,
  [GgufValueType.FLOAT64]: 8,
};

class OutOfBytes {}

/**
 * Walks the header of a well-formed GGUF (possibly cut short) and records where its fields are.
 * Independent of the parser under test; stops quietly where the bytes end.
 */
export function mapGgufFields(bytes: Uint8Array): GgufFieldMap {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const map = {
    u64Fields: [] as number[],
    valueTypeFields: [] as number[],
    tensorTypeFields: [] as number[],
  };
  const nDimsFields: number[] = [];
  const arrays: { countAt: number; itemType: number }[] = [];
  let p = 0;
  const need = (n: number) => {
    if (p + n > bytes.length) throw new OutOfBytes();
  };
  const u32 = (list?: number[]) => {
    need(4);
    list?.push(p);
    const v = view.getUint32(p, true);
    p += 4;
    return v;
  };
  const u64 = () => {
    need(8);
    map.u64Fields.push(p);
    const v = Number(view.getBigUint64(p, true));
    p += 8;
    return v;
  };
  const str = () => {
    const n = u64();
    need(n);
    p += n;
  };
  const value = (type: number): void => {
    if (type === GgufValueType.STRING) {
      str();
      return;
    }
    if (type === GgufValueType.ARRAY) {
      const itemType = u32(map.valueTypeFields);
      arrays.push({ countAt: p, itemType });
      const count = u64();
      const size = FIXED_SIZE[itemType];
      if (size !== undefined) {
        need(count * size);
        p += count * size;
        return;
      }
      for (let i = 0; i < count; i++) value(itemType);
      return;
    }
    const size = FIXED_SIZE[type] ?? 0;
    need(size);
    p += size;
  };
  try {
    p = 8;
    const nTensors = u64();
    const nKv = u64();
    for (let i = 0; i < nKv; i++) {
      str();
      value(u32(map.valueTypeFields));
    }
    for (let i = 0; i < nTensors; i++) {
      str();
      const nDims = u32(nDimsFields);
      for (let d = 0; d < nDims; d++) u64();
      u32(map.tensorTypeFields);
      u64();
    }
  } catch (e) {
    if (!(e instanceof OutOfBytes)) throw e;
  }
  return { ...map, nDimsFields, arrays, end: Math.min(p, bytes.length) };
}

/** Metadata with one entry of every value type, typed arrays of each numeric type, and nested arrays. */
export function everyValueTypeKvs(): GgufKV[] {
  const T = GgufValueType;
  const arr = (itemType: GgufArray["itemType"], items: GgufArray["items"]): GgufArray => ({
    itemType,
    items,
  });
  return [
    { key: "general.architecture", type: T.STRING, value: "llama" },
    { key: "test.u8", type: T.UINT8, value: 200 },
    { key: "test.i8", type: T.INT8, value: -100 },
    { key: "test.u16", type: T.UINT16, value: 60000 },
    { key: "test.i16", type: T.INT16, value: -30000 },
    { key: "test.u32", type: T.UINT32, value: 4000000000 },
    { key: "test.i32", type: T.INT32, value: -2000000000 },
    { key: "test.f32", type: T.FLOAT32, value: 1.5 },
    { key: "test.bool", type: T.BOOL, value: true },
    { key: "test.string", type: T.STRING, value: "héllo wörld ✓ 😀" },
    { key: "test.u64", type: T.UINT64, value: 18446744073709551615n },
    { key: "test.i64", type: T.INT64, value: -9223372036854775808n },
    { key: "test.f64", type: T.FLOAT64, value: Math.PI },
    { key: "test.arr.u8", type: T.ARRAY, value: arr(T.UINT8, Uint8Array.of(1, 2, 255)) },
    { key: "test.arr.i8", type: T.ARRAY, value: arr(T.INT8, Int8Array.of(-1, 2)) },
    { key: "test.arr.u16", type: T.ARRAY, value: arr(T.UINT16, Uint16Array.of(1, 65535)) },
    { key: "test.arr.i16", type: T.ARRAY, value: arr(T.INT16, Int16Array.of(-32768, 7)) },
    { key: "test.arr.u32", type: T.ARRAY, value: arr(T.UINT32, Uint32Array.of(1, 2, 3, 4)) },
    { key: "test.arr.i32", type: T.ARRAY, value: arr(T.INT32, Int32Array.of(-5, 6)) },
    { key: "test.arr.f32", type: T.ARRAY, value: arr(T.FLOAT32, Float32Array.of(0.25, -2)) },
    { key: "test.arr.f64", type: T.ARRAY, value: arr(T.FLOAT64, Float64Array.of(1e300)) },
    { key: "test.arr.u64", type: T.ARRAY, value: arr(T.UINT64, BigUint64Array.of(1n, 2n ** 63n)) },
    { key: "test.arr.i64", type: T.ARRAY, value: arr(T.INT64, BigInt64Array.of(-1n)) },
    { key: "test.arr.bool", type: T.ARRAY, value: arr(T.BOOL, [true, false, true]) },
    { key: "test.arr.string", type: T.ARRAY, value: arr(T.STRING, ["a", "", "ünï", "<s>", "▁the"]) },
    { key: "test.arr.empty", type: T.ARRAY, value: arr(T.STRING, []) },
    {
      key: "test.arr.nested",
      type: T.ARRAY,
      value: arr(T.ARRAY, [
        arr(T.STRING, ["x", "yz"]),
        arr(T.ARRAY, [arr(T.INT32, Int32Array.of(1, 2)), arr(T.BOOL, [false])]),
        arr(T.UINT8, new Uint8Array(0)),
      ]),
    },
    { key: "general.alignment", type: T.UINT32, value: 32 },
  ];
}

/** Tensors of the sample file: data sizes are chosen so the file has no padding after the last one. */
export function sampleTensors(): { name: string; type: number; dims: number[]; data: Uint8Array }[] {
  const filled = (n: number, seed: number) =>
    Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);
  return [
    { name: "blk.0.q8", type: GgmlType.Q8_0, dims: [32, 2], data: filled(68, 1) },
    { name: "blk.0.f32", type: GgmlType.F32, dims: [8], data: filled(32, 2) },
    { name: "output.f16", type: GgmlType.F16, dims: [4, 4], data: filled(32, 3) },
  ];
}

/** A small valid GGUF with every value type, nested arrays and three tensors (data ends the file). */
export function sampleGguf(): Uint8Array {
  return encodeGguf(everyValueTypeKvs(), sampleTensors());
}

/**
 * For a GGUF cut short inside a string array (a vocabulary cut to its first kilobytes), lowers
 * that array's count to the strings that are whole, so a parser reads into the strings before it
 * meets the cut. Returns a patched copy.
 */
export function fitStringArrayToPrefix(bytes: Uint8Array): Uint8Array {
  const out = bytes.slice();
  const view = new DataView(out.buffer);
  for (const { countAt, itemType } of mapGgufFields(out).arrays) {
    if (itemType !== GgufValueType.STRING || countAt + 8 > out.length) continue;
    const count = Number(view.getBigUint64(countAt, true));
    let p = countAt + 8;
    let whole = 0;
    while (whole < count && p + 8 <= out.length) {
      const len = Number(view.getBigUint64(p, true));
      if (p + 8 + len > out.length) break;
      p += 8 + len;
      whole++;
    }
    if (whole < count) view.setBigUint64(countAt, BigInt(whole), true);
  }
  return out;
}
