import type { Candidates } from "./candidates.js";

/**
 * XTC, "exclude top choices": with probability `probability` (when the uniform `chance()`, drawn
 * only when XTC can act, as llama.cpp draws it, is at most `probability`),
 * among the candidates whose temperature-1 probability is ≥ `threshold`, removes all but the least
 * probable one; nothing happens when fewer than two reach the threshold. `probability <= 0` or
 * `threshold > 0.5` is a no-op.
 */
export function xtc(c: Candidates, probability: number, threshold: number, chance: () => number): void {
  if (probability <= 0 || threshold > 0.5 || c.size < 2) return;
  c.sort(); // sorted whether or not it fires, so the draw order does not depend on the chance
  if (chance() > probability) return;
  c.softmax();
  let above = 0;
  while (above < c.size && c.probs[above]! >= threshold) above++;
  if (above < 2) return;
  c.ids.copyWithin(0, above - 1, c.size);
  c.size -= above - 1;
}
