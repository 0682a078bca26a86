import type { Candidates } from "./candidates.js";

/**
 * top-n-sigma: keeps the candidates whose logit is ≥ max − n·σ, where σ is the population standard
 * deviation of the candidates' logits (float64). `n <= 0` is a no-op. With a `+Infinity` logit,
 * only the `+Infinity` logits stay.
 */
export function topNSigma(c: Candidates, n: number): void {
  if (n <= 0 || c.size <= 1) return;
  const { ids, logits, size } = c;
  const max = c.max();
  if (max === Infinity) {
    c.keepAtLeast(Infinity);
    return;
  }
  let sum = 0;
  for (let j = 0; j < size; j++) sum += logits[ids[j]!]!;
  const mean = sum / size;
  let acc = 0;
  for (let j = 0; j < size; j++) {
    const d = logits[ids[j]!]! - mean;
    acc += d * d;
  }
  c.keepAtLeast(max - n * Math.sqrt(acc / size));
}
