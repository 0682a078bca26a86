import { GgufError } from "./errors.js";
import { type GgmlTypeId, type GgmlTypeName, ggmlTypeInfo } from "./ggml-types.js";
import {
  type GgufArray,
  type GgufArrayItems,
  type GgufKV,
  GgufMetadata,
  type GgufScalar,
} from "./metadata.js";
import { Utf8Reader } from "./utf8.js";
import {
  GgufValueType,
  type GgufValueTypeId,
  isValueType,
  minEncodedSize,
  scalarSize,
  valueTypeName,
} from "./value-types.js";

/** The four bytes every GGUF file starts with: "GGUF". */
export const GGUF_MAGIC = 0x46554747;
/** Arrays nested deeper than this are refused (real files nest at most once). */
export const MAX_ARRAY_NESTING = 16;
/** The most dimensions a tensor can have (ggml's GGML_MAX_DIMS). */
export const MAX_DIMS = 4;

/** One tensor's description from the header. */
export interface GgufTensorInfo {
  readonly name: string;
  /** Dimensions, innermost first (ggml `ne`): a weight of shape [nOut, nIn] is stored as [nIn, nOut]. */
  readonly dims: readonly number[];
  readonly type: GgmlTypeId;
  readonly typeName: GgmlTypeName;
  /** Offset of the data relative to the start of its file's data section (as stored). */
  readonly offset: number;
  /** Bytes of data. */
  readonly byteSize: number;
  readonly nElements: number;
  /** Index of the file holding the data in {@link GgufFile.parts} (0 unless the model is split). */
  readonly part: number;
}

/** One physical file of a (possibly split) model. */
export interface GgufPart {
  /** The path, when read from one. */
  readonly path: string | undefined;
  readonly version: number;
  readonly fileSize: number;
  /** Absolute offset of the data section. */
  readonly dataOffset: number;
  readonly alignment: number;
  /** Bytes of the header up to the end of the tensor infos (before padding). */
  readonly headerSize: number;
  /** Metadata of this part (for split files, the parts after the first hold only `split.*`). */
  readonly metadata: GgufMetadata;
  readonly tensors: readonly GgufTensorInfo[];
}

/** A parsed GGUF model: metadata from the first part and the tensors of all parts. */
export interface GgufFile {
  readonly version: number;
  readonly metadata: GgufMetadata;
  readonly tensors: readonly GgufTensorInfo[];
  readonly alignment: number;
  /** The physical files; one unless the model is split. */
  readonly parts: readonly GgufPart[];
}

/** Thrown internally when the bytes read so far end before the header does. */
export class NeedMoreBytes {
  constructor(readonly needed: number) {}
}

/** What is being read, for error messages; a function so hot loops build no strings. */
type Label = string | (() => string);
const label = (l: Label): string => (typeof l === "string" ? l : l());

/** Returns the first `end` (or more) bytes of the file; called when the header outgrows what was read. */
export type ReadMore = (end: number) => Uint8Array;

