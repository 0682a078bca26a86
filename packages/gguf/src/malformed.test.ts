import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  encodeGguf,
  GgmlType,
  type GgufArray,
  GgufError,
  type GgufErrorCode,
  type GgufFile,
  type GgufKV,
  GgufValueType,
  parseGguf,
  readGguf,
  readGgufSync,
} from "./index.js";
import {
  GgufByteBuilder,
  mapGgufFields,
  rejectionOf,
  sampleGguf,
  sampleTensors,
  thrownBy,
} from "./test-helpers.js";

const T = GgufValueType;
const B = () => new GgufByteBuilder();

/** Parses `bytes` expecting a GgufError with `code` (and `offset` when given); returns the error. */
function expectGgufError(bytes: Uint8Array, code: GgufErrorCode, offset?: number): GgufError {
  const e = thrownBy(() => parseGguf(bytes));
  if (!(e instanceof GgufError)) throw new Error(`expected a GgufError, got ${String(e)}`, { cause: e });
  expect(e.code, e.message).toBe(code);
  if (offset !== undefined) expect(e.offset, e.message).toBe(offset);
  return e;
}

function patchU32(bytes: Uint8Array, at: number, v: number): Uint8Array {
  const out = bytes.slice();
  new DataView(out.buffer).setUint32(at, v, true);
  return out;
}

interface Case {
  name: string;
  bytes: Uint8Array;
  code: GgufErrorCode;
  /** The byte offset the error must report; omitted where it is checked separately. */
  offset?: number;
  key?: string;
}

/** Arrays nested `levels` deep as the value of one key "k" (the innermost is an empty uint8 array). */
function nestedArrays(levels: number): Uint8Array {
  const b = B().header(0, 1).key("k", T.ARRAY);
  for (let level = 1; level < levels; level++) b.u32(T.ARRAY).u64(1);
  return b.u32(T.UINT8).u64(0).finish();
}

// Layout reminders for the hand-made headers below:
//   0 magic, 4 version, 8 n_tensors, 16 n_kv; the first KV starts at 24.
//   A KV with the one-byte key "k": key length at 24, key at 32, value type at 33, value at 37.
//   An array value at 37: item type at 37, count at 41, items from 49.
//   A tensor info with the one-byte name "t" and one dim: name at 24, n_dims at 33, dim at 37,
//   ggml type at 45, offset at 49, end at 57 (data section at 64 with alignment 32).
const CASES: Case[] = [];
const add = (c: Case) => CASES.push(c);

// BAD_MAGIC
{
  const good = B().header(0, 0).finish();
  const withMagic = (m: string) => {
    const out = good.slice();
    out.set(new TextEncoder().encode(m), 0);
    return out;
  };
  add({ name: 'reversed magic "FUGG"', bytes: withMagic("FUGG"), code: "BAD_MAGIC", offset: 0 });
  add({ name: 'magic "GGML"', bytes: withMagic("GGML"), code: "BAD_MAGIC", offset: 0 });
  add({ name: "lower-case magic", bytes: withMagic("gguf"), code: "BAD_MAGIC", offset: 0 });
  add({ name: "zero magic", bytes: new Uint8Array(24), code: "BAD_MAGIC", offset: 0 });
  add({ name: 'just "FUGG"', bytes: new TextEncoder().encode("FUGG"), code: "BAD_MAGIC", offset: 0 });
}

// UNSUPPORTED_VERSION
for (const v of [0, 1, 4, 0x03000000, 0xffffffff]) {
  add({ name: `version ${v}`, bytes: B().header(0, 0, v).finish(), code: "UNSUPPORTED_VERSION", offset: 4 });
}

