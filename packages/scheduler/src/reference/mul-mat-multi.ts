import type { Dense } from "./dense.js";
import { add } from "./elementwise.js";
import { mulMat } from "./matmul.js";

/**
 * The fused MUL_MAT_MULTI: inputs [x, w1, …, wn] → outputs [mul_mat(w1, x), …, mul_mat(wn, x)];
 * with addends (inputs [x, w1, …, wn, c1, …, cn]) out_i = mul_mat(w_i, x) + c_i, c_i broadcast
 * as ADD's b (float64 throughout, as MUL_MAT_ADD).
 */
export function mulMatMulti(x: Dense, rest: readonly Dense[], nOutputs = rest.length): Dense[] {
  const weights = rest.slice(0, nOutputs);
  const addends = rest.slice(nOutputs);
  return weights.map((w, i) => {
    const p = mulMat(w, x);
    const c = addends[i];
    return c ? add(p, c) : p;
  });
}
