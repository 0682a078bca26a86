import { describe, expect, it } from "vitest";
import { Context } from "../context.js";
import { Model } from "../model.js";
import { FIXTURES, haveStories, loadStories } from "../test-helpers.js";
import { BatchedModelDrafter } from "./batched-model-drafter.js";
import { DraftDepth } from "./depth.js";
import { checkDraftVocabulary, ModelDrafter } from "./model-drafter.js";
import { NgramDrafter } from "./ngram-drafter.js";

describe("NgramDrafter", () => {
  it("drafts what followed the latest earlier occurrence of the longest matching n-gram", () => {
    const d = new NgramDrafter({ ngramMin: 1, ngramMax: 3 });
    // "7 8 9" occurs at 0 (then 1 2) and at 5 (then 4 4); the latest one wins
    const h = [7, 8, 9, 1, 2, 7, 8, 9, 4, 4, 5, 8, 9];
    expect(d.draft(h, 3)).toEqual([4, 4, 5]);
    // the draft stops at the end of the history
    expect(d.draft([...h, 4, 4], 8)).toEqual([5, 8, 9, 4, 4]);
    // a 3-gram with no earlier occurrence falls back to its last 2 tokens, then 1
    expect(d.draft([1, 2, 3, 9, 2, 3], 2)).toEqual([9, 2]);
    expect(d.draft([1, 2, 3, 9, 2, 3, 6, 3], 2)).toEqual([6, 3]);
    expect(d.draft([1, 2, 3], 4)).toEqual([]);
    expect(d.draft(h, 0)).toEqual([]);
  });

  it("respects ngramMin and follows a history that grows, or starts over on another", () => {
    const d = new NgramDrafter({ ngramMin: 2, ngramMax: 2 });
    expect(d.draft([5, 6, 1, 2, 5], 3)).toEqual([]); // only a 1-gram matches
    const h = [5, 6, 1, 2, 5, 6];
    expect(d.draft(h, 3)).toEqual([1, 2, 5]);
    h.push(1, 2);
    expect(d.draft(h, 2)).toEqual([5, 6]);
    expect(d.draft([3, 4, 9, 3, 4], 2)).toEqual([9, 3]);
    expect(() => new NgramDrafter({ ngramMin: 3, ngramMax: 2 })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
  });
});

describe("DraftDepth", () => {
  const feed = (
    d: DraftDepth,
    rate: number,
    steps: number,
    draftMs: number,
    verify: (n: number) => number,
  ) => {
    for (let i = 0; i < steps; i++) {
      const k = Math.max(d.next(), 1);
      // accepted: the expected count rounded, rejections while some draft is left
      let a = 0;
      while (a < k && (a + 1) / (k + 1) <= rate + 1e-9) a++;
      d.observe(k, a, draftMs * (d.perToken ? k : 1), verify(k + 1));
    }
  };
  it("drafts deep when drafts are accepted and cheap, shallow or none when they are not", () => {
    const cheapVerify = (n: number) => 10 + 0.2 * n;
    const good = new DraftDepth(0, 16, true);
    feed(good, 0.95, 40, 0.3, cheapVerify);
    expect(good.acceptance).toBeGreaterThan(0.8);
    expect(good.next()).toBeGreaterThanOrEqual(8);
    const poor = new DraftDepth(0, 16, true);
    feed(poor, 0.2, 40, 0.3, cheapVerify);
    expect(poor.next()).toBeLessThanOrEqual(2);
    // a draft token as costly as the target's step does not pay even when accepted half the time
    const costly = new DraftDepth(0, 16, true);
    feed(costly, 0.5, 40, 10, cheapVerify);
    expect(costly.next()).toBe(0);
    // a lookup drafter (cost per call) goes deep at the same acceptance
    const lookup = new DraftDepth(0, 16, false);
    feed(lookup, 0.9, 40, 0.05, cheapVerify);
    expect(lookup.next()).toBeGreaterThanOrEqual(8);
  });

  it("chooses among few depths (min, powers of two, max) and cuts a draft to one of them", () => {
    const d = new DraftDepth(0, 16, false);
    expect(d.depths).toEqual([0, 1, 2, 4, 8, 16]);
    expect([0, 1, 3, 7, 8, 15, 16, 40].map((n) => d.fit(n))).toEqual([0, 1, 2, 4, 8, 8, 16, 16]);
    expect(new DraftDepth(3, 12, true).depths).toEqual([3, 4, 8, 12]);
    expect(new DraftDepth(3, 12, true).fit(2)).toBe(0);
    const seen = new Set<number>();
    feed(d, 0.8, 60, 0.05, (n) => 1 + 0.1 * n);
    for (let i = 0; i < 50; i++) seen.add(d.next());
    for (const k of seen) expect(d.depths).toContain(k);
  });

  it("leaves out each length's first verification (its graph is built) and caps outliers", () => {
    // 1 ms a step and 0.05 ms a token, but 40 ms at each length's first use (the graph's build) and
    // 25 ms every seventh step (a step that waited): drafts accepted 90% of the time still pay
    const seen = new Set<number>();
    let step = 0;
    const verify = (n: number) => {
      step++;
      if (!seen.has(n)) {
        seen.add(n);
        return 40;
      }
      return step % 7 === 0 ? 25 : 1 + 0.05 * n;
    };
    // (as the Speculator uses it: a depth of 0 decodes the pending token alone)
    const lookup = new DraftDepth(0, 16, false);
    let drafted = 0;
    for (let i = 0; i < 60; i++) {
      const k = lookup.next();
      let a = 0;
      while (a < k && (a + 1) / (k + 1) <= 0.9 + 1e-9) a++;
      lookup.observe(k, a, k > 0 ? 0.05 : 0, verify(k + 1));
      drafted += k;
    }
    expect(drafted).toBeGreaterThan(8 * 50);
    expect(lookup.next()).toBeGreaterThanOrEqual(8);
    // one token at a time for a while, then a first 17-token verification that built its graph
    const fresh = new DraftDepth(0, 16, false);
    for (let i = 0; i < 10; i++) fresh.observe(0, 0, 0, 1);
    fresh.observe(16, 16, 0.05, 40);
    expect(fresh.verifyMs(17)).toBeLessThan(2);
    // its model of a verification stays near the steady times
    expect(lookup.verifyMs(1)).toBeLessThan(3);
    expect(lookup.verifyMs(17)).toBeLessThan(4);
  });

  it("still drafts one token now and then when drafting does not pay, ever more rarely, and keeps to [min, max]", () => {
    const d = new DraftDepth(0, 16, true);
    feed(d, 0, 40, 50, () => 10);
    const ones: number[] = [];
    for (let i = 1; i <= 2000; i++) {
      const k = d.next();
      expect(k === 0 || k === 1).toBe(true);
      if (k === 1) ones.push(i);
    }
    // (feed's own calls probed already) the gaps double, from at least PROBE_EVERY, up to PROBE_MAX
    const gaps = ones.slice(1).map((at, i) => at - ones[i]!);
    expect(gaps[0]).toBeGreaterThanOrEqual(DraftDepth.PROBE_EVERY);
    for (let i = 1; i < gaps.length; i++)
      expect(gaps[i]).toBe(Math.min(2 * gaps[i - 1]!, DraftDepth.PROBE_MAX));
    expect(gaps.at(-1)).toBe(DraftDepth.PROBE_MAX);
    expect(gaps.length).toBeGreaterThan(4);
    const bounded = new DraftDepth(3, 5, true);
    feed(bounded, 0.99, 20, 0.01, () => 1);
    expect(bounded.next()).toBe(5);
    feed(bounded, 0, 40, 5, () => 1);
    expect(bounded.next()).toBe(3);
  });
});

describe.skipIf(!haveStories)("checkDraftVocabulary", () => {
  it("refuses a draft model of another vocabulary by name, and accepts the same one", async () => {
    const { model, runtime, dispose } = await loadStories();
    const other = await Model.load(`${FIXTURES}/models/llama-2-tiny-random.gguf`, { runtime });
    const ctx = new Context(other, { nCtx: 32 });
    try {
      expect(() => checkDraftVocabulary(model, other)).toThrow(
        expect.objectContaining({
          code: "DRAFT_MISMATCH",
          message: expect.stringMatching(/vocabulary of 32000 tokens against the target's 512/),
        }),
      );
      expect(() => ModelDrafter.for(model, ctx)).toThrow(expect.objectContaining({ code: "DRAFT_MISMATCH" }));
      expect(() => checkDraftVocabulary(model, model)).not.toThrow();
    } finally {
      ctx.dispose();
      other.dispose();
      dispose();
    }
  });
});

describe.skipIf(!haveStories)("model drafters", () => {
  it("BatchedModelDrafter drafts for several sequences what a ModelDrafter drafts for each alone", async () => {
    const { model, dispose } = await loadStories(1);
    const one = new Context(model, { nCtx: 128 });
    const many = new Context(model, { nCtx: 3 * 128, nSeqMax: 3, kvUnified: false });
    try {
      const tok = (t: string) => model.tokenizer.encode(t, { addSpecial: true });
      const histories = [tok("Once upon a time"), tok("Lily and her mom went"), tok("The big red ball")];
      const alone: number[][] = [];
      for (const h of histories) alone.push(await new ModelDrafter(one).draft(h, 6));
      const batched = BatchedModelDrafter.for(model, many);
      expect(await batched.draftMany(histories.map((history, seq) => ({ seq, history, max: 6 })))).toEqual(
        alone,
      );
      // a history that grows keeps its cached prefix; one that changes starts over; max 0 drafts none
      const longer = [...histories[0]!, ...alone[0]!.slice(0, 2)];
      const next = await batched.draftMany([
        { seq: 0, history: longer, max: 4 },
        { seq: 2, history: histories[1]!, max: 3 },
        { seq: 1, history: histories[1]!, max: 0 },
      ]);
      expect(next).toEqual([await new ModelDrafter(one).draft(longer, 4), alone[1]!.slice(0, 3), []]);
      await expect(batched.draftMany([{ seq: 3, history: histories[0]!, max: 2 }])).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
      });
    } finally {
      one.dispose();
      many.dispose();
      dispose();
    }
  });

  it("a ModelDrafter takes in the prompt ahead (prefill): its first draft decodes only the new token, and drafts the same", async () => {
    const { model, dispose } = await loadStories(1);
    const a = new Context(model, { nCtx: 128 });
    const b = new Context(model, { nCtx: 128 });
    try {
      const prompt = model.tokenizer.encode("Once upon a time there was a little girl named Lily", {
        addSpecial: true,
      });
      const pending = model.tokenizer.encode(" who", { addSpecial: false });
      const history = [...prompt, ...pending];
      const ahead = new ModelDrafter(a);
      await ahead.prefill(prompt);
      expect(a.history(0)).toEqual(prompt);
      const cold = await new ModelDrafter(b).draft(history, 5);
      expect(cold.length).toBeGreaterThan(0);
      const used = a.used();
      expect(await ahead.draft(history, 5)).toEqual(cold);
      // the catch-up decoded the pending token alone (then the drafted tokens but the last)
      expect(a.used() - used).toBe(pending.length + cold.length - 1);
    } finally {
      a.dispose();
      b.dispose();
      dispose();
    }
  });

  it("a ModelDrafter catches up in pieces of 16, 8, 4, 2 and 1 tokens (few decode graphs)", async () => {
    const { model, dispose } = await loadStories(1);
    const ctx = new Context(model, { nCtx: 128 });
    try {
      const history = Array.from({ length: 23 }, (_, i) => 100 + i);
      const lengths: number[] = [];
      const evalOf = ctx.eval.bind(ctx);
      ctx.eval = (tokens, seq) => {
        lengths.push(tokens.length);
        return evalOf(tokens, seq);
      };
      await new ModelDrafter(ctx).draft(history, 1);
      expect(lengths).toEqual([16, 4, 2, 1]);
    } finally {
      ctx.dispose();
      dispose();
    }
  });

  it("a drafter whose context cannot hold the history says so (NO_KV_ROOM)", async () => {
    const { model, dispose } = await loadStories(1);
    const small = new Context(model, { nCtx: 16 });
    try {
      const history = model.tokenizer.encode("Once upon a time there was a little girl named Lily who", {
        addSpecial: true,
      });
      expect(history.length).toBeGreaterThan(16);
      await expect(new ModelDrafter(small).draft(history, 4)).rejects.toMatchObject({
        code: "NO_KV_ROOM",
        message: expect.stringContaining(
          `the draft context holds 16 tokens of sequence 0, the history is ${history.length}`,
        ),
      });
      await expect(
        new BatchedModelDrafter(small).draftMany([{ seq: 0, history, max: 4 }]),
      ).rejects.toMatchObject({
        code: "NO_KV_ROOM",
        message: expect.stringContaining("BatchedModelDrafter"),
      });
    } finally {
      small.dispose();
      dispose();
    }
  });
});
