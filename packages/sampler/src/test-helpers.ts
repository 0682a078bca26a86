/** Test helpers: deterministic logits and an independent float64 reference of the sampler's distribution. */

/** Deterministic pseudo-random numbers for fixtures (an LCG: independent of the sampler's PRNG). */
export function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

/** `n` logits uniform in [lo, hi), rounded to `step` so that some tie. */
export function randomLogits(n: number, seed: number, lo = -5, hi = 5, step = 0.25): Float32Array {
  const r = lcg(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round((lo + (hi - lo) * r()) / step) * step;
  return out;
}

/** Options the reference needs. */
export interface ReferenceOptions {
  temperature: number;
  topK: number;
  topP: number;
}

/**
 * The sampler's distribution straight from the definition, with a full sort in float64: top-k, then
 * top-p on the temperature-1 softmax, then the temperature's softmax. `ids` in the order the sampler
 * walks them (most probable first; vocabulary order when neither top-k nor top-p cuts), `probs` theirs.
 */
export function reference(logits: Float32Array, o: ReferenceOptions): { ids: number[]; probs: number[] } {
  const n = logits.length;
  const finite = Array.from({ length: n }, (_, i) => i).filter((i) => logits[i] !== -Infinity);
  let ids = [...finite].sort((a, b) => logits[b]! - logits[a]! || a - b);
  const max = logits[ids[0]!]!;
  const noCut = (o.topK <= 0 || o.topK >= n) && o.topP >= 1;
  if (o.topK > 0) ids = ids.slice(0, o.topK);
  const p1 = ids.map((i) => Math.exp(logits[i]! - max));
  const z1 = p1.reduce((a, b) => a + b, 0);
  let cum = 0;
  let cut = ids.length;
  for (let j = 0; j < ids.length; j++) {
    cum += p1[j]! / z1;
    if (cum >= o.topP) {
      cut = j + 1;
      break;
    }
  }
  ids = noCut ? finite : ids.slice(0, cut);
  const w = ids.map((i) => Math.exp((logits[i]! - max) / o.temperature));
  const z = w.reduce((a, b) => a + b, 0);
  return { ids, probs: w.map((x) => x / z) };
}

/** {@link reference} as one probability per vocabulary id (0 outside the support). */
export function referenceDistribution(logits: Float32Array, o: ReferenceOptions): Float64Array {
  const { ids, probs } = reference(logits, o);
  const out = new Float64Array(logits.length);
  ids.forEach((id, j) => {
    out[id] = probs[j]!;
  });
  return out;
}