// COUNT_TOO_LARGE
add({
  name: "n_kv 2^40",
  bytes: B()
    .header(0, 2n ** 40n)
    .finish(),
  code: "COUNT_TOO_LARGE",
  offset: 8,
});
add({
  name: "n_tensors 2^40",
  bytes: B()
    .header(2n ** 40n, 0)
    .finish(),
  code: "COUNT_TOO_LARGE",
  offset: 8,
});
add({
  name: "n_tensors 2^62",
  bytes: B()
    .header(2n ** 62n, 0)
    .finish(),
  code: "COUNT_TOO_LARGE",
  offset: 8,
});
add({
  name: "n_tensors 2^64-1",
  bytes: B()
    .header(2n ** 64n - 1n, 0)
    .finish(),
  code: "COUNT_TOO_LARGE",
  offset: 8,
});
add({
  name: "n_kv 2^53 (above 2^53-1)",
  bytes: B()
    .header(0, 2n ** 53n)
    .finish(),
  code: "COUNT_TOO_LARGE",
  offset: 16,
});
add({
  name: "n_kv 2^53-1",
  bytes: B()
    .header(0, 2n ** 53n - 1n)
    .finish(),
  code: "COUNT_TOO_LARGE",
  offset: 8,
});
add({
  name: "n_kv 2^62",
  bytes: B()
    .header(0, 2n ** 62n)
    .zeros(64)
    .finish(),
  code: "COUNT_TOO_LARGE",
  offset: 16,
});
add({
  name: "n_kv 2 with room for one",
  bytes: B().header(0, 2).kvU32("k", 1).finish(),
  code: "COUNT_TOO_LARGE",
  offset: 8,
});
add({
  name: "key length 2^50",
  bytes: B()
    .header(0, 1)
    .u64(2n ** 50n)
    .zeros(32)
    .finish(),
  code: "COUNT_TOO_LARGE",
  offset: 24,
});
add({
  name: "key length 2^64-1",
  bytes: B()
    .header(0, 1)
    .u64(2n ** 64n - 1n)
    .zeros(32)
    .finish(),
  code: "COUNT_TOO_LARGE",
  offset: 24,
});
add({
  name: "string value length 2^50",
  bytes: B()
    .header(0, 1)
    .key("k", T.STRING)
    .u64(2n ** 50n)
    .zeros(16)
    .finish(),
  code: "COUNT_TOO_LARGE",
  offset: 37,
});
add({
  name: "string value length 2^53",
  bytes: B()
    .header(0, 1)
    .key("k", T.STRING)
    .u64(2n ** 53n)
    .zeros(16)
    .finish(),
  code: "COUNT_TOO_LARGE",
  offset: 37,
});
add({
  name: "tensor name length 2^50",
  bytes: B()
    .header(1, 0)
    .u64(2n ** 50n)
    .zeros(40)
    .finish(),
  code: "COUNT_TOO_LARGE",
  offset: 24,
});
for (const [itemType, count] of [
  [T.UINT32, 1000n],
  [T.UINT8, 17n],
  [T.BOOL, 2n ** 32n - 1n],
  [T.UINT64, 3n],
  [T.STRING, 2n ** 40n],
  [T.STRING, 3n],
  [T.ARRAY, 2n ** 49n],
  [T.FLOAT64, 2n ** 53n - 1n],
] as const) {
  add({
    name: `array of ${count} items of type ${itemType} in a tiny file`,
    bytes: B().header(0, 1).key("k", T.ARRAY).u32(itemType).u64(count).zeros(16).finish(),
    code: "COUNT_TOO_LARGE",
    offset: 41,
  });
}
add({
  name: "array count 2^53",
  bytes: B()
    .header(0, 1)
    .key("k", T.ARRAY)
    .u32(T.UINT8)
    .u64(2n ** 53n)
    .zeros(16)
    .finish(),
  code: "COUNT_TOO_LARGE",
  offset: 41,
});
add({
  name: "array count 2^64-1",
  bytes: B()
    .header(0, 1)
    .key("k", T.ARRAY)
    .u32(T.UINT8)
    .u64(2n ** 64n - 1n)
    .zeros(16)
    .finish(),
  code: "COUNT_TOO_LARGE",
  offset: 41,
});
add({
  name: "tensor dimension 2^53",
  bytes: B()
    .header(1, 0)
    .tensorInfo("t", [2n ** 53n], GgmlType.F32, 0)
    .finish(),
  code: "COUNT_TOO_LARGE",
  offset: 37,
});
add({
  name: "tensor offset 2^60",
  bytes: B()
    .header(1, 0)
    .tensorInfo("t", [8], GgmlType.F32, 2n ** 60n)
    .finish(),
  code: "COUNT_TOO_LARGE",
  offset: 49,
});

// INVALID_UTF8 (reported at the first byte of the string)
const badUtf8: [string, number[]][] = [
  ["overlong C0 AF", [0x6b, 0xc0, 0xaf]],
  ["lone surrogate ED A0 80", [0xed, 0xa0, 0x80]],
  ["byte FF", [0x61, 0xff]],
  ["truncated sequence E2 82", [0x61, 0xe2, 0x82]],
  ["code point past U+10FFFF", [0xf4, 0x90, 0x80, 0x80]],
  ["overlong E0 80 AF", [0xe0, 0x80, 0xaf]],
];
for (const [what, bytes] of badUtf8) {
  add({
    name: `key: ${what}`,
    bytes: B().header(0, 1).key(Uint8Array.from(bytes), T.UINT8).u8(0).finish(),
    code: "INVALID_UTF8",
    offset: 32,
  });
  add({
    name: `string value: ${what}`,
    bytes: B().header(0, 1).kvString("k", Uint8Array.from(bytes)).finish(),
    code: "INVALID_UTF8",
    offset: 45,
  });
  // item 0 "ok": length at 49, bytes 57..59; item 1: length at 59, bytes at 67
  add({
    name: `string array item: ${what}`,
    bytes: B().header(0, 1).key("k", T.ARRAY).u32(T.STRING).u64(2).str("ok").str(bytes).finish(),
    code: "INVALID_UTF8",
    offset: 67,
  });
}
add({
  name: "tensor name: overlong C0 AF",
  bytes: B().header(1, 0).u64(2).raw([0xc0, 0xaf]).u32(1).u64(8).u32(0).u64(0).zeros(64).finish(),
  code: "INVALID_UTF8",
  offset: 32,
});

