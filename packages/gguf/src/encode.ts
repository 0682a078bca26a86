import { GgufError } from "./errors.js";
import { ggmlByteSize, ggmlTypeInfo } from "./ggml-types.js";
import type { GgufArray, GgufKV, GgufScalar } from "./metadata.js";
import { GGUF_MAGIC, MAX_ARRAY_NESTING, MAX_DIMS } from "./parse.js";
import { encodeUtf8 } from "./utf8.js";
import { GgufValueType, type GgufValueTypeId, isValueType, valueTypeName } from "./value-types.js";

/** A tensor's description for writing (its data is given separately). */
export interface GgufTensorSpec {
  readonly name: string;
  /** A ggml type id, e.g. `GgmlType.F16`. */
  readonly type: number;
  /** Dimensions, innermost first (ggml `ne`). */
  readonly dims: readonly number[];
}

/** Where each tensor's data goes, as computed from the header. */
export interface GgufLayout {
  /** The header, padded with zeros to the start of the data section. */
  readonly header: Uint8Array;
  readonly alignment: number;
  /** Per tensor: offset relative to the data section, and byte size. */
  readonly offsets: readonly number[];
  readonly sizes: readonly number[];
  /** Total bytes of the file. */
  readonly fileSize: number;
}

class Sink {
  chunks: Uint8Array[] = [];
  cur = new Uint8Array(1 << 16);
  view = new DataView(this.cur.buffer);
  pos = 0;
  total = 0;

  room(n: number): void {
    if (this.pos + n <= this.cur.length) return;
    this.flush();
    if (n > this.cur.length) {
      this.cur = new Uint8Array(n);
      this.view = new DataView(this.cur.buffer);
    }
  }
  flush(): void {
    if (this.pos > 0) this.chunks.push(this.cur.slice(0, this.pos));
    this.pos = 0;
  }
  bytes(b: Uint8Array): void {
    this.room(b.length);
    this.cur.set(b, this.pos);
    this.pos += b.length;
    this.total += b.length;
  }
  u32(v: number): void {
    this.room(4);
    this.view.setUint32(this.pos, v, true);
    this.pos += 4;
    this.total += 4;
  }
  u64(v: number | bigint): void {
    this.room(8);
    this.view.setBigUint64(this.pos, BigInt(v), true);
    this.pos += 8;
    this.total += 8;
  }
  string(s: string): void {
    const b = encodeUtf8(s);
    this.u64(b.length);
    this.bytes(b);
  }
  finish(): Uint8Array {
    this.flush();
    const out = new Uint8Array(this.total);
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }
}

function bad(key: string, message: string): never {
  throw new GgufError("INVALID_ARGUMENT", `metadata "${key}": ${message}`, { key });
}

const INT_RANGE: Partial<Record<number, [number, number]>> = {
  [GgufValueType.UINT8]: [0, 0xff],
  [GgufValueType.INT8]: [-0x80, 0x7f],
  [GgufValueType.UINT16]: [0, 0xffff],
  [GgufValueType.INT16]: [-0x8000, 0x7fff],
  [GgufValueType.UINT32]: [0, 0xffffffff],
  [GgufValueType.INT32]: [-0x80000000, 0x7fffffff],
};

const TYPED_CTOR: Partial<Record<number, abstract new (...args: never[]) => unknown>> = {
  [GgufValueType.UINT8]: Uint8Array,
  [GgufValueType.INT8]: Int8Array,
  [GgufValueType.UINT16]: Uint16Array,
  [GgufValueType.INT16]: Int16Array,
  [GgufValueType.UINT32]: Uint32Array,
  [GgufValueType.INT32]: Int32Array,
  [GgufValueType.FLOAT32]: Float32Array,
  [GgufValueType.FLOAT64]: Float64Array,
  [GgufValueType.UINT64]: BigUint64Array,
  [GgufValueType.INT64]: BigInt64Array,
};

function writeScalar(s: Sink, key: string, type: GgufValueTypeId, v: GgufScalar): void {
  const range = INT_RANGE[type];
  if (range) {
    if (typeof v !== "number" || !Number.isInteger(v) || v < range[0] || v > range[1]) {
      bad(key, `${String(v)} is not a ${valueTypeName(type)}`);
    }
    s.room(4);
    const dv = s.view;
    const p = s.pos;
    const size = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4 }[type as 0]!;
    if (type === GgufValueType.UINT8) dv.setUint8(p, v);
    else if (type === GgufValueType.INT8) dv.setInt8(p, v);
    else if (type === GgufValueType.UINT16) dv.setUint16(p, v, true);
    else if (type === GgufValueType.INT16) dv.setInt16(p, v, true);
    else if (type === GgufValueType.UINT32) dv.setUint32(p, v, true);
    else dv.setInt32(p, v, true);
    s.pos += size;
    s.total += size;
    return;
  }
  switch (type) {
    case GgufValueType.FLOAT32:
    case GgufValueType.FLOAT64: {
      if (typeof v !== "number") bad(key, `${String(v)} is not a number`);
      const size = type === GgufValueType.FLOAT32 ? 4 : 8;
      s.room(size);
      if (size === 4) s.view.setFloat32(s.pos, v, true);
      else s.view.setFloat64(s.pos, v, true);
      s.pos += size;
      s.total += size;
      return;
    }
    case GgufValueType.BOOL:
      if (typeof v !== "boolean") bad(key, `${String(v)} is not a boolean`);
      s.bytes(Uint8Array.of(v ? 1 : 0));
      return;
    case GgufValueType.STRING:
      if (typeof v !== "string") bad(key, `${String(v)} is not a string`);
      s.string(v);
      return;
    case GgufValueType.UINT64:
    case GgufValueType.INT64: {
      if (typeof v !== "bigint" && !(typeof v === "number" && Number.isSafeInteger(v))) {
        bad(key, `${String(v)} is not a 64-bit integer`);
      }
      const b = BigInt(v);
      const ok =
        type === GgufValueType.UINT64 ? b >= 0n && b < 1n << 64n : b >= -(1n << 63n) && b < 1n << 63n;
      if (!ok) bad(key, `${b} is out of range for ${valueTypeName(type)}`);
      s.room(8);
      if (type === GgufValueType.UINT64) s.view.setBigUint64(s.pos, b, true);
      else s.view.setBigInt64(s.pos, b, true);
      s.pos += 8;
      s.total += 8;
      return;
    }
    default:
      bad(key, `unknown value type ${type}`);
  }
}

