import { at, type Dense, dense } from "./dense.js";
import { add } from "./elementwise.js";

/**
 * W a [k, m, a2, a3] (weights, already dequantized) × b [k, n, b2, b3] → out [m, n, b2, b3]:
 * out[i, j, i2, i3] = Σ_k a[k, i, i2 / (b2/a2), i3 / (b3/a3)] · b[k, j, i2, i3].
 */
export function mulMat(a: Dense, b: Dense): Dense {
  const [k, m, a2, a3] = a.ne;
  const [, n, b2, b3] = b.ne;
  const r2 = b2 / a2;
  const r3 = b3 / a3;
  const out = dense([m, n, b2, b3]);
  for (let i3 = 0; i3 < b3; i3++)
    for (let i2 = 0; i2 < b2; i2++)
      for (let j = 0; j < n; j++) {
        const bs = at(b.ne, 0, j, i2, i3);
        for (let i = 0; i < m; i++) {
          const as = at(a.ne, 0, i, Math.floor(i2 / r2), Math.floor(i3 / r3));
          let sum = 0;
          for (let x = 0; x < k; x++) sum += a.data[as + x]! * b.data[bs + x]!;
          out.data[at(out.ne, i, j, i2, i3)] = sum;
        }
      }
  return out;
}

/**
 * The fused MUL_MAT_ADD: mul_mat(a, b) + c, c broadcast over the product as ADD's b (float64
 * throughout; devices round the product to f32 before the add, within MUL_MAT's tolerance).
 */
export function mulMatAdd(a: Dense, b: Dense, c: Dense): Dense {
  return add(mulMat(a, b), c);
}
