import { type Candidates, weight } from "./candidates.js";

/**
 * top-p (nucleus): sorts the candidates and keeps the smallest most-probable-first prefix whose
 * cumulative temperature-1 probability is ≥ `p`, at least one token. `p >= 1` is a no-op.
 */
export function topP(c: Candidates, p: number): void {
  if (p >= 1) return;
  c.sort();
  const max = c.max();
  let z = c.zAll;
  if (!c.partial) {
    z = 0;
    for (let j = 0; j < c.size; j++) z += weight(c.logits[c.ids[j]!]!, max, 1);
  }
  c.size = c.topPCut(p, max, z);
  c.partial = false;
}
