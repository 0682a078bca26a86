import { argmax } from "@minfer/sampler";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Context } from "./context.js";
import { generate, greedy } from "./generate.js";
import type { Model } from "./model.js";
import { haveStories, loadStories } from "./test-helpers.js";

describe.skipIf(!haveStories)("generate (stories260K)", () => {
  let model: Model;
  let dispose = () => {};
  let ctx: Context;
  let reference: number[];
  const prompt = "Once upon a time";

  beforeAll(async () => {
    ({ model, dispose } = await loadStories());
    ctx = new Context(model, { nCtx: 256 });
    const ids = model.tokenizer.encode(prompt, { addSpecial: true });
    const c = new Context(model, { nCtx: 256 });
    reference = await greedy(c, ids, 60);
    c.dispose();
  });
  afterAll(() => {
    ctx?.dispose();
    dispose();
  });

  it("streams pieces whose tokens and text are greedy's; stops at maxTokens", async () => {
    const g = generate(ctx, prompt, { maxTokens: 40, reusePrefix: false });
    const tokens: number[] = [];
    let text = "";
    for await (const p of g) {
      if (p.token !== undefined) tokens.push(p.token);
      text += p.text;
    }
    expect(tokens).toEqual(reference.slice(0, 40));
    expect(text).toBe(model.tokenizer.decode(reference.slice(0, 40)));
    expect(g.text).toBe(text);
    expect(g.finishReason).toBe("length");
    expect(g.timings?.generatedTokens).toBe(40);
  });

  it("reuses the cached prefix of the same sequence and prefills only the rest", async () => {
    const first = generate(ctx, prompt, { maxTokens: 5, reusePrefix: false });
    await first.complete();
    const promptIds = model.tokenizer.encode(prompt, { addSpecial: true });
    const longer = [...promptIds, ...first.tokens.slice(0, 4)];
    const again = generate(ctx, longer, { maxTokens: 10 });
    await again.complete();
    expect(again.timings?.reusedTokens).toBe(longer.length - 1);
    expect(again.tokens).toEqual(reference.slice(4, 14));
  });

  it("ends at a stop string without returning it, even when it spans tokens", async () => {
    const full = model.tokenizer.decode(reference);
    const stop = full.slice(30, 37);
    const g = generate(ctx, prompt, { stop: [stop], maxTokens: 60 });
    let streamed = "";
    for await (const p of g) streamed += p.text;
    expect(g.finishReason).toBe("stop");
    expect(streamed).toBe(full.slice(0, full.indexOf(stop)));
    expect(streamed.includes(stop)).toBe(false);
  });

  it("ends at a stop token, at end of generation, and when aborted", async () => {
    const stopAt = reference[7]!;
    const g = generate(ctx, prompt, { stopTokens: [stopAt], maxTokens: 60 });
    await g.complete();
    expect(g.finishReason).toBe("stop");
    expect(g.tokens).toEqual(reference.slice(0, reference.indexOf(stopAt)));

    const seen: number[] = [];
    // A custom sampler that emits EOS at step 3: generation ends there with reason "eog".
    const eos = model.tokenizer.vocab.special.eos!;
    let step = 0;
    const sampling = generate(ctx, prompt, {
      sampler: { sample: () => (step++ === 3 ? eos : reference[step - 1]!) },
    });
    for await (const p of sampling) if (p.token !== undefined) seen.push(p.token);
    expect(sampling.finishReason).toBe("eog");
    expect(seen).toEqual(reference.slice(0, 3));

    const ac = new AbortController();
    const aborted = generate(ctx, prompt, { maxTokens: 60, signal: ac.signal });
    let n = 0;
    for await (const _ of aborted) if (++n === 5) ac.abort();
    expect(aborted.finishReason).toBe("abort");
    expect(aborted.tokens.length).toBe(5);
  });

  it("stops with reason 'context' when the context is full, and leaves the context usable", async () => {
    const small = new Context(model, { nCtx: 16 });
    try {
      const g = generate(small, prompt, { maxTokens: 100 });
      await g.complete();
      expect(g.finishReason).toBe("context");
      expect(small.stats().used).toBe(16);
      expect(g.tokens).toEqual(reference.slice(0, 16 - g.timings!.promptTokens + 1));
      // A prompt longer than the context is refused with a code.
      await expect(
        generate(small, "word ".repeat(40), { reusePrefix: false }).complete(),
      ).rejects.toMatchObject({
        code: "NO_KV_ROOM",
      });
      expect(small.stats().used).toBe(0);
      const again = generate(small, prompt, { maxTokens: 3 });
      await again.complete();
      expect(again.tokens).toEqual(reference.slice(0, 3));
    } finally {
      small.dispose();
    }
  });

  it("samples reproducibly with a seed, and refuses bad options with a code", async () => {
    const run = async (seed: number) =>
      (await generateTokens({ sampler: { temperature: 1, topK: 40, topP: 0.95, seed }, maxTokens: 30 })).join(
        ",",
      );
    const generateTokens = async (o: Parameters<typeof generate>[2]) => {
      const g = generate(ctx, prompt, o);
      await g.complete();
      return g.tokens;
    };
    expect(await run(42)).toBe(await run(42));
    expect(await run(42)).not.toBe(await run(43));
    expect(() => generate(ctx, prompt, { maxTokens: -1 })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
    expect(() => generate(ctx, "", { addSpecial: false })).toThrow(/no tokens/);
    expect(() => generate(ctx, prompt, { sampler: { topP: 2 } })).toThrow(/topP/);
  });
});

describe.skipIf(!haveStories)("generate with a stateful sampler (stories260K)", () => {
  it("feeds the prompt and every chosen token to the sampler, and stops when it is done", async () => {
    const { model, dispose } = await loadStories();
    const ctx = new Context(model, { nCtx: 128 });
    try {
      const seen: number[] = [];
      let prompt: readonly number[] = [];
      const sampler = {
        sample: (logits: Float32Array) => argmax(logits),
        acceptPrompt: (t: readonly number[]) => {
          prompt = t;
        },
        accept: (t: number) => {
          seen.push(t);
        },
        isDone: () => seen.length === 6,
      };
      const g = generate(ctx, "Once upon a time", { sampler, maxTokens: 50 });
      await g.complete();
      expect(prompt).toEqual(model.tokenizer.encode("Once upon a time", { addSpecial: true }));
      expect(seen).toEqual(g.tokens);
      expect(g.tokens.length).toBe(6);
      expect(g.finishReason).toBe("stop");
    } finally {
      ctx.dispose();
      dispose();
    }
  });
});
