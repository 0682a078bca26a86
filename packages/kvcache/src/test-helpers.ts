/** Helpers shared by the tests (not exported by the package). */
import type { KvBatch, KvCache, KvToken } from "./index.js";

/** mulberry32: a small seeded PRNG. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Tokens of `seq` at positions [p0, p1). */
export function tokens(seq: number | number[], p0: number, p1: number): KvToken[] {
  const seqIds = Array.isArray(seq) ? seq : [seq];
  const out: KvToken[] = [];
  for (let p = p0; p < p1; p++) out.push({ pos: p, seqIds });
  return out;
}

/** findSlot + commit, failing loudly on no-slot; returns the cells. */
export function put(kv: KvCache, batch: KvBatch): Int32Array {
  const r = kv.allocate(batch);
  if (r.status !== "ok") throw new Error(`no slot: ${JSON.stringify(r)}`);
  return r.cells;
}

/** The visibility rule written out plainly, cell by cell, as the reference for masks. */
export function refVisible(
  kv: KvCache,
  q: KvToken,
  cell: number,
  opts: { causal?: boolean; slidingWindow?: number } = {},
): boolean {
  const p = kv.cells.pos(cell);
  if (p < 0) return false;
  if (!q.seqIds.some((s) => kv.cells.has(cell, s))) return false;
  if ((opts.causal ?? true) && p > q.pos) return false;
  if (opts.slidingWindow && !(p > q.pos - opts.slidingWindow)) return false;
  return true;
}

/** The cells a query sees among [0, nKv), by the reference rule. */
export function refCells(kv: KvCache, q: KvToken, nKv: number, opts = {}): number[] {
  const out: number[] = [];
  for (let c = 0; c < nKv; c++) if (refVisible(kv, q, c, opts)) out.push(c);
  return out;
}

/** The cells query q sees in a mask row. */
export function maskCells(mask: Float32Array | Uint16Array, q: number, nKv: number): number[] {
  const out: number[] = [];
  for (let c = 0; c < nKv; c++) if (mask[q * nKv + c] === 0) out.push(c);
  return out;
}
