import { isKvDtype, type KvDtype, readSequenceState } from "@minfer/kvcache";
import type { KvGroup } from "@minfer/models";
import { EngineError } from "./errors.js";

/** "MNFQ": a minfer sequence state (cells + K/V rows + tokens). */
const MAGIC = 0x51464e4d;
/** 2: one block per KV cache (full-attention and sliding-window layers). */
const VERSION = 2;
const DTYPES: readonly KvDtype[] = ["f32", "f16", "q8_0"];
const GROUPS: readonly KvGroup[] = ["full", "swa"];

/** A layer whose rows a saved cache holds, and its row sizes. */
export interface SavedLayer {
  readonly il: number;
  readonly rowBytesK: number;
  readonly rowBytesV: number;
}

/** One KV cache's part of a saved sequence. */
export interface SavedCache {
  readonly group: KvGroup;
  readonly layers: readonly SavedLayer[];
  /** The KV cache's own state bytes of the sequence (positions of its cells). */
  readonly cells: Uint8Array;
  /** 2 per layer: K of the first layer, its V, K of the next, … (one row per saved cell each). */
  readonly rows: readonly Uint8Array[];
}

/** What a saved sequence holds. */
export interface SequenceData {
  readonly kvDtype: KvDtype;
  readonly caches: readonly SavedCache[];
  /** The sequence's tokens from position 0 when known. */
  readonly tokens: readonly number[] | undefined;
}

const pad = (n: number) => (n + 3) & ~3;

/**
 * Layout (little-endian u32 words): magic, version, dtype index, cache count C, token count T
 * (0xffffffff: unknown), T i32 tokens; then per cache: group index, layer count L, cell-state
 * length S, L × (layer, K row bytes, V row bytes), S bytes of cell state (padded to 4), each
 * layer's K then V rows.
 */
export function writeSequenceData(d: SequenceData): Uint8Array {
  const nTok = d.tokens?.length ?? 0;
  let size = 20 + nTok * 4;
  for (const c of d.caches)
    size += 12 + 12 * c.layers.length + pad(c.cells.length) + c.rows.reduce((a, r) => a + r.length, 0);
  const out = new Uint8Array(size);
  const dv = new DataView(out.buffer);
  let o = 0;
  const u32 = (v: number) => {
    dv.setUint32(o, v, true);
    o += 4;
  };
  for (const v of [MAGIC, VERSION, DTYPES.indexOf(d.kvDtype), d.caches.length, d.tokens ? nTok : 0xffffffff])
    u32(v);
  for (let i = 0; i < nTok; i++, o += 4) dv.setInt32(o, d.tokens![i]!, true);
  for (const c of d.caches) {
    for (const v of [GROUPS.indexOf(c.group), c.layers.length, c.cells.length]) u32(v);
    for (const l of c.layers) for (const v of [l.il, l.rowBytesK, l.rowBytesV]) u32(v);
    out.set(c.cells, o);
    o += pad(c.cells.length);
    for (const r of c.rows) {
      out.set(r, o);
      o += r.length;
    }
  }
  return out;
}

function bad(message: string): never {
  throw new EngineError("INVALID_ARGUMENT", `restoreSequence: ${message}`);
}

/** Parses {@link writeSequenceData}'s bytes; anything malformed is INVALID_ARGUMENT naming it. */
export function readSequenceData(bytes: Uint8Array): SequenceData {
  if (!(bytes instanceof Uint8Array)) bad("the state must be a Uint8Array");
  if (bytes.length < 20) bad(`the state is ${bytes.length} bytes, shorter than its 20-byte header`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let o = 0;
  const need = (n: number, what: string) => {
    if (!Number.isSafeInteger(n) || n < 0 || o + n > bytes.length)
      bad(`truncated: ${what} needs ${n} bytes at offset ${o}`);
  };
  const u32 = (what: string) => {
    need(4, what);
    const v = dv.getUint32(o, true);
    o += 4;
    return v;
  };
  if (u32("the magic") !== MAGIC) bad("not a minfer sequence state (bad magic)");
  const version = u32("the version");
  if (version !== VERSION) bad(`state version ${version} is not supported (this build reads ${VERSION})`);
  const dtypeIndex = u32("the dtype");
  const kvDtype = DTYPES[dtypeIndex];
  if (kvDtype === undefined || !isKvDtype(kvDtype)) bad(`unknown KV dtype index ${dtypeIndex}`);
  const nCaches = u32("the cache count");
  if (nCaches > GROUPS.length) bad(`${nCaches} caches; a state has at most ${GROUPS.length}`);
  const nTokRaw = u32("the token count");
  const nTok = nTokRaw === 0xffffffff ? 0 : nTokRaw;
  need(nTok * 4, "the tokens");
  const tokens =
    nTokRaw === 0xffffffff ? undefined : Array.from({ length: nTok }, (_, i) => dv.getInt32(o + i * 4, true));
  o += nTok * 4;
  const caches: SavedCache[] = [];
  for (let ci = 0; ci < nCaches; ci++) {
    const gi = u32("a cache's group");
    const group = GROUPS[gi];
    if (group === undefined) bad(`unknown cache group index ${gi}`);
    const nLayers = u32("a cache's layer count");
    const cellsLen = u32("a cache's cell state length");
    need(nLayers * 12, "the layer table");
    const layers: SavedLayer[] = [];
    for (let l = 0; l < nLayers; l++)
      layers.push({ il: u32("a layer"), rowBytesK: u32("a row size"), rowBytesV: u32("a row size") });
    need(cellsLen, "the cell state");
    const cells = bytes.slice(o, o + cellsLen);
    o += pad(cellsLen);
    let nCells = 0;
    try {
      nCells = readSequenceState(cells).cells.length;
    } catch (e) {
      bad(`the cell state is malformed: ${(e as Error).message}`);
    }
    const rows: Uint8Array[] = [];
    for (const l of layers)
      for (const size of [l.rowBytesK, l.rowBytesV]) {
        need(nCells * size, `layer ${l.il}'s rows`);
        rows.push(bytes.subarray(o, o + nCells * size));
        o += nCells * size;
      }
    caches.push({ group, layers, cells, rows });
  }
  if (o !== bytes.length) bad(`${bytes.length - o} bytes after the last cache`);
  return { kvDtype, caches, tokens };
}
