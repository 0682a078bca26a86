import { isKvDtype, type KvDtype, readSequenceState } from "@minfer/kvcache";
import { EngineError } from "./errors.js";

/** "MNFQ": a minfer sequence state (cells + K/V rows + tokens). */
const MAGIC = 0x51464e4d;
const VERSION = 1;
const DTYPES: readonly KvDtype[] = ["f32", "f16", "q8_0"];

/** One layer's K or V rows of the saved cells, in the order of the cell state. */
export type SequenceRows = Uint8Array;

/** What a saved sequence holds. */
export interface SequenceData {
  readonly kvDtype: KvDtype;
  readonly rowBytesK: number;
  readonly rowBytesV: number;
  readonly nLayer: number;
  /** The KV cache's own state bytes of the sequence (positions of its cells). */
  readonly cells: Uint8Array;
  /** 2·nLayer blocks: K of layer 0, V of layer 0, K of layer 1, … */
  readonly rows: readonly SequenceRows[];
  /** The sequence's tokens from position 0 when known. */
  readonly tokens: readonly number[] | undefined;
}

/**
 * Layout (little-endian u32 words): magic, version, dtype index, nLayer, rowBytesK, rowBytesV,
 * cell-state length L, token count T (0xffffffff: unknown), then L bytes of cell state (padded to
 * 4), T i32 tokens, then each rows block.
 */
export function writeSequenceData(d: SequenceData): Uint8Array {
  const pad = (n: number) => (n + 3) & ~3;
  const nTok = d.tokens?.length ?? 0;
  const rowsLen = d.rows.reduce((a, r) => a + r.length, 0);
  const size = 32 + pad(d.cells.length) + nTok * 4 + rowsLen;
  const out = new Uint8Array(size);
  const dv = new DataView(out.buffer);
  const head = [
    MAGIC,
    VERSION,
    DTYPES.indexOf(d.kvDtype),
    d.nLayer,
    d.rowBytesK,
    d.rowBytesV,
    d.cells.length,
    d.tokens ? nTok : 0xffffffff,
  ];
  for (let i = 0; i < head.length; i++) dv.setUint32(i * 4, head[i]!, true);
  let o = 32;
  out.set(d.cells, o);
  o += pad(d.cells.length);
  for (let i = 0; i < nTok; i++, o += 4) dv.setInt32(o, d.tokens![i]!, true);
  for (const r of d.rows) {
    out.set(r, o);
    o += r.length;
  }
  return out;
}

function bad(message: string): never {
  throw new EngineError("INVALID_ARGUMENT", `restoreSequence: ${message}`);
}

/** Parses {@link writeSequenceData}'s bytes; anything malformed is INVALID_ARGUMENT naming it. */
export function readSequenceData(bytes: Uint8Array): SequenceData {
  if (!(bytes instanceof Uint8Array)) bad("the state must be a Uint8Array");
  if (bytes.length < 32) bad(`the state is ${bytes.length} bytes, shorter than its 32-byte header`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const u = (i: number) => dv.getUint32(i * 4, true);
  if (u(0) !== MAGIC) bad("not a minfer sequence state (bad magic)");
  if (u(1) !== VERSION) bad(`state version ${u(1)} is not supported (this build reads ${VERSION})`);
  const kvDtype = DTYPES[u(2)];
  if (kvDtype === undefined || !isKvDtype(kvDtype)) bad(`unknown KV dtype index ${u(2)}`);
  const [nLayer, rowBytesK, rowBytesV, cellsLen, nTokRaw] = [u(3), u(4), u(5), u(6), u(7)];
  const nTok = nTokRaw === 0xffffffff ? 0 : nTokRaw;
  let o = 32;
  const need = (n: number, what: string) => {
    if (n < 0 || o + n > bytes.length) bad(`truncated: ${what} needs ${n} bytes at offset ${o}`);
  };
  need(cellsLen, "the cell state");
  const cells = bytes.slice(o, o + cellsLen);
  o += (cellsLen + 3) & ~3;
  need(nTok * 4, "the tokens");
  const tokens =
    nTokRaw === 0xffffffff ? undefined : Array.from({ length: nTok }, (_, i) => dv.getInt32(o + i * 4, true));
  o += nTok * 4;
  let nCells = 0;
  try {
    nCells = readSequenceState(cells).cells.length;
  } catch (e) {
    bad(`the cell state is malformed: ${(e as Error).message}`);
  }
  const rows: Uint8Array[] = [];
  for (let il = 0; il < nLayer; il++) {
    for (const size of [rowBytesK, rowBytesV]) {
      need(nCells * size, `layer ${il}'s rows`);
      rows.push(bytes.subarray(o, o + nCells * size));
      o += nCells * size;
    }
  }
  if (o !== bytes.length) bad(`${bytes.length - o} bytes after the last layer`);
  return { kvDtype, rowBytesK, rowBytesV, nLayer, cells, rows, tokens };
}