class Cursor {
  pos = 0;
  bytes: Uint8Array;
  view: DataView;
  utf8: Utf8Reader;
  constructor(
    bytes: Uint8Array,
    readonly fileSize: number,
    readonly path: string | undefined,
    readonly readMore: ReadMore | undefined,
  ) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.utf8 = new Utf8Reader(bytes);
  }

  fail(
    code: ConstructorParameters<typeof GgufError>[0],
    message: string,
    offset = this.pos,
    key?: string,
  ): never {
    throw new GgufError(code, message, { offset, path: this.path, key });
  }

  /** Makes sure `n` more bytes exist in the file and have been read. */
  need(n: number, what: Label): void {
    const end = this.pos + n;
    if (end > this.fileSize) {
      this.fail(
        "TRUNCATED",
        `file ends inside ${label(what)}: needs ${n} bytes, ${this.fileSize - this.pos} remain`,
      );
    }
    if (end > this.bytes.length) this.grow(end);
  }

  grow(end: number): void {
    if (!this.readMore) throw new NeedMoreBytes(end);
    const bytes = this.readMore(Math.min(this.fileSize, Math.max(end, this.bytes.length * 2)));
    if (bytes.length < end)
      this.fail("TRUNCATED", `file is shorter than its size (${bytes.length} < ${end})`);
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.utf8 = new Utf8Reader(bytes);
  }

  remaining(): number {
    return this.fileSize - this.pos;
  }

  u8(what: Label): number {
    this.need(1, what);
    return this.bytes[this.pos++]!;
  }
  u32(what: Label): number {
    this.need(4, what);
    const v = this.view.getUint32(this.pos, true);
    this.pos += 4;
    return v;
  }
  /** A u64 that must be a safe integer (counts, lengths, offsets). */
  u64n(what: Label): number {
    this.need(8, what);
    const lo = this.view.getUint32(this.pos, true);
    const hi = this.view.getUint32(this.pos + 4, true);
    if (hi > 0x1fffff) {
      this.fail("COUNT_TOO_LARGE", `${label(what)} ${this.view.getBigUint64(this.pos, true)} is too large`);
    }
    this.pos += 8;
    return hi * 0x100000000 + lo;
  }

  string(what: Label): string {
    const at = this.pos;
    const len = this.u64n(what);
    if (len > this.remaining()) {
      this.fail(
        "COUNT_TOO_LARGE",
        `${label(what)} length ${len} exceeds the ${this.remaining()} bytes left in the file`,
        at,
      );
    }
    this.need(len, what);
    const s = this.utf8.decode(this.pos, this.pos + len);
    if (s === undefined) this.fail("INVALID_UTF8", `${label(what)} is not valid UTF-8`);
    this.pos += len;
    return s;
  }
}

function readScalar(c: Cursor, type: GgufValueTypeId, what: Label): GgufScalar {
  const at = c.pos;
  const size = scalarSize(type);
  // need() may read more of the file and replace the buffer, so the view is taken after it.
  if (size > 0) c.need(size, what);
  const v = c.view;
  switch (type) {
    case GgufValueType.UINT8:
      c.pos += 1;
      return v.getUint8(at);
    case GgufValueType.INT8:
      c.pos += 1;
      return v.getInt8(at);
    case GgufValueType.UINT16:
      c.pos += 2;
      return v.getUint16(at, true);
    case GgufValueType.INT16:
      c.pos += 2;
      return v.getInt16(at, true);
    case GgufValueType.UINT32:
      c.pos += 4;
      return v.getUint32(at, true);
    case GgufValueType.INT32:
      c.pos += 4;
      return v.getInt32(at, true);
    case GgufValueType.FLOAT32:
      c.pos += 4;
      return v.getFloat32(at, true);
    case GgufValueType.BOOL: {
      const b = v.getUint8(at);
      if (b > 1)
        c.fail("MALFORMED_VALUE", `${label(what)} is a bool stored as ${b}; only 0 and 1 are valid`, at);
      c.pos += 1;
      return b === 1;
    }
    case GgufValueType.STRING:
      return c.string(what);
    case GgufValueType.UINT64:
      c.pos += 8;
      return v.getBigUint64(at, true);
    case GgufValueType.INT64:
      c.pos += 8;
      return v.getBigInt64(at, true);
    case GgufValueType.FLOAT64:
      c.pos += 8;
      return v.getFloat64(at, true);
    default:
      return c.fail("UNKNOWN_VALUE_TYPE", `${label(what)} has unknown value type ${type}`, at);
  }
}

// Typed-array constructors for numeric array items, by value type.
const TYPED: Partial<Record<number, { new (b: ArrayBuffer): GgufArrayItems; BYTES_PER_ELEMENT: number }>> = {
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
} as never;

const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function readValueType(c: Cursor, what: string): GgufValueTypeId {
  const at = c.pos;
  const t = c.u32(`${what} type`);
  if (!isValueType(t)) c.fail("UNKNOWN_VALUE_TYPE", `${what} has unknown value type ${t}`, at);
  return t;
}

