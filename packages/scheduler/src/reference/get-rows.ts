import { at, type Dense, dense, index } from "./dense.js";

/**
 * Rows of a [n0, nRows, a2, a3] picked by idx I32 [n, r] (r = 1 or a2) → out [n0, n, a2 or r, a3]:
 * out[:, i, j, l] = a[:, idx[i, r === 1 ? 0 : j], j, l]. Quantized rows arrive dequantized.
 */
export function getRows(a: Dense, idx: Dense): Dense {
  const [n0, nRows, , a3] = a.ne;
  const n = idx.ne[0];
  const d2 = idx.ne[1] === 1 ? a.ne[2] : idx.ne[1];
  const out = dense([n0, n, d2, a3]);
  for (let l = 0; l < a3; l++)
    for (let j = 0; j < d2; j++)
      for (let i = 0; i < n; i++) {
        const r = index(
          idx.data[at(idx.ne, i, idx.ne[1] === 1 ? 0 : j, 0, 0)]!,
          nRows,
          `get_rows index ${i}`,
        );
        const src = at(a.ne, 0, r, j, l);
        out.data.set(a.data.subarray(src, src + n0), at(out.ne, 0, i, j, l));
      }
  return out;
}
