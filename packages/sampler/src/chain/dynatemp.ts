import type { Candidates } from "./candidates.js";

/**
 * Dynamic temperature (llama.cpp's `temp_ext`, its `dynatemp_range` / `dynatemp_exponent`): with a
 * range > 0 and more than one candidate, the temperature between max(0, t − range) and t + range
 * by the candidates' entropy at temperature 1, normalized by its largest value ln(size) and raised to
 * `exponent` — a flat distribution draws hot, a peaked one cold. Else `temperature` as it is.
 * Leaves the candidates' probabilities as the temperature-1 softmax.
 */
export function dynamicTemperature(
  c: Candidates,
  temperature: number,
  range: number,
  exponent: number,
): number {
  if (range <= 0 || c.size <= 1) return temperature;
  const lo = Math.max(0, temperature - range);
  const hi = temperature + range;
  c.softmax(1);
  let entropy = 0;
  for (let j = 0; j < c.size; j++) {
    const p = c.probs[j]!;
    if (p > 0) entropy -= p * Math.log(p);
  }
  return lo + (hi - lo) * (entropy / Math.log(c.size)) ** exponent;
}

/** The candidate with the largest logit (the lower id on a tie): a draw at temperature 0. */
export function candidateArgmax(c: Candidates): number {
  let best = c.ids[0]!;
  for (let j = 1; j < c.size; j++) {
    const id = c.ids[j]!;
    const v = c.logits[id]!;
    const b = c.logits[best]!;
    if (v > b || (v === b && id < best)) best = id;
  }
  return best;
}
