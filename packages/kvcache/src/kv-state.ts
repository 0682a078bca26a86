import { KvCacheError } from "./errors.js";
import type { KvCells } from "./kv-cells.js";

/** "MKVS": minfer KV sequence state. */
export const STATE_MAGIC = 0x53564b4d;
/** The state layout version {@link writeSequenceState} writes. */
export const STATE_VERSION = 1;
const HEADER = 16;
const RECORD = 8;
const TRAILER = 4;

/** What a sequence's state holds: the writer's nCtx, and its cells (in cell order) with positions. */
export interface KvSequenceState {
  /** nCtx of the cache that wrote it. */
  readonly nCtx: number;
  /** The writer's cell indices, ascending: the order of the K/V rows the engine saved. */
  readonly cells: Int32Array;
  /** The position of each of those cells. */
  readonly positions: Int32Array;
}

let CRC_TABLE: Uint32Array | undefined;

/** CRC-32 (IEEE 802.3, as zlib) of bytes[0, end). */
export function crc32(bytes: Uint8Array, end = bytes.length): number {
  let t = CRC_TABLE;
  if (t === undefined) {
    t = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      t[n] = c >>> 0;
    }
    CRC_TABLE = t;
  }
  let c = 0xffffffff;
  for (let i = 0; i < end; i++) c = t[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/**
 * The bookkeeping of one sequence as bytes (little-endian): magic "MKVS", version u32, nCtx u32,
 * cell count u32, then (cell u32, position i32) per cell the sequence owns in cell order, then a
 * CRC-32 of everything before it. The engine saves the K/V rows of those cells in the same order.
 * PENDING_SHIFT while a delta is pending on one of its cells (re-rope K first).
 */
export function writeSequenceState(cells: KvCells, seq: number): Uint8Array {
  const pos = cells.positions;
  const top = cells.window();
  const n = cells.seqCount(seq);
  const bytes = new Uint8Array(HEADER + RECORD * n + TRAILER);
  const dv = new DataView(bytes.buffer);
  dv.setUint32(0, STATE_MAGIC, true);
  dv.setUint32(4, STATE_VERSION, true);
  dv.setUint32(8, cells.nCtx, true);
  dv.setUint32(12, n, true);
  let o = HEADER;
  for (let c = 0; c < top; c++) {
    if (pos[c]! < 0 || !cells.has(c, seq)) continue;
    if (cells.shiftOf(c) !== 0) {
      throw new KvCacheError(
        "PENDING_SHIFT",
        `cell ${c} of sequence ${seq} has a pending shift of ${cells.shiftOf(c)}; apply consumeShift() first`,
        { cell: c },
      );
    }
    dv.setUint32(o, c, true);
    dv.setInt32(o + 4, pos[c]!, true);
    o += RECORD;
  }
  if (o !== HEADER + RECORD * n) throw new KvCacheError("INTERNAL", `sequence ${seq} count is off`);
  dv.setUint32(o, crc32(bytes, o), true);
  return bytes;
}

/**
 * Parses state bytes from {@link writeSequenceState}. Every malformed, truncated or corrupted buffer
 * is a KvCacheError (STATE_*) naming the byte offset; nothing is read out of bounds.
 */
export function readSequenceState(bytes: Uint8Array): KvSequenceState {
  if (!(bytes instanceof Uint8Array)) {
    throw new KvCacheError("STATE_MALFORMED", "state must be a Uint8Array", { argument: "bytes" });
  }
  const len = bytes.length;
  if (len < 4) throw trunc(len, 4);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, len);
  if (dv.getUint32(0, true) !== STATE_MAGIC) {
    throw new KvCacheError("STATE_BAD_MAGIC", "state bytes do not start with MKVS", { offset: 0 });
  }
  if (len < 8) throw trunc(len, 8);
  const version = dv.getUint32(4, true);
  if (version !== STATE_VERSION) {
    throw new KvCacheError(
      "STATE_UNSUPPORTED_VERSION",
      `state version ${version}; this reader knows ${STATE_VERSION}`,
      {
        offset: 4,
      },
    );
  }
  if (len < HEADER + TRAILER) throw trunc(len, HEADER + TRAILER);
  const nCtx = dv.getUint32(8, true);
  const n = dv.getUint32(12, true);
  const need = HEADER + RECORD * n + TRAILER;
  if (len < need) throw trunc(len, need);
  if (len > need) {
    throw new KvCacheError("STATE_MALFORMED", `${len - need} bytes after the state's end`, { offset: need });
  }
  const stored = dv.getUint32(need - TRAILER, true);
  const actual = crc32(bytes, need - TRAILER);
  if (stored !== actual) {
    throw new KvCacheError(
      "STATE_CHECKSUM",
      `state checksum ${hex(stored)} does not match its bytes (${hex(actual)}): corrupted`,
      { offset: need - TRAILER },
    );
  }
  if (nCtx < 1 || nCtx > 0x40000000 || n > nCtx) {
    throw new KvCacheError("STATE_MALFORMED", `state of ${n} cells with nCtx ${nCtx}`, { offset: 8 });
  }
  const cellIdx = new Int32Array(n);
  const positions = new Int32Array(n);
  let prev = -1;
  for (let i = 0; i < n; i++) {
    const o = HEADER + RECORD * i;
    const c = dv.getUint32(o, true);
    const p = dv.getInt32(o + 4, true);
    if (c <= prev || c >= nCtx) {
      throw new KvCacheError("STATE_MALFORMED", `cell ${c} is out of order or outside [0, ${nCtx})`, {
        offset: o,
      });
    }
    if (p < 0) {
      throw new KvCacheError("STATE_MALFORMED", `position ${p} of cell ${c} is negative`, { offset: o + 4 });
    }
    cellIdx[i] = c;
    positions[i] = p;
    prev = c;
  }
  return { nCtx, cells: cellIdx, positions };
}

function trunc(len: number, need: number): KvCacheError {
  return new KvCacheError("STATE_TRUNCATED", `state is ${len} bytes; needs ${need}`, { offset: len });
}

function hex(x: number): string {
  return `0x${x.toString(16).padStart(8, "0")}`;
}