// UNKNOWN_VALUE_TYPE
for (const t of [13, 0xffffffff]) {
  add({
    name: `top-level value type ${t}`,
    bytes: B().header(0, 1).key("k", t).u32(0).finish(),
    code: "UNKNOWN_VALUE_TYPE",
    offset: 33,
  });
  add({
    name: `array item type ${t}`,
    bytes: B().header(0, 1).key("k", T.ARRAY).u32(t).u64(0).finish(),
    code: "UNKNOWN_VALUE_TYPE",
    offset: 37,
  });
  add({
    name: `nested array item type ${t}`,
    bytes: B().header(0, 1).key("k", T.ARRAY).u32(T.ARRAY).u64(1).u32(t).u64(0).finish(),
    code: "UNKNOWN_VALUE_TYPE",
    offset: 49,
  });
}

// MALFORMED_VALUE
for (const v of [2, 0xff]) {
  add({
    name: `bool byte ${v}`,
    bytes: B().header(0, 1).key("k", T.BOOL).u8(v).finish(),
    code: "MALFORMED_VALUE",
    offset: 37,
  });
}
add({
  name: "bool array item 2",
  bytes: B().header(0, 1).key("k", T.ARRAY).u32(T.BOOL).u64(3).raw([1, 0, 2]).finish(),
  code: "MALFORMED_VALUE",
  offset: 51,
});

// NESTING_TOO_DEEP: the value of "k" is level 1 at 37; level n starts at 37 + 12 (n - 1).
for (const levels of [17, 18, 100, 5000]) {
  add({
    name: `arrays nested ${levels} deep`,
    bytes: nestedArrays(levels),
    code: "NESTING_TOO_DEEP",
    offset: 229,
  });
}

// DUPLICATE_KEY: the first KV takes 17 bytes, the second starts at 41.
add({
  name: "duplicate key",
  bytes: B().header(0, 2).kvU32("a", 1).kvU32("a", 2).finish(),
  code: "DUPLICATE_KEY",
  offset: 41,
  key: "a",
});
add({
  name: "duplicate key of another type",
  bytes: B().header(0, 3).kvU32("a", 1).kvU32("b", 2).kvString("a", "x").finish(),
  code: "DUPLICATE_KEY",
  offset: 58,
  key: "a",
});

// BAD_ALIGNMENT (the offset is checked in its own test below)
for (const v of [0, 3, 48, 0xffffffff]) {
  add({
    name: `general.alignment ${v}`,
    bytes: B().header(0, 1).kvU32("general.alignment", v).finish(),
    code: "BAD_ALIGNMENT",
    key: "general.alignment",
  });
}
add({
  name: "general.alignment stored as uint64",
  bytes: B().header(0, 1).key("general.alignment", T.UINT64).u64(32).finish(),
  code: "BAD_ALIGNMENT",
  key: "general.alignment",
});
add({
  name: "general.alignment stored as int32",
  bytes: B().header(0, 1).key("general.alignment", T.INT32).u32(32).finish(),
  code: "BAD_ALIGNMENT",
  key: "general.alignment",
});
add({
  name: "general.alignment stored as a string",
  bytes: B().header(0, 1).kvString("general.alignment", "32").finish(),
  code: "BAD_ALIGNMENT",
  key: "general.alignment",
});

// UNKNOWN_TENSOR_TYPE
for (const id of [4, 5, 31, 1000, 0xffffffff]) {
  add({
    name: `ggml type ${id}`,
    bytes: B().header(1, 0).tensorInfo("t", [32], id, 0).pad(32).zeros(256).finish(),
    code: "UNKNOWN_TENSOR_TYPE",
    offset: 45,
    key: "t",
  });
}

// TOO_MANY_DIMS
for (const n of [5, 0xffffffff]) {
  add({
    name: `${n} dimensions`,
    bytes: B().header(1, 0).str("t").u32(n).zeros(64).finish(),
    code: "TOO_MANY_DIMS",
    offset: 33,
    key: "t",
  });
}

