import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context } from "./context.js";
import type { Logits } from "./logits.js";
import type { Model } from "./model.js";
import { loadStories } from "./test-helpers.js";

/** The k best ids of a row: larger logit first, lower id first on ties (the sampler's order). */
function topIds(row: Float32Array, k: number): number[] {
  const ids = Array.from(row.keys());
  ids.sort((a, b) => (row[a]! > row[b]! ? -1 : row[a]! < row[b]! ? 1 : a - b));
  return ids.slice(0, k);
}

/** Every row's candidates are its k best ids, and their logits those of the row. */
function expectCandidates(l: Logits, k: number): void {
  expect(l.nCandidates).toBe(k);
  for (const i of l.indices) {
    const c = l.candidates(i);
    expect(c.length).toBe(k);
    const row = l.get(i);
    expect(Array.from(c)).toEqual(topIds(row, k));
    expect(Array.from(l.candidateLogits(i))).toEqual(Array.from(c, (id) => row[id]!));
  }
}

// ContextOptions.candidates: the graph's TOP_K of the logits, read back with them.
describe("Context candidates (stories260K)", () => {
  let model: Model;
  let dispose = () => {};
  const ids = (p: string) => model.tokenizer.encode(p, { addSpecial: true });

  beforeAll(async () => {
    ({ model, dispose } = await loadStories());
  });
  afterAll(() => dispose());

  it.each([false, true])(
    "are each row's best ids (reuseLogits %s), over micro-batches and sequences",
    async (reuseLogits) => {
      const k = 16;
      const ctx = new Context(model, {
        nCtx: 255,
        nSeqMax: 3,
        kvUnified: false,
        nUbatch: 7,
        reuseLogits,
        candidates: k,
      });
      try {
        expect(ctx.nCandidates).toBe(k);
        const prompt = ids("Once upon a time, there was a little girl named Lily. She loved to play");
        expect(prompt.length).toBeGreaterThan(14); // three micro-batches of 7, gathered
        expectCandidates(await ctx.decode({ tokens: prompt, seq: 0, logits: "all" }), k);
        for (const seqs of [
          [0, 1, 2],
          [2, 0],
        ]) {
          const step = await ctx.decode({ tokens: seqs.map((s) => 10 + s), seq: seqs, logits: "all" });
          expect(step.count).toBe(seqs.length);
          expectCandidates(step, k);
        }
      } finally {
        ctx.dispose();
      }
    },
  );

  it("are refused when not asked for, stale after the next call with reuseLogits, and the option is checked", async () => {
    const plain = new Context(model, { nCtx: 64 });
    const reuse = new Context(model, { nCtx: 64, reuseLogits: true, candidates: 4 });
    try {
      const l = await plain.decode({ tokens: ids("The cat"), seq: 0, logits: "last" });
      expect(l.nCandidates).toBe(0);
      expect(() => l.candidates(l.indices[0]!)).toThrow(
        expect.objectContaining({ code: "INVALID_ARGUMENT" }),
      );
      const first = await reuse.decode({ tokens: ids("The cat"), seq: 0, logits: "last" });
      const i = first.indices[0]!;
      expect(first.candidates(i).length).toBe(4);
      expect(() => first.candidates(i + 1)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
      await reuse.decode({ tokens: [42], seq: 0, logits: "last" });
      expect(() => first.candidates(i)).toThrow(expect.objectContaining({ code: "STALE_LOGITS" }));
    } finally {
      plain.dispose();
      reuse.dispose();
    }
    for (const bad of [-1, 2.5, model.hparams.nVocab + 1])
      expect(() => new Context(model, { nCtx: 64, candidates: bad })).toThrow(
        expect.objectContaining({ code: "INVALID_ARGUMENT" }),
      );
  });

  // Batch.candidatesOnly: the ids and their logits come back, the rows stay on the device until the
  // next decode (Logits.fetch reads one), the same values as a decode that reads everything.
  it.each([false, true])("candidatesOnly reads only the candidates (reuseLogits %s)", async (reuseLogits) => {
    const k = 8;
    const o = { nCtx: 128, nSeqMax: 2, kvUnified: false, nUbatch: 16, candidates: k };
    const full = new Context(model, o);
    const only = new Context(model, { ...o, reuseLogits });
    try {
      const prompt = ids("Once upon a time");
      const a = await full.decode({ tokens: prompt, seq: 0, logits: "last" });
      const b = await only.decode({ tokens: prompt, seq: 0, logits: "last", candidatesOnly: true });
      const i = prompt.length - 1;
      expect(b.rowsRead).toBe(false);
      expect(a.rowsRead).toBe(true);
      expect(Array.from(b.candidates(i))).toEqual(Array.from(a.candidates(i)));
      expect(Array.from(b.candidateLogits(i))).toEqual(Array.from(a.candidateLogits(i)));
      for (const read of [() => b.get(i), () => b.data, () => b.last()])
        expect(read).toThrow(expect.objectContaining({ code: "LOGITS_NOT_READ" }));
      expect(Array.from(await b.fetch(i))).toEqual(Array.from(a.get(i)));
      expect(Array.from(await a.fetch(i))).toEqual(Array.from(a.get(i)));
      await expect(b.fetch(i + 1)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      // a step of two sequences: each row fetched, then stale after the next decode
      await full.decode({ tokens: prompt, seq: 1, logits: "none" });
      await only.decode({ tokens: prompt, seq: 1, logits: "none", candidatesOnly: true });
      const step = { tokens: [10, 11], seq: [0, 1], logits: "all" as const };
      const fa = await full.decode(step);
      const fb = await only.decode({ ...step, candidatesOnly: true });
      for (const j of [0, 1]) {
        expect(Array.from(fb.candidateLogits(j))).toEqual(Array.from(fa.candidateLogits(j)));
        expect(Array.from(await fb.fetch(j))).toEqual(Array.from(fa.get(j)));
      }
      await only.decode({ tokens: [12], seq: 0, logits: "last" });
      await expect(fb.fetch(0)).rejects.toMatchObject({ code: "STALE_LOGITS" });
      // refused: more than a micro-batch, no candidates, not a boolean
      await expect(
        only.decode({
          tokens: ids("one two three four five six seven eight nine ten eleven twelve thirteen fourteen"),
          seq: 1,
          candidatesOnly: true,
        }),
      ).rejects.toThrow(/at most nUbatch \(16\) tokens/);
      const plain = new Context(model, { nCtx: 64 });
      try {
        await expect(plain.decode({ tokens: [1], candidatesOnly: true })).rejects.toThrow(/candidates: K/);
      } finally {
        plain.dispose();
      }
      await expect(
        only.decode({ tokens: [1], seq: 0, candidatesOnly: 1 as unknown as boolean }),
      ).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    } finally {
      full.dispose();
      only.dispose();
    }
  });
});
