import { type Dense, dense, forRows } from "./dense.js";

/** A total order of values: NaN above everything (NaNs equal), -0 equal to +0. */
function compare(u: number, v: number): number {
  if (Number.isNaN(u)) return Number.isNaN(v) ? 0 : 1;
  if (Number.isNaN(v)) return -1;
  return u < v ? -1 : u > v ? 1 : 0;
}

function order(row: Float64Array, descending: boolean): number[] {
  const idx = Array.from(row, (_, i) => i);
  // Ties keep index order, so the result is deterministic.
  idx.sort((x, y) => (descending ? compare(row[y]!, row[x]!) : compare(row[x]!, row[y]!)) || x - y);
  return idx;
}

/** ARGSORT: per row, the indices that sort it (ascending, or descending when asked). */
export function argsort(a: Dense, descending: boolean): Dense {
  const out = dense(a.ne);
  forRows(a.ne, (_1, _2, _3, s) => {
    out.data.set(order(a.data.subarray(s, s + a.ne[0]), descending), s);
  });
  return out;
}

/** TOP_K: per row, the indices of the k largest values, largest first → [k, rows…]. */
export function topK(a: Dense, k: number): Dense {
  const out = dense([k, a.ne[1], a.ne[2], a.ne[3]]);
  let r = 0;
  forRows(a.ne, (_1, _2, _3, s) => {
    out.data.set(order(a.data.subarray(s, s + a.ne[0]), true).slice(0, k), r * k);
    r++;
  });
  return out;
}