// BAD_SHAPE
add({
  name: "Q4_0 tensor with a first dim of 33",
  bytes: B().header(1, 0).tensorInfo("t", [33, 1], GgmlType.Q4_0, 0).pad(32).zeros(64).finish(),
  code: "BAD_SHAPE",
  offset: 33,
  key: "t",
});
add({
  name: "Q4_K tensor with a first dim of 128",
  bytes: B().header(1, 0).tensorInfo("t", [128], GgmlType.Q4_K, 0).pad(32).zeros(256).finish(),
  code: "BAD_SHAPE",
  offset: 33,
  key: "t",
});
add({
  name: "Q8_0 tensor with no dims (one element)",
  bytes: B().header(1, 0).tensorInfo("t", [], GgmlType.Q8_0, 0).pad(32).zeros(64).finish(),
  code: "BAD_SHAPE",
  offset: 33,
  key: "t",
});
add({
  name: "element count past 2^53",
  bytes: B()
    .header(1, 0)
    .tensorInfo("t", [2n ** 52n, 2n ** 52n], GgmlType.F32, 0)
    .finish(),
  code: "BAD_SHAPE",
  offset: 33,
  key: "t",
});

// DUPLICATE_TENSOR: the second tensor info starts at 57.
add({
  name: "duplicate tensor name",
  bytes: B()
    .header(2, 0)
    .tensorInfo("t", [8], GgmlType.F32, 0)
    .tensorInfo("t", [8], GgmlType.F32, 32)
    .pad(32)
    .zeros(64)
    .finish(),
  code: "DUPLICATE_TENSOR",
  offset: 57,
  key: "t",
});

// MISALIGNED_TENSOR
add({
  name: "tensor offset 16 with alignment 32",
  bytes: B().header(1, 0).tensorInfo("t", [8], GgmlType.F32, 16).pad(32).zeros(64).finish(),
  code: "MISALIGNED_TENSOR",
  offset: 49,
  key: "t",
});
// general.alignment takes 24..57; the tensor's name is at 57, its offset field at 82.
add({
  name: "tensor offset 32 with alignment 64",
  bytes: B()
    .header(1, 1)
    .kvU32("general.alignment", 64)
    .tensorInfo("t", [8], GgmlType.F32, 32)
    .pad(64)
    .zeros(128)
    .finish(),
  code: "MISALIGNED_TENSOR",
  offset: 82,
  key: "t",
});

// OVERLAPPING_TENSORS: infos end at 90, data at 96; "b" starts at 96 + 32 inside "a" (64 bytes).
add({
  name: "second tensor starts inside the first",
  bytes: B()
    .header(2, 0)
    .tensorInfo("a", [16], GgmlType.F32, 0)
    .tensorInfo("b", [16], GgmlType.F32, 32)
    .pad(32)
    .zeros(96)
    .finish(),
  code: "OVERLAPPING_TENSORS",
  offset: 128,
  key: "b",
});
add({
  name: "overlap found regardless of the order of the infos",
  bytes: B()
    .header(2, 0)
    .tensorInfo("b", [16], GgmlType.F32, 32)
    .tensorInfo("a", [16], GgmlType.F32, 0)
    .pad(32)
    .zeros(96)
    .finish(),
  code: "OVERLAPPING_TENSORS",
  offset: 128,
  key: "b",
});

// TENSOR_OUT_OF_BOUNDS: one F32 [8] tensor (32 bytes) whose data starts at 64.
add({
  name: "tensor data one byte short",
  bytes: B().header(1, 0).tensorInfo("t", [8], GgmlType.F32, 0).pad(32).zeros(31).finish(),
  code: "TENSOR_OUT_OF_BOUNDS",
  offset: 64,
  key: "t",
});
add({
  name: "no data section at all",
  bytes: B().header(1, 0).tensorInfo("t", [8], GgmlType.F32, 0).finish(),
  code: "TENSOR_OUT_OF_BOUNDS",
  offset: 64,
  key: "t",
});
add({
  name: "tensor offset 2^40 past EOF",
  bytes: B()
    .header(1, 0)
    .tensorInfo("t", [8], GgmlType.F32, 2n ** 40n)
    .pad(32)
    .zeros(32)
    .finish(),
  code: "TENSOR_OUT_OF_BOUNDS",
  offset: 64 + 2 ** 40,
  key: "t",
});
add({
  name: "huge F64 tensor",
  bytes: B()
    .header(1, 0)
    .tensorInfo("t", [2n ** 26n, 2n ** 26n], GgmlType.F64, 0)
    .pad(32)
    .zeros(32)
    .finish(),
  code: "TENSOR_OUT_OF_BOUNDS",
  offset: 96, // two dims: the infos end at 65
  key: "t",
});

