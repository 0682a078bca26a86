import type { Shape } from "@minfer/ir";
import { at, type Dense, dense, index } from "./dense.js";

/** CPY: the same elements in ggml element order, reshaped to the destination's shape. */
export function cpy(a: Dense, dstNe: Shape): Dense {
  return dense(dstNe, Float64Array.from(a.data));
}

/** A row to write into SET_ROWS' destination: [·, i1, i2, i3] ← values. */
export interface RowWrite {
  readonly i1: number;
  readonly i2: number;
  readonly i3: number;
  readonly values: Float64Array;
}

/**
 * SET_ROWS: dst[:, idx[i, i2 % idx2, i3 % idx3], i2, i3] = src[:, i, i2, i3]. Only the rows named
 * are written (the rest of dst is untouched), so the result is a list of row writes.
 */
export function setRows(dstNe: Shape, src: Dense, idx: Dense): RowWrite[] {
  const writes: RowWrite[] = [];
  const [n0, n, s2, s3] = src.ne;
  for (let i3 = 0; i3 < s3; i3++)
    for (let i2 = 0; i2 < s2; i2++)
      for (let i = 0; i < n; i++) {
        const r = idx.data[at(idx.ne, i, i2 % idx.ne[1], i3 % idx.ne[2], 0)]!;
        index(r, dstNe[1], `set_rows destination row (src row ${i})`);
        const s = at(src.ne, 0, i, i2, i3);
        writes.push({ i1: r, i2: i2 % dstNe[2], i3: i3 % dstNe[3], values: src.data.slice(s, s + n0) });
      }
  return writes;
}

/** CONCAT: a and b joined along `dim`. */
export function concat(a: Dense, b: Dense, dim: number): Dense {
  const ne = [...a.ne] as [number, number, number, number];
  ne[dim] = a.ne[dim]! + b.ne[dim]!;
  const out = dense(ne);
  const i = [0, 0, 0, 0];
  for (i[3] = 0; i[3] < ne[3]; i[3]++)
    for (i[2] = 0; i[2] < ne[2]; i[2]++)
      for (i[1] = 0; i[1] < ne[1]; i[1]++)
        for (i[0] = 0; i[0] < ne[0]; i[0]++) {
          const fromA = i[dim]! < a.ne[dim]!;
          const j = [...i];
          if (!fromA) j[dim]! -= a.ne[dim]!;
          const src = fromA ? a : b;
          out.data[at(ne, i[0]!, i[1]!, i[2]!, i[3]!)] = src.data[at(src.ne, j[0]!, j[1]!, j[2]!, j[3]!)]!;
        }
  return out;
}
