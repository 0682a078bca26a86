import type { Candidates } from "./candidates.js";

/** Reusable buffers of {@link typical}. */
export interface TypicalScratch {
  order: Float64Array;
  pos: Uint32Array;
}

/**
 * Locally typical sampling: with p the temperature-1 softmax of the candidates and H its entropy,
 * ranks tokens by |−ln p − H| (closest to the expected surprise first) and keeps the smallest such
 * set whose cumulative probability is ≥ `typicalP`, at least one token. The survivors are then
 * sorted by logit again. `typicalP >= 1` is a no-op. Sorts the whole candidate set.
 */
export function typical(c: Candidates, typicalP: number, scratch: TypicalScratch): void {
  if (typicalP >= 1 || c.size <= 1) return;
  c.sort();
  c.softmax();
  const { ids, probs, size } = c;
  let h = 0;
  for (let j = 0; j < size; j++) {
    const p = probs[j]!;
    if (p > 0) h -= p * Math.log(p);
  }
  if (scratch.order.length < size) {
    scratch.order = new Float64Array(size);
    scratch.pos = new Uint32Array(size);
  }
  // Sort positions by |−ln p − H|; ties by position (the logit order). Keys pack the position.
  const order = scratch.order.subarray(0, size);
  const pos = scratch.pos.subarray(0, size);
  for (let j = 0; j < size; j++) pos[j] = j;
  const score = (j: number): number => {
    const p = probs[j]!;
    return p > 0 ? Math.abs(-Math.log(p) - h) : Infinity;
  };
  for (let j = 0; j < size; j++) order[j] = score(j);
  pos.sort((a, b) => order[a]! - order[b]! || a - b);
  let cum = 0;
  let keep = size;
  for (let r = 0; r < size; r++) {
    cum += probs[pos[r]!]!;
    if (cum >= typicalP) {
      keep = r + 1;
      break;
    }
  }
  const kept = pos.subarray(0, keep).sort();
  for (let r = 0; r < keep; r++) ids[r] = ids[kept[r]!]!;
  c.size = keep;
  c.partial = false;
}