function readArray(c: Cursor, what: string, depth: number): GgufArray {
  if (depth > MAX_ARRAY_NESTING)
    c.fail("NESTING_TOO_DEEP", `${what} nests arrays deeper than ${MAX_ARRAY_NESTING}`);
  const itemType = readValueType(c, `${what} item`);
  const at = c.pos;
  const count = c.u64n(`${what} count`);
  const min = minEncodedSize(itemType);
  if (count * min > c.remaining()) {
    c.fail(
      "COUNT_TOO_LARGE",
      `${what} claims ${count} ${valueTypeName(itemType)} items, more than the ${c.remaining()} bytes left in the file can hold`,
      at,
    );
  }
  const ctor = TYPED[itemType];
  if (ctor) {
    const bytes = count * ctor.BYTES_PER_ELEMENT;
    c.need(bytes, what);
    // A real copy (Buffer#slice would return a view of the whole file).
    const copy = Uint8Array.prototype.slice.call(c.bytes, c.pos, c.pos + bytes);
    c.pos += bytes;
    if (!LITTLE_ENDIAN_HOST) c.fail("UNSUPPORTED_HOST", "big-endian hosts are not supported");
    return { itemType, items: new ctor(copy.buffer) };
  }
  if (itemType === GgufValueType.STRING) {
    stringRegion(c, count);
    const items = new Array<string>(count);
    for (let i = 0; i < count; i++) items[i] = c.string(() => `${what}[${i}]`);
    return { itemType, items };
  }
  if (itemType === GgufValueType.BOOL) {
    const items = new Array<boolean>(count);
    for (let i = 0; i < count; i++) items[i] = readScalar(c, itemType, () => `${what}[${i}]`) as boolean;
    return { itemType, items };
  }
  const items = new Array<GgufArray>(count);
  for (let i = 0; i < count; i++) items[i] = readArray(c, `${what}[${i}]`, depth + 1);
  return { itemType, items };
}

/** Finds where `count` strings from the cursor end and has them decoded in one go. */
function stringRegion(c: Cursor, count: number): void {
  let p = c.pos;
  const limit = Math.min(c.bytes.length, c.fileSize);
  for (let i = 0; i < count; i++) {
    if (p + 8 > limit) break;
    const lo = c.view.getUint32(p, true);
    const hi = c.view.getUint32(p + 4, true);
    if (hi !== 0) break;
    p += 8 + lo;
  }
  c.utf8.prepareRegion(c.pos, Math.min(p, limit));
}

function readKV(c: Cursor, index: number): GgufKV {
  const key = c.string(`metadata key #${index}`);
  const what = `metadata "${key}"`;
  const type = readValueType(c, what);
  const value = type === GgufValueType.ARRAY ? readArray(c, what, 1) : readScalar(c, type, what);
  return { key, type, value };
}

function alignUp(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment;
}

function readTensorInfo(c: Cursor, index: number, part: number, alignment: number): GgufTensorInfo {
  const name = c.string(`tensor #${index} name`);
  const what = `tensor "${name}"`;
  const atDims = c.pos;
  const nDims = c.u32(`${what} dimension count`);
  if (nDims > MAX_DIMS)
    c.fail("TOO_MANY_DIMS", `${what} has ${nDims} dimensions; at most ${MAX_DIMS}`, atDims, name);
  const dims: number[] = [];
  let nElements = 1;
  for (let i = 0; i < nDims; i++) {
    const d = c.u64n(`${what} dimension ${i}`);
    dims.push(d);
    nElements *= d;
  }
  if (!Number.isSafeInteger(nElements)) c.fail("BAD_SHAPE", `${what} has too many elements`, atDims, name);
  const atType = c.pos;
  const typeId = c.u32(`${what} type`);
  let info: ReturnType<typeof ggmlTypeInfo>;
  try {
    info = ggmlTypeInfo(typeId);
  } catch (e) {
    return c.fail("UNKNOWN_TENSOR_TYPE", `${what}: ${(e as Error).message}`, atType, name);
  }
  const rowLength = nDims > 0 ? dims[0]! : 1;
  if (rowLength % info.blockSize !== 0) {
    c.fail(
      "BAD_SHAPE",
      `${what} has rows of ${rowLength} elements, not a multiple of the ${info.name} block size ${info.blockSize}`,
      atDims,
      name,
    );
  }
  const atOffset = c.pos;
  const offset = c.u64n(`${what} offset`);
  if (offset % alignment !== 0) {
    c.fail(
      "MISALIGNED_TENSOR",
      `${what} data offset ${offset} is not a multiple of the alignment ${alignment}`,
      atOffset,
      name,
    );
  }
  const byteSize = (nElements / info.blockSize) * info.typeSize;
  return { name, dims, type: info.id, typeName: info.name, offset, byteSize, nElements, part };
}

