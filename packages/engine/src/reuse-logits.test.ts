import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context } from "./context.js";
import type { Model } from "./model.js";
import { loadStories } from "./test-helpers.js";

// reuseLogits: every decode call's logits are read into one buffer the context keeps (llama.cpp's
// contract: valid until the next decode). Checked against a context that returns new arrays.
describe("Context reuseLogits (stories260K)", () => {
  let model: Model;
  let dispose = () => {};
  const ids = (p: string) => model.tokenizer.encode(p, { addSpecial: true });

  beforeAll(async () => {
    ({ model, dispose } = await loadStories());
  });
  afterAll(() => dispose());

  it("gives the logits of a context with new arrays, over several micro-batches and sequences", async () => {
    const opts = { nCtx: 255, nSeqMax: 3, kvUnified: false, nUbatch: 7 } as const;
    const plain = new Context(model, opts);
    const reuse = new Context(model, { ...opts, reuseLogits: true });
    try {
      const prompt = ids("Once upon a time, there was a little girl named Lily. She loved to play");
      expect(prompt.length).toBeGreaterThan(14); // three micro-batches of 7
      for (const ctx of [plain, reuse]) await ctx.decode({ tokens: prompt, seq: 0, logits: "none" });
      // every token's logits: rows from each of the micro-batches, gathered in place
      const a = await plain.decode({ tokens: prompt, seq: 1, logits: "all" });
      const b = await reuse.decode({ tokens: prompt, seq: 1, logits: "all" });
      expect(b.count).toBe(prompt.length);
      expect(Array.from(b.indices)).toEqual(Array.from(a.indices));
      expect(Array.from(b.data)).toEqual(Array.from(a.data));
      // a step of three sequences, then one with fewer rows than the buffer holds
      for (const seqs of [
        [0, 1, 2],
        [2, 0],
      ]) {
        const step = { tokens: seqs.map((s) => 10 + s), seq: seqs, logits: "all" as const };
        const x = await plain.decode(step);
        const y = await reuse.decode(step);
        expect(y.count).toBe(seqs.length);
        expect(y.data.length).toBe(seqs.length * model.hparams.nVocab);
        for (let i = 0; i < seqs.length; i++) expect(Array.from(y.get(i))).toEqual(Array.from(x.get(i)));
      }
    } finally {
      plain.dispose();
      reuse.dispose();
    }
  });

  it("grows its buffer to twice the rows it held (up to nSeqMax), so steps that gain a row reuse it", async () => {
    const opts = { nCtx: 256, nSeqMax: 4, kvUnified: false } as const;
    const plain = new Context(model, opts);
    const reuse = new Context(model, { ...opts, reuseLogits: true });
    try {
      const buffers: ArrayBufferLike[] = [];
      for (const n of [1, 2, 3, 4]) {
        const seqs = Array.from({ length: n }, (_, i) => i);
        const step = { tokens: seqs.map((s) => 20 + s + n), seq: seqs, logits: "all" as const };
        const x = await plain.decode(step);
        const y = await reuse.decode(step);
        for (let i = 0; i < n; i++) expect(Array.from(y.get(i))).toEqual(Array.from(x.get(i)));
        buffers.push(y.data.buffer);
      }
      // 1 row, then 2, then 4 (twice 2) held for the 3-row step, which the 4-row step reuses
      expect(buffers[1]).not.toBe(buffers[0]);
      expect(buffers[2]).not.toBe(buffers[1]);
      expect(buffers[3]).toBe(buffers[2]);
    } finally {
      plain.dispose();
      reuse.dispose();
    }
  });

  it("the logits of an earlier call throw STALE_LOGITS once a later call overwrote them", async () => {
    const ctx = new Context(model, { nCtx: 128, reuseLogits: true });
    try {
      const first = await ctx.decode({ tokens: ids("The cat sat"), seq: 0, logits: "last" });
      const row = Array.from(first.last());
      expect(first.has(first.indices[0]!)).toBe(true);
      const second = await ctx.decode({ tokens: [42], seq: 0, logits: "last" });
      expect(Array.from(second.last())).not.toEqual(row);
      const stale = expect.objectContaining({ code: "STALE_LOGITS" });
      expect(() => first.last()).toThrow(stale);
      expect(() => first.get(first.indices[0]!)).toThrow(stale);
      expect(() => first.data).toThrow(stale);
      // a call that asks for no logits also ends the earlier call's
      await ctx.decode({ tokens: [7], seq: 0, logits: "none" });
      expect(() => second.last()).toThrow(stale);
    } finally {
      ctx.dispose();
    }
  });
});
