import { describe, expect, it } from "vitest";
import { Context } from "../context.js";
import type { Model } from "../model.js";
import { loadSynthetic } from "../test-helpers.js";

// Greedy output under speculative decoding is plain decoding's only if a verification (the pending
// token and its drafts in one decode, the rejected drafts then removed) leaves every later logit
// with the bits of one-token decoding: the products must give a column the same float whatever the
// batch it is in. Up to 4 tokens a decode the dot kernels do so by themselves
// (native/cpu/quants_x86_impl.h dot_legacy_n: one accumulator count for every column count); from
// 8 columns on, the AVX-512 panel GEMM sums in another order, so a verification decodes with
// `batchInvariant` (its programs keep every product on the dot kernels). The "small" preset: K of
// 256 and 512, 8 and 16 blocks (a row of fewer blocks than accumulators would not tell).

const TYPES = ["q8_0", "q4_0", "q4_k", "f16"] as const;
const prompt = Array.from({ length: 40 }, (_, i) => 3 + ((i * 7) % 50));
const next = Array.from({ length: 20 }, (_, i) => 5 + ((i * 11) % 40));

/**
 * Every step's logits over `next`, a token a decode, but at step `at` the token and `drafts` more
 * in one decode (row 0 kept, the drafts removed again). An F32 cache, so that a key or value a
 * verification computes otherwise is not hidden by rounding to f16.
 */
async function steps(
  model: Model,
  at: number,
  drafts: number,
  batchInvariant = false,
): Promise<Float32Array[]> {
  const ctx = new Context(model, { nCtx: 128, kvDtype: "f32" });
  try {
    await ctx.decode({ tokens: prompt, seq: 0, logits: "last" });
    const rows: Float32Array[] = [];
    for (let i = 0; i < next.length; i++) {
      const pos = ctx.used();
      if (i === at) {
        const lg = await ctx.decode({
          tokens: [next[i]!, ...next.slice(0, drafts)],
          seq: 0,
          logits: "all",
          batchInvariant,
        });
        rows.push(lg.get(0).slice());
        ctx.seqRm(0, pos + 1, -1);
      } else rows.push((await ctx.decode({ tokens: [next[i]!], seq: 0, logits: "last" })).last().slice());
    }
    return rows;
  } finally {
    ctx.dispose();
  }
}

/** How many logits of the steps from `from` on differ in their bits. */
function differing(a: Float32Array[], b: Float32Array[], from: number): number {
  let n = 0;
  for (let i = from; i < a.length; i++)
    for (let j = 0; j < a[i]!.length; j++) if (!Object.is(a[i]![j], b[i]![j])) n++;
  return n;
}

describe("a verification leaves later logits bit-identical (quantized weights, CPU)", () => {
  for (const type of TYPES) {
    it(`${type}: 2-4 tokens on the dot kernels`, async () => {
      const { model, dispose } = await loadSynthetic({ preset: "small", arch: "qwen2", type, seed: 21 });
      try {
        const plain = await steps(model, -1, 0);
        for (const [at, drafts] of [
          [1, 1],
          [2, 2],
          [4, 3],
        ] as const)
          expect(
            differing(await steps(model, at, drafts), plain, at),
            `${type}: ${drafts} rejected draft(s) at step ${at}`,
          ).toBe(0);
      } finally {
        dispose();
      }
    });

    it(`${type}: 9 and 17 tokens with batchInvariant, the panel GEMM allowed`, async () => {
      const { model, runtime, dispose } = await loadSynthetic(
        { preset: "small", arch: "qwen2", type, seed: 21 },
        { panelGemm: true },
      );
      try {
        const plain = await steps(model, -1, 0);
        for (const [at, drafts] of [
          [1, 8],
          [3, 16],
        ] as const)
          expect(
            differing(await steps(model, at, drafts, true), plain, at),
            `${type}: ${drafts} rejected drafts at step ${at}`,
          ).toBe(0);
        // (where the panel GEMM exists, the test sees it: without the flag the bits differ)
        if ((runtime as unknown as { simd: string }).simd === "avx512")
          expect(differing(await steps(model, 3, 16, false), plain, 3)).toBeGreaterThan(0);
      } finally {
        dispose();
      }
    });
  }
});
