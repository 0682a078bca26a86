import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context } from "./context.js";
import { generate } from "./generate.js";
import type { Model } from "./model.js";
import { ModelDrafter } from "./speculative/model-drafter.js";
import { haveStories, loadStories } from "./test-helpers.js";

/**
 * The chi-square statistic of two equal-sized samples' counts (test of homogeneity), categories
 * with fewer than 10 draws in both together pooled into one, and its degrees of freedom.
 */
export function chiSquareTwoSample(
  a: Map<number, number>,
  b: Map<number, number>,
): { x2: number; df: number } {
  const cats: [number, number][] = [];
  let restA = 0;
  let restB = 0;
  for (const c of new Set([...a.keys(), ...b.keys()])) {
    const x = a.get(c) ?? 0;
    const y = b.get(c) ?? 0;
    if (x + y < 10) {
      restA += x;
      restB += y;
    } else cats.push([x, y]);
  }
  if (restA + restB > 0) cats.push([restA, restB]);
  let x2 = 0;
  for (const [x, y] of cats) x2 += (x - y) ** 2 / (x + y);
  return { x2, df: cats.length - 1 };
}

/** The chi-square value exceeded with probability 0.001 (Wilson–Hilferty). */
export function chiSquareCritical001(df: number): number {
  const z = 3.0902;
  const h = 2 / (9 * df);
  return df * (1 - h + z * Math.sqrt(h)) ** 3;
}

describe.skipIf(!haveStories)("speculative sampling keeps the target's distribution (stories260K)", () => {
  let model: Model;
  let dispose = () => {};
  let ctx: Context;
  let draftCtx: Context;
  beforeAll(async () => {
    ({ model, dispose } = await loadStories(1));
    ctx = new Context(model, { nCtx: 64 });
    draftCtx = new Context(model, { nCtx: 64 });
  });
  afterAll(() => {
    ctx?.dispose();
    draftCtx?.dispose();
    dispose();
  });

  it("the 4th and 6th tokens at temperature 1: speculative and plain samples (other seeds) agree by chi-square", async () => {
    const N = 1200;
    // a draft model that is not the target: the target's logits at temperature 1 are drafted greedily,
    // so drafts are accepted only as often as the sampled token is the argmax
    const drafter = new ModelDrafter(draftCtx);
    const counts = () => [new Map<number, number>(), new Map<number, number>()];
    const plain = counts();
    const spec = counts();
    let drafted = 0;
    let accepted = 0;
    const sampler = (seed: number) => ({ temperature: 1, topK: 0, topP: 1, minP: 0, seed });
    for (let i = 0; i < N; i++) {
      for (const [useSpec, into] of [
        [false, plain],
        [true, spec],
      ] as const) {
        const g = generate(ctx, "Once upon a time", {
          maxTokens: 6,
          reusePrefix: false,
          sampler: sampler(useSpec ? i + 1 : N + i + 1),
          ...(useSpec ? { speculative: { drafter, adaptive: false, draftMax: 4 } } : {}),
        });
        await g.complete();
        for (const [k, at] of [
          [0, 3],
          [1, 5],
        ] as const) {
          const t = g.tokens[at] ?? -1;
          into[k]!.set(t, (into[k]!.get(t) ?? 0) + 1);
        }
        if (useSpec) {
          drafted += g.timings!.speculative!.drafted;
          accepted += g.timings!.speculative!.accepted;
        }
      }
    }
    // both paths of verification ran many times (drafts stop at the 6th token: ~0.8 rejections a run)
    expect(accepted).toBeGreaterThan(N);
    expect(drafted - accepted).toBeGreaterThan(N / 2);
    for (const k of [0, 1]) {
      const { x2, df } = chiSquareTwoSample(plain[k]!, spec[k]!);
      expect(df).toBeGreaterThan(5);
      expect(x2).toBeLessThan(chiSquareCritical001(df));
    }
  }, 600_000);
});
