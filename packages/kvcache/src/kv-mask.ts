import { KvCacheError } from "./errors.js";
import type { KvBatch } from "./kv-batch.js";
import type { KvCells } from "./kv-cells.js";
import { resetRuns, runOf, type SeqRuns, seqRuns } from "./kv-seq-runs.js";

/** The bits of an F16 -Infinity. */
export const F16_NEG_INF = 0xfc00;

/** What a query may see. */
export interface VisibilityOptions {
  /** The KV window the graph attends over: cells [0, nKv). Every visible cell must lie in it. */
  nKv: number;
  /** A query sees only positions ≤ its own (default true). */
  causal?: boolean;
  /** Sliding-window attention of W positions: a query at p sees positions > p − W only. */
  slidingWindow?: number;
}

/** Options of {@link attentionMask}. */
export interface MaskOptions extends VisibilityOptions {
  /** "f32" (default): a Float32Array; "f16": a Uint16Array of F16 bits. */
  dtype?: "f32" | "f16";
  /** Writes here (length ≥ nKv × nQ) instead of allocating. */
  out?: Float32Array | Uint16Array;
}

/** Options of {@link attentionSpans}. */
export interface SpanOptions extends VisibilityOptions {
  /** Writes here (length ≥ 2 × nQ) instead of allocating. */
  out?: Int32Array;
}

/** Shared per-call state: validated options and the query's owner bits. */
interface Vis {
  nKv: number;
  causal: boolean;
  w: number;
}

/**
 * Throws unless every token of `batch` sits in the cell `batchCells` gives it (same position, owned by
 * each of its sequences): the mask is meaningful only after {@link KvCache.commit}.
 */
function checkCommitted(cells: KvCells, batch: KvBatch, batchCells: ArrayLike<number>): void {
  if (batchCells.length !== batch.length) {
    throw new KvCacheError("BAD_BATCH", `${batchCells.length} cells for ${batch.length} tokens`, {
      argument: "cells",
    });
  }
  for (let i = 0; i < batch.length; i++) {
    const c = batchCells[i]!;
    if (!Number.isInteger(c) || c < 0 || c >= cells.nCtx) {
      throw new KvCacheError("BAD_CELL", `cells[${i}] = ${String(c)} is outside [0, ${cells.nCtx})`, {
        argument: `cells[${i}]`,
        cell: c,
      });
    }
    const t = batch[i]!;
    let ok = cells.pos(c) === t.pos;
    for (let j = 0; ok && j < t.seqIds.length; j++) ok = cells.has(c, t.seqIds[j]!);
    if (!ok) {
      throw new KvCacheError(
        "NOT_COMMITTED",
        `cell ${c} does not hold batch[${i}] (position ${t.pos}, sequences ${t.seqIds.join(",")}); commit the batch first`,
        { argument: `cells[${i}]`, cell: c },
      );
    }
  }
}

function visOptions(cells: KvCells, o: VisibilityOptions): Vis {
  const nKv = o?.nKv;
  if (typeof nKv !== "number" || !Number.isInteger(nKv) || nKv < 1 || nKv > cells.nCtx) {
    throw new KvCacheError(
      "INVALID_ARGUMENT",
      `nKv must be an integer in [1, ${cells.nCtx}], got ${String(nKv)}`,
      {
        argument: "nKv",
      },
    );
  }
  const sw = o.slidingWindow ?? 0;
  if (!Number.isInteger(sw) || sw < 0) {
    throw new KvCacheError(
      "INVALID_ARGUMENT",
      `slidingWindow must be a positive integer, got ${String(sw)}`,
      {
        argument: "slidingWindow",
      },
    );
  }
  return { nKv, causal: o.causal ?? true, w: sw };
}

/** Sets `bits` to the owner bitset of the token's sequences. */
function queryBits(bits: Uint32Array, seqIds: readonly number[]): void {
  bits.fill(0);
  for (let j = 0; j < seqIds.length; j++) {
    const s = seqIds[j]!;
    bits[s >>> 5]! |= 1 << (s & 31);
  }
}

function visible(
  cells: KvCells,
  pos: Int32Array,
  c: number,
  qPos: number,
  bits: Uint32Array,
  v: Vis,
): boolean {
  const p = pos[c]!;
  if (p < 0) return false;
  if (v.causal && p > qPos) return false;
  if (v.w > 0 && p <= qPos - v.w) return false;
  return cells.ownedByAny(c, bits);
}

