import { type Dense, dense, forRows } from "./dense.js";

function order(row: Float64Array, descending: boolean): number[] {
  const idx = Array.from(row, (_, i) => i);
  // Ties keep index order, so the result is deterministic.
  idx.sort((x, y) => (descending ? row[y]! - row[x]! : row[x]! - row[y]!) || x - y);
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