/**
 * Parses one GGUF file's header from `bytes`, which hold the first `bytes.length` bytes of a file
 * of `fileSize` bytes. When the header continues past them, `readMore` supplies more; without it,
 * {@link NeedMoreBytes} is thrown.
 */
export function parseHeader(
  bytes: Uint8Array,
  fileSize: number,
  path: string | undefined,
  part: number,
  readMore?: ReadMore,
): GgufPart {
  const c: Cursor = new Cursor(bytes, fileSize, path, readMore);
  const magic = c.u32("magic");
  if (magic !== GGUF_MAGIC) {
    c.fail(
      "BAD_MAGIC",
      `not a GGUF file: magic bytes are 0x${magic.toString(16).padStart(8, "0")}, expected "GGUF"`,
      0,
    );
  }
  const version = c.u32("version");
  if (version !== 2 && version !== 3) {
    const hint =
      version === 1
        ? "; version 1 predates 64-bit counts, convert the file with a current llama.cpp"
        : version > 0xffff
          ? "; this looks like a big-endian file, which is not supported"
          : "";
    c.fail(
      "UNSUPPORTED_VERSION",
      `GGUF version ${version} is not supported (versions 2 and 3 are)${hint}`,
      4,
    );
  }
  const atCounts = c.pos;
  const nTensors = c.u64n("tensor count");
  const nKv = c.u64n("metadata count");
  if (nTensors * 24 + nKv * 13 > c.remaining()) {
    c.fail(
      "COUNT_TOO_LARGE",
      `header claims ${nTensors} tensors and ${nKv} metadata entries, more than the ${c.remaining()} bytes left can hold`,
      atCounts,
    );
  }
  const kvs: GgufKV[] = [];
  const seen = new Set<string>();
  let atAlignment = atCounts;
  for (let i = 0; i < nKv; i++) {
    const at = c.pos;
    const kv = readKV(c, i);
    if (kv.key === "general.alignment") atAlignment = at;
    if (seen.has(kv.key)) c.fail("DUPLICATE_KEY", `duplicate metadata key "${kv.key}"`, at, kv.key);
    seen.add(kv.key);
    kvs.push(kv);
  }
  const metadata = new GgufMetadata(kvs);
  let alignment = 32;
  const alignKv = metadata.get("general.alignment");
  if (alignKv) {
    const a = alignKv.value;
    if (alignKv.type !== GgufValueType.UINT32 || typeof a !== "number" || a === 0 || (a & (a - 1)) !== 0) {
      c.fail(
        "BAD_ALIGNMENT",
        `general.alignment must be a power-of-two uint32, got ${String(a)}`,
        atAlignment,
        "general.alignment",
      );
    }
    alignment = a;
  }
  const tensors: GgufTensorInfo[] = [];
  const names = new Set<string>();
  for (let i = 0; i < nTensors; i++) {
    const at = c.pos;
    const t = readTensorInfo(c, i, part, alignment);
    if (names.has(t.name)) c.fail("DUPLICATE_TENSOR", `duplicate tensor name "${t.name}"`, at, t.name);
    names.add(t.name);
    tensors.push(t);
  }
  const headerSize = c.pos;
  const dataOffset = alignUp(headerSize, alignment);
  checkTensorRanges(tensors, dataOffset, fileSize, path);
  return { path, version, fileSize, dataOffset, alignment, headerSize, metadata, tensors };
}

function checkTensorRanges(
  tensors: readonly GgufTensorInfo[],
  dataOffset: number,
  fileSize: number,
  path: string | undefined,
): void {
  const sorted = [...tensors].sort((a, b) => a.offset - b.offset);
  let prev: GgufTensorInfo | undefined;
  for (const t of sorted) {
    const start = dataOffset + t.offset;
    if (start + t.byteSize > fileSize) {
      throw new GgufError(
        "TENSOR_OUT_OF_BOUNDS",
        `tensor "${t.name}" data (${t.byteSize} bytes at ${start}) runs past the end of the ${fileSize}-byte file`,
        { offset: start, path, key: t.name },
      );
    }
    if (prev && prev.offset + prev.byteSize > t.offset) {
      throw new GgufError("OVERLAPPING_TENSORS", `tensor "${t.name}" overlaps tensor "${prev.name}"`, {
        offset: start,
        path,
        key: t.name,
      });
    }
    prev = t;
  }
}
