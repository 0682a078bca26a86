/** Test helpers that run a Sampler against the float64 reference ({@link reference}). */
import { expect } from "vitest";
import type { SamplerOptions } from "./options.js";
import { Sampler } from "./sampler.js";
import { type ReferenceOptions, reference, referenceDistribution } from "./test-helpers.js";

export const N_DRAWS = 20_000;

/** The reference's options for `s` (its defaults filled in); XTC must be off or certain to fire. */
export function referenceOptions(s: Sampler): ReferenceOptions {
  const o = s.options;
  if (o.xtcProbability !== 0 && o.xtcProbability !== 1) throw new Error("xtcProbability must be 0 or 1 here");
  return {
    temperature: o.temperature,
    topK: o.topK,
    topP: o.topP,
    minP: o.minP,
    typicalP: o.typicalP,
    topNSigma: o.topNSigma,
    dynatempRange: o.dynatempRange,
    dynatempExponent: o.dynatempExponent,
    ...(o.xtcProbability === 1 ? { xtcFiresAt: o.xtcThreshold } : {}),
  };
}

export function draws(sampler: Sampler, logits: Float32Array, count: number): number[] {
  return Array.from({ length: count }, () => sampler.sample(logits));
}

/**
 * Draws N_DRAWS tokens and checks every id's frequency against the reference probability: ids with
 * probability 0 (outside top-k or the nucleus, -Infinity) never appear; the others lie within 4.5
 * standard deviations (binomial) plus one count. Returns the reference support size.
 */
export function expectMatchesReference(logits: Float32Array, o: SamplerOptions & { seed: number }): number {
  const sampler = new Sampler(o);
  const p = referenceDistribution(logits, referenceOptions(sampler));
  const counts = new Float64Array(logits.length);
  for (let t = 0; t < N_DRAWS; t++) counts[sampler.sample(logits)]!++;
  let support = 0;
  for (let i = 0; i < logits.length; i++) {
    const pi = p[i]!;
    if (pi === 0) {
      expect(counts[i], `id ${i} lies outside top-k/top-p but was drawn`).toBe(0);
      continue;
    }
    support++;
    const f = counts[i]! / N_DRAWS;
    const tol = 4.5 * Math.sqrt((pi * (1 - pi)) / N_DRAWS) + 1 / N_DRAWS;
    expect(Math.abs(f - pi), `id ${i}: frequency ${f} vs probability ${pi}`).toBeLessThanOrEqual(tol);
  }
  return support;
}

/** A sampler whose uniform draws (the draw's and XTC's) come from `u()` instead of its generators. */
export function withUniform(o: ConstructorParameters<typeof Sampler>[0], u: () => number): Sampler {
  const s = new Sampler(o);
  const g = s as unknown as { rng: { nextDouble: () => number }; xtcRng: { nextFloat: () => number } };
  g.rng.nextDouble = u;
  g.xtcRng.nextFloat = u;
  return s;
}

/**
 * Exact check, no statistics: the sampler maps the uniform draw u to the id whose cumulative
 * interval holds u. Probing the middle of a reference interval must give that interval's id, and u just below 1 the last id of the support. Returns the support size.
 */
export function expectIntervalsMatchReference(logits: Float32Array, o: SamplerOptions): number {
  const { ids, probs } = reference(logits, referenceOptions(new Sampler(o)));
  let u = 0;
  const s = withUniform({ ...o, seed: 0 }, () => u);
  // Every interval of a small support; about 60 spread over a large one (there each call sorts).
  const stride = ids.length <= 300 ? 1 : Math.floor(ids.length / 60);
  let lo = 0;
  const got: number[] = [];
  const want: number[] = [];
  probs.forEach((p, j) => {
    if (j % stride === 0 || j === ids.length - 1) {
      u = lo + p / 2;
      got.push(s.sample(logits));
      want.push(ids[j]!);
    }
    lo += p;
  });
  expect(got).toEqual(want);
  // The ends: u = 0 gives the first id and u → 1 the last, so the sampler's support has no extra id
  // before or after the reference's.
  u = 0;
  expect(s.sample(logits)).toBe(ids[0]);
  u = 1 - 2 ** -53;
  expect(s.sample(logits)).toBe(ids[ids.length - 1]);
  return ids.length;
}
