import type { KvCells } from "./kv-cells.js";

/**
 * One sequence's cells in cell order, found once per {@link attentionSpans} call so that each of its
 * queries' spans is two binary searches instead of a scan of the window: a 512-token prompt at a
 * depth of 4096 scanned 512 × 4608 cells (9.5 ms on a 2-core VM, every step of the prompt).
 * Only when the positions never decrease along the cells (what appending tokens leaves; seqAdd,
 * seqDiv or a cross-sequence seqCp may not): then the cells a query at position p sees are the
 * index range [first position > p − W, first position > p).
 */
export interface SeqRuns {
  /** The cells, ascending. */
  readonly cells: Int32Array;
  /** Their positions, non-decreasing. */
  readonly pos: Int32Array;
  /** runStart[i]: the index where the run of consecutive cells holding cells[i] begins. */
  readonly runStart: Int32Array;
}

/**
 * The cells of `seq` in [lo, hi) (`bits`: its owner bitset), or null when their positions decrease
 * somewhere along the cells. `expect`: how many there are at most (the array sizes).
 */
export function seqRuns(
  cells: KvCells,
  pos: Int32Array,
  bits: Uint32Array,
  lo: number,
  hi: number,
  expect: number,
): SeqRuns | null {
  const found = take(expect);
  const at = take(expect);
  const runStart = take(expect);
  let n = 0;
  for (let c = lo; c < hi; c++) {
    const p = pos[c]!;
    if (p < 0 || !cells.ownedByAny(c, bits)) continue;
    if (n === expect) return null; // more than the sequence's count (cannot happen): take the scan
    if (n > 0 && p < at[n - 1]!) return null;
    found[n] = c;
    at[n] = p;
    runStart[n] = n > 0 && found[n - 1] === c - 1 ? runStart[n - 1]! : n;
    n++;
  }
  return { cells: found.subarray(0, n), pos: at.subarray(0, n), runStart: runStart.subarray(0, n) };
}

/**
 * The arrays of the current call's SeqRuns, carved from one pool (reset by {@link resetRuns} at
 * the start of each call; a pool outgrown mid-call is replaced, the views already given keep the old one).
 */
let pool = new Int32Array(1 << 12);
let used = 0;
function take(n: number): Int32Array {
  if (used + n > pool.length) {
    pool = new Int32Array(Math.max(2 * pool.length, n));
    used = 0;
  }
  const a = pool.subarray(used, used + n);
  used += n;
  return a;
}
/** Frees the pool for a new call (the SeqRuns of the last call are then invalid). */
export function resetRuns(): void {
  used = 0;
}

/** The first index whose position is above x (positions non-decreasing). */
function above(pos: Int32Array, x: number): number {
  let lo = 0;
  let hi = pos.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (pos[mid]! > x) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * The run of cells a query at `qPos` sees among the sequence's cells: [start, end), start −1 when
 * it sees none, null when the cells it sees are not one run.
 */
export function runOf(r: SeqRuns, qPos: number, causal: boolean, w: number): [number, number] | null {
  const k = causal ? above(r.pos, qPos) : r.pos.length;
  const j = w > 0 ? above(r.pos, qPos - w) : 0;
  if (j >= k) return [-1, -1];
  if (r.runStart[k - 1]! > j) return null;
  return [r.cells[j]!, r.cells[k - 1]! + 1];
}
