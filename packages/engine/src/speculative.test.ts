import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context } from "./context.js";
import { generate, greedy } from "./generate.js";
import type { Model } from "./model.js";
import type { Drafter } from "./speculative/drafter.js";
import { ModelDrafter } from "./speculative/model-drafter.js";
import { NgramDrafter } from "./speculative/ngram-drafter.js";
import type { SpeculativeOptions } from "./speculative/speculator.js";
import { haveStories, loadStories } from "./test-helpers.js";

/** A drafter that proposes `inner`'s draft with every `every`-th token replaced, so verification rejects. */
function corrupt(inner: Drafter, every: number, nVocab: number): Drafter {
  let n = 0;
  return {
    kind: `corrupt-${inner.kind}`,
    costPerToken: inner.costPerToken,
    async draft(history, max) {
      const d = await inner.draft(history, max);
      return d.map((t) => (++n % every === 0 ? (t + 1) % nVocab : t));
    },
  };
}

describe.skipIf(!haveStories)("speculative generation (stories260K)", () => {
  let model: Model;
  let dispose = () => {};
  let ctx: Context;
  let draftCtx: Context;
  let reference: number[];
  let promptIds: number[];
  const prompt = "Once upon a time";

  beforeAll(async () => {
    ({ model, dispose } = await loadStories(1));
    ctx = new Context(model, { nCtx: 256 });
    draftCtx = new Context(model, { nCtx: 256 });
    promptIds = model.tokenizer.encode(prompt, { addSpecial: true });
    const c = new Context(model, { nCtx: 256 });
    reference = await greedy(c, promptIds, 120);
    c.dispose();
  });
  afterAll(() => {
    ctx?.dispose();
    draftCtx?.dispose();
    dispose();
  });

  const run = async (drafter: Drafter, extra: Parameters<typeof generate>[2] = {}) => {
    const g = generate(ctx, prompt, {
      maxTokens: 100,
      reusePrefix: false,
      speculative: { drafter },
      ...extra,
    });
    await g.complete();
    return g;
  };

  it("greedy with n-gram drafts gives the tokens of greedy without, and leaves the cache as they would", async () => {
    const drafter = new NgramDrafter({ ngramMin: 1 });
    const g = await run(drafter, { speculative: { drafter, adaptive: false, draftMax: 4 } });
    expect(g.tokens).toEqual(reference.slice(0, 100));
    const s = g.timings!.speculative!;
    expect(s.kind).toBe("ngram");
    // the story repeats itself: drafts are made, and some of them are accepted
    expect(s.drafted).toBeGreaterThan(10);
    expect(s.accepted).toBeGreaterThan(0);
    expect(s.steps).toBeLessThan(100);
    // the cache holds the prompt and the tokens, no unconfirmed draft past them
    const h = ctx.history(0)!;
    expect(h.slice(0, promptIds.length)).toEqual(promptIds);
    expect(h.slice(promptIds.length)).toEqual(g.tokens.slice(0, h.length - promptIds.length));
    expect(h.length).toBeGreaterThanOrEqual(promptIds.length + 99);
    expect(ctx.seqCount(0)).toBe(h.length);
  });

  it("greedy with a draft model gives the same tokens; a same-model draft is always accepted", async () => {
    const drafter = ModelDrafter.for(model, draftCtx);
    const g = await run(drafter, { speculative: { drafter, adaptive: false, draftMax: 4 } });
    expect(g.tokens).toEqual(reference.slice(0, 100));
    const s = g.timings!.speculative!;
    expect(s.kind).toBe("draft");
    expect(s.accepted).toBe(s.drafted);
    expect(s.steps).toBeLessThan(50);
  });

  it("drafts no further than maxTokens: a same-model draft is all accepted at any length; verifications are batch-invariant", async () => {
    // every decode of the target with drafts asks for batch-invariant programs
    const verifications: (boolean | undefined)[] = [];
    const decode = ctx.decode.bind(ctx);
    ctx.decode = (b) => {
      if (b.tokens.length > 1 && b.logits === "all") verifications.push(b.batchInvariant);
      return decode(b);
    };
    try {
      await checkBudget();
    } finally {
      ctx.decode = decode;
    }
    expect(verifications.length).toBeGreaterThan(3);
    expect(verifications.every((v) => v === true)).toBe(true);
  });

  const checkBudget = async () => {
    for (const maxTokens of [3, 7, 23]) {
      const drafter = ModelDrafter.for(model, draftCtx);
      const g = await run(drafter, { maxTokens, speculative: { drafter, adaptive: false, draftMax: 8 } });
      expect(g.tokens).toEqual(reference.slice(0, maxTokens));
      const s = g.timings!.speculative!;
      expect(s.drafted).toBeGreaterThan(0);
      expect(s.accepted).toBe(s.drafted);
      // every token but the prompt's and one per verification was drafted
      expect(s.drafted).toBe(maxTokens - 1 - s.steps);
    }
  };

  it("rejected drafts leave the cache and the tokens stay greedy's", async () => {
    for (const drafter of [
      corrupt(new ModelDrafter(draftCtx), 3, model.hparams.nVocab),
      corrupt(new NgramDrafter({ ngramMin: 1 }), 2, model.hparams.nVocab),
    ]) {
      const g = await run(drafter, { speculative: { drafter, adaptive: false, draftMax: 5 } });
      expect(g.tokens).toEqual(reference.slice(0, 100));
      const s = g.timings!.speculative!;
      expect(s.accepted).toBeGreaterThan(0);
      expect(s.accepted).toBeLessThan(s.drafted);
      expect(ctx.seqCount(0)).toBe(ctx.history(0)!.length);
      expect(ctx.history(0)!.slice(promptIds.length)).toEqual(
        g.tokens.slice(0, ctx.history(0)!.length - promptIds.length),
      );
    }
  });

  it("stops at a full context with the tokens of greedy", async () => {
    const small = new Context(model, { nCtx: 24 });
    try {
      const g = generate(small, prompt, {
        maxTokens: 100,
        speculative: { drafter: new ModelDrafter(draftCtx), adaptive: false, draftMax: 8 },
      });
      await g.complete();
      expect(g.finishReason).toBe("context");
      expect(small.stats().used).toBe(24);
      expect(g.tokens).toEqual(reference.slice(0, 24 - promptIds.length + 1));
    } finally {
      small.dispose();
    }
  });

  it("samples the same tokens as without speculation for a seed (temperature 1)", async () => {
    const sampler = (seed: number) => ({ temperature: 1, seed });
    for (const seed of [1, 2, 3]) {
      const plain = generate(ctx, prompt, { maxTokens: 60, reusePrefix: false, sampler: sampler(seed) });
      await plain.complete();
      const drafter = new ModelDrafter(draftCtx);
      const spec = await run(drafter, {
        maxTokens: 60,
        sampler: sampler(seed),
        speculative: { drafter, adaptive: false, draftMax: 4 },
      });
      expect(spec.tokens).toEqual(plain.tokens);
      expect(spec.timings!.speculative!.accepted).toBeLessThan(spec.timings!.speculative!.drafted);
    }
  });

  it("a verification's rows overwritten by another sequence's decode (reuseLogits) throw STALE_LOGITS", async () => {
    const shared = new Context(model, { nCtx: 256, nSeqMax: 2, reuseLogits: true });
    try {
      const g = generate(shared, prompt, {
        maxTokens: 20,
        speculative: { drafter: new ModelDrafter(draftCtx), adaptive: false, draftMax: 4 },
      });
      let n = 0;
      const run = async () => {
        // piece 2 came from the first verification's row 0 and confirmed its first draft: the next
        // token comes from row 1, which the decode of sequence 1 below overwrites
        for await (const _ of g) if (++n === 2) await shared.decode({ tokens: [5], seq: 1 });
      };
      await expect(run()).rejects.toMatchObject({ code: "STALE_LOGITS" });
      // no token was drawn from the overwritten row
      expect(n).toBe(2);
      expect(g.tokens).toHaveLength(2);
    } finally {
      shared.dispose();
    }
  });

  it("refuses bad speculative options with a code", () => {
    const bad = (speculative: unknown) =>
      expect(() => generate(ctx, prompt, { speculative: speculative as SpeculativeOptions })).toThrow(
        expect.objectContaining({ code: "INVALID_ARGUMENT" }),
      );
    bad({});
    bad({ drafter: new NgramDrafter(), draftMax: -1 });
    bad({ drafter: new NgramDrafter(), draftMax: 4, draftMin: 5 });
    bad({ drafter: new NgramDrafter(), adaptive: "yes" });
    expect(() => new NgramDrafter({ ngramMin: 0 })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
    expect(() => new ModelDrafter(draftCtx, { pMin: 2 })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
  });
});