// TRUNCATED inside fixed-size fields (a cut inside a string or array is tested further down)
{
  const full = B().header(0, 0).finish();
  add({ name: "empty file", bytes: new Uint8Array(0), code: "TRUNCATED", offset: 0 });
  add({ name: "cut inside the magic", bytes: full.subarray(0, 2), code: "TRUNCATED", offset: 0 });
  add({ name: "cut inside the version", bytes: full.subarray(0, 6), code: "TRUNCATED", offset: 4 });
  add({ name: "cut inside n_tensors", bytes: full.subarray(0, 12), code: "TRUNCATED", offset: 8 });
  add({ name: "cut inside n_kv", bytes: full.subarray(0, 20), code: "TRUNCATED", offset: 16 });
  // KV "a" = 40-byte string takes 24..85; KV "b": key 85..94, type at 94, value at 98.
  const twoKvs = B().header(0, 2).kvString("a", "x".repeat(40)).key("b", T.UINT64).u64(7).finish();
  add({ name: "cut inside a value type", bytes: twoKvs.subarray(0, 96), code: "TRUNCATED", offset: 94 });
  add({ name: "cut inside a u64 value", bytes: twoKvs.subarray(0, 101), code: "TRUNCATED", offset: 98 });
  const arr = B().header(0, 1).key("k", T.ARRAY).u32(T.UINT8).u64(0).finish();
  add({ name: "cut inside an array item type", bytes: arr.subarray(0, 39), code: "TRUNCATED", offset: 37 });
  add({ name: "cut inside an array count", bytes: arr.subarray(0, 45), code: "TRUNCATED", offset: 41 });
  // item 0: length at 49, 20 bytes at 57..77; item 1: length at 77
  const strArr = B()
    .header(0, 1)
    .key("k", T.ARRAY)
    .u32(T.STRING)
    .u64(2)
    .str("x".repeat(20))
    .str("yy")
    .finish();
  add({
    name: "cut inside a string array item's length",
    bytes: strArr.subarray(0, 80),
    code: "TRUNCATED",
    offset: 77,
  });
  // name: length at 24, 30 bytes at 32..62; n_dims 62, dim 66, type 74, offset 78, end 86
  const info = B().header(1, 0).tensorInfo("t".repeat(30), [8], GgmlType.F32, 0).finish();
  add({ name: "cut inside n_dims", bytes: info.subarray(0, 64), code: "TRUNCATED", offset: 62 });
  add({ name: "cut inside a dimension", bytes: info.subarray(0, 70), code: "TRUNCATED", offset: 66 });
  add({ name: "cut inside a tensor type", bytes: info.subarray(0, 76), code: "TRUNCATED", offset: 74 });
  add({ name: "cut inside a tensor offset", bytes: info.subarray(0, 80), code: "TRUNCATED", offset: 78 });
}

describe("malformed headers through parseGguf", () => {
  it.each(CASES.map((c) => [c.name, c] as const))("%s", (_, c) => {
    const e = expectGgufError(c.bytes, c.code, c.offset);
    expect(e.path).toBeUndefined();
    if (c.key !== undefined) expect(e.key).toBe(c.key);
    expect(e.message.length).toBeGreaterThan(0);
    // Every error from the bytes carries an offset.
    expect(typeof e.offset).toBe("number");
  });

  it("covers every code of the header parser", () => {
    const codes = new Set(CASES.map((c) => c.code));
    for (const code of [
      "TRUNCATED",
      "BAD_MAGIC",
      "UNSUPPORTED_VERSION",
      "COUNT_TOO_LARGE",
      "INVALID_UTF8",
      "UNKNOWN_VALUE_TYPE",
      "MALFORMED_VALUE",
      "NESTING_TOO_DEEP",
      "DUPLICATE_KEY",
      "BAD_ALIGNMENT",
      "UNKNOWN_TENSOR_TYPE",
      "TOO_MANY_DIMS",
      "BAD_SHAPE",
      "DUPLICATE_TENSOR",
      "MISALIGNED_TENSOR",
      "OVERLAPPING_TENSORS",
      "TENSOR_OUT_OF_BOUNDS",
    ] as const) {
      expect(codes.has(code), code).toBe(true);
    }
  });

  it("hints at big-endian files and at version 1", () => {
    expect(expectGgufError(B().header(0, 0, 0x03000000).finish(), "UNSUPPORTED_VERSION").message).toMatch(
      /big-endian/,
    );
    expect(expectGgufError(B().header(0, 0, 1).finish(), "UNSUPPORTED_VERSION").message).toMatch(/version 1/);
  });

  it("names the unknown ggml type id in the message", () => {
    for (const id of [4, 1000]) {
      const bytes = B().header(1, 0).tensorInfo("t", [32], id, 0).pad(32).zeros(256).finish();
      const e = expectGgufError(bytes, "UNKNOWN_TENSOR_TYPE", 45);
      // The message goes on to list the known ids; the id itself must come before that list.
      const before = e.message.split("known ids")[0]!;
      expect(before, e.message).toMatch(new RegExp(`\\b${id}\\b`));
    }
  });

  it("accepts arrays nested exactly 16 deep", () => {
    const f = parseGguf(nestedArrays(16));
    let a = f.metadata.get("k")!.value as GgufArray;
    for (let level = 1; level < 16; level++) {
      expect(a.itemType).toBe(T.ARRAY);
      a = (a.items as GgufArray[])[0]!;
    }
    expect(a.itemType).toBe(T.UINT8);
    expect(a.items.length).toBe(0);
  });

  it("accepts alignments that are powers of two, and the well-formed neighbours of the bad cases", () => {
    for (const alignment of [1, 8, 64, 4096]) {
      const bytes = encodeGguf(
        [{ key: "general.alignment", type: T.UINT32, value: alignment }],
        [{ name: "t", type: GgmlType.F32, dims: [8], data: new Uint8Array(32) }],
      );
      expect(parseGguf(bytes).alignment).toBe(alignment);
    }
    // bool 0/1, a Q4_0 row of 64, tensors touching but not overlapping, data ending at EOF
    expect(parseGguf(B().header(0, 1).key("k", T.BOOL).u8(1).finish()).metadata.get("k")!.value).toBe(true);
    const ok = B()
      .header(2, 0)
      .tensorInfo("a", [64, 1], GgmlType.Q4_0, 0)
      .tensorInfo("b", [8], GgmlType.F32, 64)
      .pad(32)
      .zeros(96)
      .finish();
    const f = parseGguf(ok);
    expect(f.tensors.map((t) => [t.name, t.byteSize, t.offset])).toEqual([
      ["a", 36, 0],
      ["b", 32, 64],
    ]);
  });

  it("reports BAD_ALIGNMENT with a number for an offset", () => {
    const e = expectGgufError(B().header(0, 1).kvU32("general.alignment", 3).finish(), "BAD_ALIGNMENT");
    expect(typeof e.offset).toBe("number");
  });

  it("reports BAD_ALIGNMENT at the general.alignment entry", () => {
    const e = expectGgufError(B().header(0, 1).kvU32("general.alignment", 3).finish(), "BAD_ALIGNMENT");
    expect(e.offset).toBeGreaterThanOrEqual(24);
    expect(e.offset).toBeLessThan(57);
  });
});

