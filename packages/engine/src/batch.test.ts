import { argmax } from "@minfer/sampler";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context } from "./context.js";
import type { Model } from "./model.js";
import { haveStories, loadStories, maxAbsDiff } from "./test-helpers.js";

describe.skipIf(!haveStories)("decode batches (stories260K)", () => {
  let model: Model;
  let dispose = () => {};
  const prompts = ["Once upon a time", "The cat sat", "Lily and Tom went to the park", "One day"];
  const ids = (p: string) => model.tokenizer.encode(p, { addSpecial: true });

  beforeAll(async () => {
    ({ model, dispose } = await loadStories());
  });
  afterAll(() => dispose());

  /** Greedy continuation of one prompt alone in its own context; the logits of every step. */
  async function alone(
    prompt: number[],
    steps: number,
  ): Promise<{ tokens: number[]; logits: Float32Array[] }> {
    const ctx = new Context(model, { nCtx: 128 });
    try {
      const logits = [await ctx.eval(prompt)];
      const tokens: number[] = [];
      for (let i = 0; i < steps; i++) {
        tokens.push(argmax(logits.at(-1)!));
        logits.push(await ctx.eval([tokens.at(-1)!]));
      }
      return { tokens, logits };
    } finally {
      ctx.dispose();
    }
  }

  it.each([true, false])(
    "4 sequences decoded together give the tokens and logits of each decoded alone (kvUnified %s)",
    async (kvUnified) => {
      const steps = 24;
      const single = [];
      for (const p of prompts) single.push(await alone(ids(p), steps));
      const ctx = new Context(model, { nCtx: 256, nSeqMax: 4, kvUnified });
      try {
        // One batch with all four prompts (interleaved by sequence), logits of each one's last token.
        const tokens: number[] = [];
        const seq: number[] = [];
        prompts.forEach((p, s) => {
          for (const t of ids(p)) {
            tokens.push(t);
            seq.push(s);
          }
        });
        let out = await ctx.decode({ tokens, seq });
        let builds = 0;
        expect(out.count).toBe(4);
        let rows = Array.from(out.indices, (i) => out.get(i));
        const got: number[][] = [[], [], [], []];
        for (let step = 0; step <= steps; step++) {
          for (let s = 0; s < 4; s++)
            expect(maxAbsDiff(rows[s]!, single[s]!.logits[step]!)).toBeLessThan(2e-4);
          if (step === steps) break;
          const next = rows.map((r) => argmax(r));
          for (let s = 0; s < 4; s++) got[s]!.push(next[s]!);
          out = await ctx.decode({ tokens: next, seq: [0, 1, 2, 3], logits: "all" });
          rows = [0, 1, 2, 3].map((i) => out.get(i));
          if (step === 0) builds = ctx.stats().graphs.builds;
        }
        for (let s = 0; s < 4; s++) expect(got[s]).toEqual(single[s]!.tokens);
        // A region per sequence keeps each one's cells one run: every step attends by spans over the
        // whole cache, so one graph serves them all (a unified cache needs a mask per window size).
        if (!kvUnified) expect(ctx.stats().graphs.builds).toBe(builds);
        else expect(ctx.stats().graphs.builds).toBeGreaterThan(builds);
      } finally {
        ctx.dispose();
      }
    },
  );

  it("prepareDecode builds the steps of 1…N generating sequences ahead: those steps build nothing", async () => {
    const ctx = new Context(model, { nCtx: 256, nSeqMax: 4, kvUnified: false });
    try {
      expect(() => ctx.prepareDecode([0])).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
      expect(() => ctx.prepareDecode([ctx.nUbatch + 1])).toThrow(/sizes must be integers/);
      // Prompts first (their shapes are not prepared), then prepare, then steps of 4, 3, 2, 1 tokens.
      for (let s = 0; s < 4; s++) await ctx.decode({ tokens: ids(prompts[s]!), seq: s, logits: "none" });
      await ctx.prepareDecode([1, 2, 3, 4]);
      const builds = ctx.stats().graphs.builds;
      for (let k = 4; k >= 1; k--) {
        const seq = Array.from({ length: k }, (_, s) => s);
        const out = await ctx.decode({ tokens: seq.map(() => 1), seq, logits: "all" });
        expect(out.count).toBe(k);
      }
      expect(ctx.stats().graphs.builds).toBe(builds);
    } finally {
      ctx.dispose();
    }
  });

  it("a prompt prefilled at once or in micro-batches of 1, 7 and 64 tokens gives the same logits", async () => {
    const text =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun. ".repeat(
        3,
      );
    const prompt = ids(text);
    expect(prompt.length).toBeGreaterThan(64);
    const results: Float32Array[] = [];
    for (const nUbatch of [512, 1, 7, 64]) {
      const ctx = new Context(model, { nCtx: 256, nUbatch });
      try {
        const out = await ctx.decode({ tokens: prompt, logits: "all" });
        expect(out.count).toBe(prompt.length);
        expect(ctx.lastTiming.ubatches).toBe(Math.ceil(prompt.length / Math.min(nUbatch, 256)));
        results.push(out.data);
      } finally {
        ctx.dispose();
      }
    }
    for (const r of results.slice(1)) expect(maxAbsDiff(r, results[0]!)).toBeLessThan(2e-4);
  });

  it("returns the logits of the flagged tokens only, each at its batch index", async () => {
    const prompt = ids("Once upon a time there was");
    const ctx = new Context(model, { nCtx: 64 });
    const ref = new Context(model, { nCtx: 64 });
    try {
      const flags = prompt.map((_, i) => i === 2 || i === prompt.length - 1);
      const out = await ctx.decode({ tokens: prompt, logits: flags });
      expect(Array.from(out.indices)).toEqual([2, prompt.length - 1]);
      const all = await ref.decode({ tokens: prompt, logits: "all" });
      expect(maxAbsDiff(out.get(2), all.get(2))).toBeLessThan(2e-4);
      expect(maxAbsDiff(out.last(), all.get(prompt.length - 1))).toBeLessThan(2e-4);
      expect(() => out.get(1)).toThrow(/no logits for batch token 1/);
      const none = await ctx.decode({ tokens: [argmax(out.last())], logits: "none" });
      expect(none.count).toBe(0);
    } finally {
      ctx.dispose();
      ref.dispose();
    }
  });

  it("refuses malformed batches with INVALID_ARGUMENT naming the problem, changing nothing", async () => {
    const ctx = new Context(model, { nCtx: 32, nSeqMax: 2 });
    try {
      const bad = [
        [{ tokens: [] }, /empty/],
        [{ tokens: [1, model.hparams.nVocab] }, /token 1 is 512/],
        [{ tokens: [1, -1] }, /token 1 is -1/],
        [{ tokens: [1.5] }, /token 0 is 1.5/],
        [{ tokens: [1, 2], seq: [0, 2] }, /sequence 2/],
        [{ tokens: [1, 2], seq: [0] }, /1 entries for 2 tokens/],
        [{ tokens: [1, 2], logits: [true] }, /one flag per token/],
        [{ tokens: [1, 2], pos: [0, -3] }, /position -3/],
        [{ tokens: [1, 2], pos: [0, 0] }, /INVALID|duplicate|already|twice/i],
        [{ tokens: [1], seq: [[0, 0]] }, /repeat/],
      ] as const;
      for (const [batch, message] of bad) {
        await expect(ctx.decode(batch as never)).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message });
        expect(ctx.stats().used).toBe(0);
      }
      await expect(ctx.decode(undefined as never)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    } finally {
      ctx.dispose();
    }
  });
});
