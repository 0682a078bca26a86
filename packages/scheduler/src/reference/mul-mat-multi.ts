import type { Dense } from "./dense.js";
import { mulMat } from "./matmul.js";

/** The fused MUL_MAT_MULTI: inputs [x, w1, …, wn] → outputs [mul_mat(w1, x), …, mul_mat(wn, x)]. */
export function mulMatMulti(x: Dense, weights: readonly Dense[]): Dense[] {
  return weights.map((w) => mulMat(w, x));
}