describe("truncated files", () => {
  const full = sampleGguf();
  const parsed = parseGguf(full);
  const part = parsed.parts[0]!;

  it("the sample ends exactly with the last tensor's data", () => {
    const last = Math.max(...parsed.tensors.map((t) => part.dataOffset + t.offset + t.byteSize));
    expect(last).toBe(full.length);
    expect(part.dataOffset).toBeGreaterThan(part.headerSize);
  });

  it("every prefix of a small valid file throws TRUNCATED, COUNT_TOO_LARGE or TENSOR_OUT_OF_BOUNDS", () => {
    const byOffset = [...parsed.tensors].sort((a, b) => a.offset - b.offset);
    for (let len = 0; len < full.length; len++) {
      const e = thrownBy(() => parseGguf(full.subarray(0, len)));
      if (!(e instanceof GgufError)) throw new Error(`prefix ${len}: not a GgufError: ${String(e)}`);
      const where = `prefix of ${len} bytes: ${e.message}`;
      if (len < part.headerSize) {
        // A cut inside the header. Cuts inside strings and arrays are reported as COUNT_TOO_LARGE
        // (their length no longer fits in the file); see the note at the end of this block.
        expect(["TRUNCATED", "COUNT_TOO_LARGE"], where).toContain(e.code);
        expect(e.offset, where).toBeLessThanOrEqual(len);
        if (e.code === "TRUNCATED") {
          // The field that was being read starts before the cut and would have ended after it.
          expect(e.offset, where).toBeGreaterThan(len - 8);
        }
      } else {
        // Only tensor data (or padding before it) is missing.
        const cut = byOffset.find((t) => part.dataOffset + t.offset + t.byteSize > len)!;
        expect(e.code, where).toBe("TENSOR_OUT_OF_BOUNDS");
        expect(e.key, where).toBe(cut.name);
        expect(e.offset, where).toBe(part.dataOffset + cut.offset);
      }
    }
    expect(parseGguf(full).tensors.length).toBe(3);
  });

  it("cuts inside a key, a string value and an array report an offset at or before the cut field", () => {
    // A long first entry keeps the cuts below past the minimal size of the announced entries.
    const b = B().header(0, 4).kvString("z", "z".repeat(100));
    const stringAt = b.length + 8 + 1 + 4; // the length field of the value of "a"
    b.kvString("a", "x".repeat(40));
    const keyAt = b.length; // the length field of the key "bbbb"
    b.kvU32("bbbb", 1).key("c", T.ARRAY).u32(T.UINT32);
    const countAt = b.length; // the count of the uint32 array
    const bytes = b.u64(8).zeros(32).finish();
    const cases: [number, number][] = [
      [stringAt + 8 + 20, stringAt], // inside the string value
      [keyAt + 8 + 2, keyAt], // inside the key "bbbb"
      [countAt + 8 + 10, countAt], // inside the uint32 array items
    ];
    for (const [len, fieldAt] of cases) {
      const e = thrownBy(() => parseGguf(bytes.subarray(0, len)));
      if (!(e instanceof GgufError)) throw e;
      expect(["TRUNCATED", "COUNT_TOO_LARGE"], e.message).toContain(e.code);
      expect(e.offset, e.message).toBeGreaterThanOrEqual(fieldAt);
      expect(e.offset, e.message).toBeLessThanOrEqual(len);
    }
  });

  // A cut inside a length-prefixed field (a key, a string, an array) leaves a length that no longer
  // fits in what is left of the file, so it is reported as COUNT_TOO_LARGE ("exceeds the N bytes
  // left in the file"); only a cut inside a fixed-size field is TRUNCATED. Both name the offset.
});