function writeArray(s: Sink, key: string, arr: GgufArray, depth: number): void {
  if (depth > MAX_ARRAY_NESTING) bad(key, `arrays nest deeper than ${MAX_ARRAY_NESTING}`);
  if (typeof arr !== "object" || arr === null || !isValueType(arr.itemType)) bad(key, "not a GgufArray");
  const { itemType, items } = arr;
  s.u32(itemType);
  s.u64(items.length);
  const ctor = TYPED_CTOR[itemType];
  if (ctor) {
    if (!(items instanceof ctor))
      bad(key, `items of an array of ${valueTypeName(itemType)} must be a ${ctor.name}`);
    const t = items as Uint8Array;
    s.bytes(new Uint8Array(t.buffer, t.byteOffset, t.byteLength));
    return;
  }
  if (!Array.isArray(items))
    bad(key, `items of an array of ${valueTypeName(itemType)} must be a plain array`);
  if (itemType === GgufValueType.ARRAY) {
    for (const inner of items as GgufArray[]) writeArray(s, key, inner, depth + 1);
  } else {
    for (const v of items as GgufScalar[]) writeScalar(s, key, itemType, v);
  }
}

function alignUp(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment;
}

/**
 * Encodes the header (magic, version, metadata, tensor infos, padding) and computes where each
 * tensor's data goes: tensors are laid out in the given order, each at an offset that is a
 * multiple of the alignment (`general.alignment`, default 32), padded with zeros.
 */
export function encodeHeader(
  metadata: Iterable<GgufKV>,
  tensors: readonly GgufTensorSpec[],
  version: 2 | 3 = 3,
): GgufLayout {
  if (version !== 2 && version !== 3) {
    throw new GgufError("INVALID_ARGUMENT", `cannot write GGUF version ${String(version)}; use 2 or 3`);
  }
  const kvs = [...metadata];
  let alignment = 32;
  const keys = new Set<string>();
  for (const kv of kvs) {
    if (keys.has(kv.key))
      throw new GgufError("DUPLICATE_KEY", `duplicate metadata key "${kv.key}"`, { key: kv.key });
    keys.add(kv.key);
    if (kv.key === "general.alignment") {
      const a = kv.value;
      if (kv.type !== GgufValueType.UINT32 || typeof a !== "number" || a === 0 || (a & (a - 1)) !== 0) {
        throw new GgufError("BAD_ALIGNMENT", "general.alignment must be a power-of-two uint32", {
          key: kv.key,
        });
      }
      alignment = a;
    }
  }
  const s = new Sink();
  s.u32(GGUF_MAGIC);
  s.u32(version);
  s.u64(tensors.length);
  s.u64(kvs.length);
  for (const kv of kvs) {
    if (!isValueType(kv.type)) bad(kv.key, `unknown value type ${kv.type}`);
    s.string(kv.key);
    s.u32(kv.type);
    if (kv.type === GgufValueType.ARRAY) writeArray(s, kv.key, kv.value as GgufArray, 1);
    else writeScalar(s, kv.key, kv.type, kv.value as GgufScalar);
  }
  const offsets: number[] = [];
  const sizes: number[] = [];
  const names = new Set<string>();
  let offset = 0;
  for (const t of tensors) {
    if (names.has(t.name))
      throw new GgufError("DUPLICATE_TENSOR", `duplicate tensor name "${t.name}"`, { key: t.name });
    names.add(t.name);
    if (t.dims.length > MAX_DIMS) {
      throw new GgufError(
        "TOO_MANY_DIMS",
        `tensor "${t.name}" has ${t.dims.length} dimensions; at most ${MAX_DIMS}`,
      );
    }
    for (const d of t.dims) {
      if (!Number.isSafeInteger(d) || d < 0) {
        throw new GgufError("BAD_SHAPE", `tensor "${t.name}" has invalid dimension ${d}`, { key: t.name });
      }
    }
    ggmlTypeInfo(t.type);
    let size: number;
    try {
      size = ggmlByteSize(t.type, t.dims);
    } catch (e) {
      throw new GgufError("BAD_SHAPE", `tensor "${t.name}": ${(e as Error).message}`, { key: t.name });
    }
    s.string(t.name);
    s.u32(t.dims.length);
    for (const d of t.dims) s.u64(d);
    s.u32(t.type);
    s.u64(offset);
    offsets.push(offset);
    sizes.push(size);
    offset = alignUp(offset + size, alignment);
  }
  // With no tensors there is no data section, and llama.cpp's files end right after the header.
  const headerSize = s.total;
  const dataOffset = tensors.length > 0 ? alignUp(headerSize, alignment) : headerSize;
  s.bytes(new Uint8Array(dataOffset - headerSize));
  return { header: s.finish(), alignment, offsets, sizes, fileSize: dataOffset + offset };
}