/** Throws WINDOW_TOO_SMALL when a query would see a cell at or beyond nKv. */
function checkWindow(cells: KvCells, batch: KvBatch, bits: Uint32Array, v: Vis): void {
  const top = cells.window();
  if (top <= v.nKv) return;
  const pos = cells.positions;
  for (let i = 0; i < batch.length; i++) {
    const t = batch[i]!;
    queryBits(bits, t.seqIds);
    for (let c = v.nKv; c < top; c++) {
      if (visible(cells, pos, c, t.pos, bits, v)) {
        throw new KvCacheError(
          "WINDOW_TOO_SMALL",
          `batch[${i}] sees cell ${c}, outside the KV window of ${v.nKv} cells (window() is ${top})`,
          { argument: "nKv", cell: c },
        );
      }
    }
  }
}

/**
 * The attention mask of a committed micro-batch: [nKv × nQ] row-major by query
 * (`mask[q * nKv + cell]`), 0 where query q sees the cell and -Infinity where it does not. A query
 * sees a cell iff one of its sequences owns the cell, the cell's position is ≤ the query's
 * (causal), and > the query's − W (sliding window W). `batchCells` (the batch's cells, from
 * findSlot) is checked to hold the batch; pass null to ask about queries that hold no cell.
 */
export function attentionMask(
  cells: KvCells,
  batch: KvBatch,
  batchCells: ArrayLike<number> | null,
  opts: MaskOptions,
  bits: Uint32Array,
): Float32Array | Uint16Array {
  const v = visOptions(cells, opts);
  if (batchCells !== null) checkCommitted(cells, batch, batchCells);
  checkWindow(cells, batch, bits, v);
  const nQ = batch.length;
  const size = v.nKv * nQ;
  const f16 = opts.dtype === "f16";
  if (opts.dtype !== undefined && opts.dtype !== "f16" && opts.dtype !== "f32") {
    throw new KvCacheError(
      "INVALID_ARGUMENT",
      `mask dtype must be "f32" or "f16", got ${String(opts.dtype)}`,
      {
        argument: "dtype",
      },
    );
  }
  let out = opts.out;
  if (out !== undefined) {
    if (
      (f16 && !(out instanceof Uint16Array)) ||
      (!f16 && !(out instanceof Float32Array)) ||
      out.length < size
    ) {
      throw new KvCacheError(
        "INVALID_ARGUMENT",
        `out must be a ${f16 ? "Uint16Array" : "Float32Array"} of ≥ ${size} elements`,
        { argument: "out" },
      );
    }
  } else out = f16 ? new Uint16Array(size) : new Float32Array(size);
  const hidden = f16 ? F16_NEG_INF : Number.NEGATIVE_INFINITY;
  const pos = cells.positions;
  for (let q = 0; q < nQ; q++) {
    const t = batch[q]!;
    queryBits(bits, t.seqIds);
    const row = q * v.nKv;
    for (let c = 0; c < v.nKv; c++) out[row + c] = visible(cells, pos, c, t.pos, bits, v) ? 0 : hidden;
  }
  return out;
}

/**
 * Attention spans of a committed micro-batch: I32 [2 × nQ], query q sees cells
 * [spans[2q], spans[2q + 1]). Null when some query's visible cells are not one contiguous run
 * (a hidden cell inside it): the caller then uses {@link attentionMask}. A query that sees nothing
 * gets [0, 0).
 */
export function attentionSpans(
  cells: KvCells,
  batch: KvBatch,
  batchCells: ArrayLike<number> | null,
  opts: SpanOptions,
  bits: Uint32Array,
  region = 0,
): Int32Array | null {
  const v = visOptions(cells, opts);
  if (batchCells !== null) checkCommitted(cells, batch, batchCells);
  checkWindow(cells, batch, bits, v);
  const nQ = batch.length;
  let out = opts.out;
  if (out !== undefined) {
    if (!(out instanceof Int32Array) || out.length < 2 * nQ) {
      throw new KvCacheError("INVALID_ARGUMENT", `out must be an Int32Array of ≥ ${2 * nQ} elements`, {
        argument: "out",
      });
    }
  }
  const pos = cells.positions;
  // One pass over the cells into a scratch array, copied to `out` only when every query's visible
  // cells are one run, so `out` is untouched when the answer is null.
  if (spanScratch.length < 2 * nQ) spanScratch = new Int32Array(2 * nQ);
  const found = spanScratch;
  // A sequence with several queries in the batch (a prompt): its cells found once (its region's,
  // with sequence regions, when every cell of it lies there), each query's run by binary search
  // (kv-seq-runs.ts). A sequence's only query (a decode step) scans, as finding the cells would.
  const perSeq = nQ > 1 ? queriesPerSeq(batch) : null;
  const runs = new Map<number, SeqRuns | null>();
  resetRuns();
  for (let q = 0; q < nQ; q++) {
    const t = batch[q]!;
    queryBits(bits, t.seqIds);
    let r: [number, number] | null | undefined;
    const seq = t.seqIds.length === 1 ? t.seqIds[0]! : -1;
    if (seq >= 0 && perSeq !== null && perSeq.get(seq)! > 1) {
      let sr = runs.get(seq);
      if (sr === undefined) {
        sr = seqCells(cells, pos, seq, bits, v.nKv, region);
        runs.set(seq, sr);
      }
      if (sr !== null) r = runOf(sr, t.pos, v.causal, v.w);
    } else if (seq >= 0 && region > 0) r = regionRun(cells, pos, t, bits, v, region);
    else if (seq >= 0) r = ownRun(cells, t, v, 0, v.nKv);
    if (r === null) return null;
    let start = -1;
    let end = -1;
    if (r !== undefined) [start, end] = r;
    else
      for (let c = 0; c < v.nKv; c++) {
        if (!visible(cells, pos, c, t.pos, bits, v)) continue;
        if (start < 0) {
          start = c;
          end = c + 1;
        } else if (c === end) end++;
        else return null;
      }
    found[2 * q] = Math.max(start, 0);
    found[2 * q + 1] = start < 0 ? 0 : end;
  }
  out ??= new Int32Array(2 * nQ);
  out.set(found.subarray(0, 2 * nQ));
  return out;
}

