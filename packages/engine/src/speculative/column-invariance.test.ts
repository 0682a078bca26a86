import { describe, expect, it } from "vitest";
import { Context } from "../context.js";
import { loadSynthetic } from "../test-helpers.js";

// Greedy output under speculative decoding is plain decoding's only if a verification (the pending
// token and its drafts in one decode, the rejected drafts then removed) leaves every later logit
// with the bits of one-token decoding: the products must give a column the same float whatever the
// batch it is in (native/cpu/quants_x86_impl.h dot_legacy_n: one accumulator count for every
// column count). Up to 4 tokens a decode: below the panel GEMM's 8 columns (which the test
// runtimes turn off anyway). The "small" preset: K of 256 and 512, 8 and 16 blocks (a row of fewer
// blocks than accumulators would not tell).
describe("a verification leaves later logits bit-identical (quantized weights, CPU)", () => {
  for (const type of ["q8_0", "q4_0", "q4_k", "f16"] as const) {
    it(type, async () => {
      const { model, dispose } = await loadSynthetic({ preset: "small", arch: "qwen2", type, seed: 21 });
      try {
        const prompt = Array.from({ length: 40 }, (_, i) => 3 + ((i * 7) % 50));
        const next = Array.from({ length: 12 }, (_, i) => 5 + ((i * 11) % 40));
        // every step's logits (at `at`: row 0 of the verification); an F32 cache, so that a key or
        // value a verification computes otherwise is not hidden by rounding to f16
        const run = async (at: number, drafts: number) => {
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
                });
                rows.push(lg.get(0).slice());
                ctx.seqRm(0, pos + 1, -1);
              } else
                rows.push((await ctx.decode({ tokens: [next[i]!], seq: 0, logits: "last" })).last().slice());
            }
            return rows;
          } finally {
            ctx.dispose();
          }
        };
        const plain = await run(-1, 0);
        const differing = (a: Float32Array, b: Float32Array) => {
          let n = 0;
          for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) n++;
          return n;
        };
        for (const [at, drafts] of [
          [1, 1],
          [2, 2],
          [4, 3],
        ] as const) {
          const rows = await run(at, drafts);
          for (let i = at; i < rows.length; i++)
            expect(
              differing(rows[i]!, plain[i]!),
              `${type}: ${drafts} rejected draft(s) at step ${at}, step ${i}`,
            ).toBe(0);
        }
      } finally {
        dispose();
      }
    });
  }
});
