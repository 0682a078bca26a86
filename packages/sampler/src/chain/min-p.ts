import type { Candidates } from "./candidates.js";

/**
 * min-p: keeps the candidates whose probability is ≥ `p` × the largest probability, i.e. whose
 * logit is ≥ max + ln(p) (the normalizer cancels, so no softmax and no sort). `p <= 0` is a no-op.
 */
export function minP(c: Candidates, p: number): void {
  if (p <= 0) return;
  c.keepAtLeast(c.max() + Math.log(p));
}
