import { type Candidates, weight } from "./candidates.js";

/**
 * Temperature and the draw: the softmax of the candidates' logits divided by `temperature` (> 0),
 * float64 sums, then the candidate whose cumulative interval holds `u · total`, walking them in
 * their order (most probable first when sorted, else vocabulary order). Returns the token and its
 * probability in that distribution.
 */
export function draw(c: Candidates, temperature: number, u: number): { token: number; p: number } {
  const { ids, probs, size } = c;
  if (size === 1) return { token: ids[0]!, p: 1 };
  const max = c.max();
  const inv = 1 / temperature;
  let total = 0;
  for (let j = 0; j < size; j++) total += probs[j] = weight(c.logits[ids[j]!]!, max, inv);
  const target = u * total;
  let cum = 0;
  let last = 0;
  for (let j = 0; j < size; j++) {
    const w = probs[j]!;
    if (w === 0) continue;
    cum += w;
    if (target < cum) return { token: ids[j]!, p: w / total };
    last = j;
  }
  return { token: ids[last]!, p: probs[last]! / total };
}