describe("malformed files read from a path", () => {
  const dir = mkdtempSync(join(tmpdir(), "minfer-gguf-malformed-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  const fileWith = (bytes: Uint8Array): string => {
    const p = join(dir, `case-${n++}.gguf`);
    writeFileSync(p, bytes);
    return p;
  };

  it.each(CASES.map((c) => [c.name, c] as const))("%s", async (_, c) => {
    const path = fileWith(c.bytes);
    const fromBytes = thrownBy(() => parseGguf(c.bytes)) as GgufError;
    for (const e of [thrownBy(() => readGgufSync(path)), await rejectionOf(() => readGguf(path))]) {
      if (!(e instanceof GgufError)) throw new Error(`expected a GgufError, got ${String(e)}`, { cause: e });
      expect(e.code, e.message).toBe(c.code);
      expect(e.offset).toBe(fromBytes.offset);
      expect(e.key).toBe(fromBytes.key);
      expect(e.path).toBe(path);
      expect(e.message).toContain(path);
    }
  });

  it("gives IO for a missing file and for a directory", async () => {
    for (const path of [join(dir, "does-not-exist.gguf"), dir]) {
      for (const e of [thrownBy(() => readGgufSync(path)), await rejectionOf(() => readGguf(path))]) {
        if (!(e instanceof GgufError))
          throw new Error(`expected a GgufError, got ${String(e)}`, { cause: e });
        expect(e.code).toBe("IO_ERROR");
        expect(e.path).toBe(path);
      }
    }
  });

  /** Compares everything but the path. */
  function expectSameFile(a: GgufFile, b: GgufFile): void {
    expect(a.version).toBe(b.version);
    expect(a.alignment).toBe(b.alignment);
    expect([...a.metadata.entries()]).toEqual([...b.metadata.entries()]);
    expect(a.tensors).toEqual(b.tensors);
    const { path: _pa, metadata: _ma, ...pa } = a.parts[0]!;
    const { path: _pb, metadata: _mb, ...pb } = b.parts[0]!;
    expect(pa).toEqual(pb);
  }

  it("parses a header longer than the first 1 MiB read", async () => {
    // ~2.3 MiB of strings: the reader has to read on twice while inside the array.
    const tokens = Array.from(
      { length: 60000 },
      (_, i) => `tok-${i}-${"é✓".repeat(i % 7)}-${"x".repeat(i % 13)}`,
    );
    const kvs: GgufKV[] = [
      { key: "general.architecture", type: T.STRING, value: "llama" },
      { key: "before.i32", type: T.INT32, value: -3 },
      { key: "tokenizer.ggml.tokens", type: T.ARRAY, value: { itemType: T.STRING, items: tokens } },
      {
        key: "tokenizer.ggml.scores",
        type: T.ARRAY,
        value: { itemType: T.FLOAT32, items: Float32Array.from(tokens, (_, i) => -i / 7) },
      },
      { key: "after.u64", type: T.UINT64, value: 123456789012345678n },
      { key: "after.f64", type: T.FLOAT64, value: -0.5 },
      { key: "after.string", type: T.STRING, value: "tail" },
    ];
    const bytes = encodeGguf(kvs, sampleTensors());
    const fromBytes = parseGguf(bytes);
    expect(fromBytes.parts[0]!.headerSize).toBeGreaterThan(2 << 20);
    expect((fromBytes.metadata.get("tokenizer.ggml.tokens")!.value as GgufArray).items).toEqual(tokens);
    const path = fileWith(bytes);
    const sync = readGgufSync(path);
    const async_ = await readGguf(path);
    expectSameFile(sync, fromBytes);
    expectSameFile(async_, fromBytes);
    expect(sync.parts[0]!.path).toBe(path);
    // Errors past the first megabyte carry the right offset too.
    const at = fromBytes.parts[0]!.headerSize - 8; // the last tensor's offset field
    const broken = bytes.slice();
    new DataView(broken.buffer).setUint32(at, 16, true);
    const expected = expectGgufError(broken, "MISALIGNED_TENSOR", at);
    const e = thrownBy(() => readGgufSync(fileWith(broken))) as GgufError;
    expect([e.code, e.offset]).toEqual([expected.code, expected.offset]);
  });

  it("reads a uint8 value that starts exactly at the 1 MiB boundary", () => {
    const kvs: GgufKV[] = [
      { key: "a", type: T.STRING, value: "x".repeat((1 << 20) - 58) },
      { key: "b", type: T.UINT8, value: 7 },
    ];
    const bytes = encodeGguf(kvs, []);
    expect(bytes.length).toBe((1 << 20) + 1);
    expect(readGgufSync(fileWith(bytes)).metadata.get("b")!.value).toBe(7);
  });
});

describe("bugs found while writing these tests", () => {
  const dir = mkdtempSync(join(tmpdir(), "minfer-gguf-bugs-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // BUG (reported): readScalar() in parse.ts takes `const v = c.view` before `c.need()`, which may
  // read on and replace the cursor's buffer and view. A scalar other than uint8/uint32/bool/string
  // that is the first thing read past the bytes read so far (the first 1 MiB from a path) is read
  // from the stale, shorter DataView: RangeError, which read.ts then wraps as an "IO_ERROR" GgufError.
  // Input: key "a" = a string of 2^20 - 58 bytes, then key "b" whose value starts at byte 2^20.
  const scalarTypes: [string, GgufKV["type"], GgufKV["value"]][] = [
    ["int8", T.INT8, -7],
    ["uint16", T.UINT16, 700],
    ["int16", T.INT16, -700],
    ["int32", T.INT32, -70000],
    ["float32", T.FLOAT32, 0.5],
    ["uint64", T.UINT64, 7n],
    ["int64", T.INT64, -7n],
    ["float64", T.FLOAT64, 0.25],
  ];
  for (const [name, type, value] of scalarTypes) {
    it(`reads a ${name} value that starts exactly at the 1 MiB boundary from a path`, async () => {
      const bytes = encodeGguf(
        [
          { key: "a", type: T.STRING, value: "x".repeat((1 << 20) - 58) },
          { key: "b", type, value },
        ],
        [],
      );
      expect(parseGguf(bytes).metadata.get("b")!.value).toBe(value);
      const path = join(dir, `boundary-${name}.gguf`);
      writeFileSync(path, bytes);
      expect((await readGguf(path)).metadata.get("b")!.value).toBe(value);
      expect(readGgufSync(path).metadata.get("b")!.value).toBe(value);
    });
  }

  // BUG (reported): readArray() in parse.ts copies numeric arrays with `c.bytes.slice(...)` and
  // wraps `copy.buffer`. For a Node Buffer (what fs.readFileSync returns), slice() is a view, not
  // a copy, so `copy.buffer` is the whole underlying ArrayBuffer: parseGguf(readFileSync(f)) gives
  // numeric arrays holding the whole file (stories260K: 296344 scores instead of 512), or throws a
  // RangeError when the buffer's length is not a multiple of the item size.
  it("parseGguf of a Node Buffer gives the same numeric arrays as of a Uint8Array", () => {
    const bytes = sampleGguf();
    const expected = parseGguf(bytes);
    const path = join(dir, "sample.gguf");
    writeFileSync(path, bytes);
    const fromBuffer = parseGguf(readFileSync(path));
    for (const key of ["test.arr.u32", "test.arr.f32", "test.arr.u8"]) {
      const a = fromBuffer.metadata.get(key)!.value as GgufArray;
      expect([...a.items], key).toEqual([...(expected.metadata.get(key)!.value as GgufArray).items]);
    }
  });

  it("parseGguf of a Node Buffer matches when the Buffer is first copied into a Uint8Array", () => {
    const bytes = sampleGguf();
    const f = parseGguf(new Uint8Array(Buffer.from(bytes)));
    expect([...(f.metadata.get("test.arr.u32")!.value as GgufArray).items]).toEqual([1, 2, 3, 4]);
  });

  it("a patched tensor type is reported at its field, also when the file is cut right after it", () => {
    const bytes = sampleGguf();
    const typeAt = mapGgufFields(bytes).tensorTypeFields[0]!;
    expectGgufError(patchU32(bytes, typeAt, 4), "UNKNOWN_TENSOR_TYPE", typeAt);
    expectGgufError(patchU32(bytes, typeAt, 4).subarray(0, typeAt + 4), "UNKNOWN_TENSOR_TYPE", typeAt);
  });
});
