import { at, type Dense, dense, index } from "./dense.js";

/**
 * Mixture-of-experts product: experts [k, m, nExpert], b [k, nUsed or 1, nTokens], ids I32
 * [nUsed, nTokens] → out [m, nUsed, nTokens] with out[:, e, t] = experts[:, :, ids[e, t]]ᵀ · b[:, e or 0, t].
 */
export function mulMatId(experts: Dense, b: Dense, ids: Dense): Dense {
  const [k, m, nExpert] = experts.ne;
  const [nUsed, nTokens] = ids.ne;
  const out = dense([m, nUsed, nTokens, 1]);
  for (let t = 0; t < nTokens; t++)
    for (let e = 0; e < nUsed; e++) {
      const ex = index(ids.data[at(ids.ne, e, t, 0, 0)]!, nExpert, `mul_mat_id expert id [${e}, ${t}]`);
      const bs = at(b.ne, 0, b.ne[1] === 1 ? 0 : e, t, 0);
      for (let i = 0; i < m; i++) {
        const as = at(experts.ne, 0, i, ex, 0);
        let sum = 0;
        for (let x = 0; x < k; x++) sum += experts.data[as + x]! * b.data[bs + x]!;
        out.data[at(out.ne, i, e, t, 0)] = sum;
      }
    }
  return out;
}
