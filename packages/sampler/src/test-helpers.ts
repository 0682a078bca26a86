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

/** Options the reference needs: the truncation stages and the temperature (off when absent). */
export interface ReferenceOptions {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  typicalP?: number;
  topNSigma?: number;
  /** XTC's threshold, for a draw where XTC fires (its chance came up); absent: XTC does nothing. */
  xtcFiresAt?: number;
  /** Dynamic temperature's range (0 or absent: off) and exponent (default 1). */
  dynatempRange?: number;
  dynatempExponent?: number;
}

/** The largest of `xs` (no spread: vocabularies are too long for argument lists). */
function maxOf(xs: number[]): number {
  let m = -Infinity;
  for (const x of xs) if (x > m) m = x;
  return m;
}

/** The temperature-1 (or `invT`) softmax of `vs`, float64. */
function softmax(vs: number[], invT = 1): number[] {
  const max = maxOf(vs);
  const w = vs.map((v) => (max === Infinity ? (v === Infinity ? 1 : 0) : Math.exp((v - max) * invT)));
  const z = w.reduce((a, b) => a + b, 0);
  return w.map((x) => x / z);
}

/**
 * The sampler's distribution straight from each stage's definition, with full sorts in float64:
 * top-k → typical → top-p → min-p → XTC → top-n-sigma → temperature. `ids` in the order the sampler
 * walks them (most probable first; vocabulary order when no stage needs an order), `probs` theirs.
 */
export function reference(logits: Float32Array, o: ReferenceOptions): { ids: number[]; probs: number[] } {
  const n = logits.length;
  const v = (i: number): number => logits[i]!;
  const finite = Array.from({ length: n }, (_, i) => i).filter((i) => v(i) !== -Infinity);
  const sorted = [...finite].sort((a, b) => v(b) - v(a) || a - b);
  const typicalP = o.typicalP ?? 1;
  const topKCuts = o.topK > 0 && o.topK < n;
  const ordered = topKCuts || o.topP < 1 || o.minP > 0 || typicalP < 1 || o.xtcFiresAt !== undefined;
  let ids = ordered ? sorted : finite;
  if (topKCuts) ids = ids.slice(0, o.topK);
  if (typicalP < 1 && ids.length > 1) {
    const p = softmax(ids.map(v));
    const h = -p.reduce((a, x) => a + (x > 0 ? x * Math.log(x) : 0), 0);
    const score = p.map((x) => (x > 0 ? Math.abs(-Math.log(x) - h) : Infinity));
    const byScore = ids.map((_, j) => j).sort((a, b) => score[a]! - score[b]! || a - b);
    let cum = 0;
    let keep = byScore.length;
    for (let r = 0; r < byScore.length; r++) {
      cum += p[byScore[r]!]!;
      if (cum >= typicalP) {
        keep = r + 1;
        break;
      }
    }
    const kept = new Set(byScore.slice(0, keep));
    ids = ids.filter((_, j) => kept.has(j));
  }
  if (o.topP < 1) {
    const p = softmax(ids.map(v));
    let cum = 0;
    for (let j = 0; j < ids.length; j++) {
      cum += p[j]!;
      if (cum >= o.topP) {
        ids = ids.slice(0, j + 1);
        break;
      }
    }
  }
  if (o.minP > 0) {
    const p = softmax(ids.map(v));
    const pmax = maxOf(p);
    ids = ids.filter((_, j) => p[j]! >= o.minP * pmax);
  }
  if (o.xtcFiresAt !== undefined && o.xtcFiresAt <= 0.5) {
    const p = softmax(ids.map(v));
    const above = p.filter((x) => x >= o.xtcFiresAt!).length;
    if (above >= 2) ids = ids.slice(above - 1);
  }
  if ((o.topNSigma ?? -1) > 0 && ids.length > 1) {
    const vs = ids.map(v);
    const mean = vs.reduce((a, b) => a + b, 0) / vs.length;
    const sd = Math.sqrt(vs.reduce((a, x) => a + (x - mean) ** 2, 0) / vs.length);
    const max = maxOf(vs);
    ids = ids.filter((i) => v(i) >= max - o.topNSigma! * sd);
  }
  let t = o.temperature;
  if ((o.dynatempRange ?? 0) > 0 && ids.length > 1) {
    // llama.cpp's temp_ext: the entropy of the kept ids at temperature 1 over its largest, ln(n)
    const p = softmax(ids.map(v));
    const h = -p.reduce((a, x) => a + (x > 0 ? x * Math.log(x) : 0), 0);
    const lo = Math.max(0, t - o.dynatempRange!);
    const hi = t + o.dynatempRange!;
    t = lo + (hi - lo) * (h / Math.log(ids.length)) ** (o.dynatempExponent ?? 1);
  }
  return { ids, probs: softmax(ids.map(v), 1 / t) };
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