/**
 * A sequence's cells for its queries' spans: its region's when every cell it owns lies there, else
 * the window's; null when their positions decrease along the cells (the queries then scan).
 */
function seqCells(
  cells: KvCells,
  pos: Int32Array,
  seq: number,
  bits: Uint32Array,
  nKv: number,
  region: number,
): SeqRuns | null {
  const count = cells.seqCount(seq);
  if (region > 0) {
    const lo = seq * region;
    const r = seqRuns(cells, pos, bits, lo, Math.min(lo + region, nKv), count);
    if (r === null || r.cells.length === count) return r;
  }
  return seqRuns(cells, pos, bits, 0, nKv, count);
}

/**
 * A one-sequence query's visible run when its sequence's cells are one run within [lo, hi), every
 * one visible (a decode step of a sequence filled in order, no sliding window): that run, from the
 * cells' tracked range without visiting them; undefined otherwise (the caller scans).
 */
function ownRun(
  cells: KvCells,
  t: KvBatch[number],
  v: Vis,
  lo: number,
  hi: number,
): [number, number] | undefined {
  const seq = t.seqIds[0]!;
  const count = cells.seqCount(seq);
  if (count === 0 || v.w !== 0 || (v.causal && cells.seqPosMax(seq) > t.pos)) return undefined;
  const first = cells.seqCellMin(seq);
  const last = cells.seqCellMax(seq);
  return last - first + 1 === count && first >= lo && last < hi ? [first, last + 1] : undefined;
}

/**
 * The visible run [start, end) of a one-sequence query within its sequence's region (start -1: it
 * sees none there); null when the visible cells there are not one run; undefined when the sequence
 * also owns cells outside the region (the caller scans the whole window).
 */
function regionRun(
  cells: KvCells,
  pos: Int32Array,
  t: KvBatch[number],
  bits: Uint32Array,
  v: Vis,
  region: number,
): [number, number] | null | undefined {
  const seq = t.seqIds[0]!;
  const lo = seq * region;
  const hi = Math.min(lo + region, v.nKv);
  const own = ownRun(cells, t, v, lo, hi);
  if (own !== undefined) return own;
  let owned = 0;
  let start = -1;
  let end = -1;
  let broken = false;
  for (let c = lo; c < hi; c++) {
    if (pos[c]! < 0 || !cells.ownedByAny(c, bits)) continue;
    owned++;
    if (!visible(cells, pos, c, t.pos, bits, v)) continue;
    if (start < 0) {
      start = c;
      end = c + 1;
    } else if (c === end) end++;
    else broken = true;
  }
  if (owned !== cells.seqCount(seq)) return undefined;
  return broken ? null : [start, end];
}

/** How many queries of the batch belong to each one-sequence query's sequence. */
function queriesPerSeq(batch: KvBatch): Map<number, number> {
  const m = new Map<number, number>();
  for (let q = 0; q < batch.length; q++) {
    const ids = batch[q]!.seqIds;
    if (ids.length === 1) m.set(ids[0]!, (m.get(ids[0]!) ?? 0) + 1);
  }
  return m;
}

/** attentionSpans' working array (grown as needed; its contents never outlive a call). */
let spanScratch = new Int32Array(0);
