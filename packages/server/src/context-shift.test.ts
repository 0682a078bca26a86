import { Context } from "@minfer/engine";
import { argmax } from "@minfer/sampler";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Running, start, useStories } from "./test-helpers.js";

// --context-shift: a full slot drops the older half of its tokens (after n_keep and the BOS) and
// goes on, its later tokens' positions moved back (the engine rotates their K rows' RoPE).

const stories = useStories();
let r: Running;
const N_CTX = 48;

beforeAll(async () => {
  r = await start({ model: stories(), parallel: 1, contextOptions: { nCtx: N_CTX }, contextShift: true });
});

afterAll(async () => {
  await r?.server.close();
});

describe("context shift", () => {
  it("goes on past the slot's context, dropping as llama-server drops: the BOS kept, half the rest, positions moved back", async () => {
    const prompt = "Once upon a time";
    const n = 2 * N_CTX;
    const res = (await (
      await r.post("/completion", {
        prompt,
        n_predict: n,
        temperature: 0,
        ignore_eos: true,
        return_tokens: true,
        n_probs: 1,
      })
    ).json()) as {
      tokens: number[];
      truncated: boolean;
      timings: { predicted_n: number };
      completion_probabilities: { logprob: number }[];
    };
    expect(res.timings.predicted_n).toBe(n);
    expect(res.truncated).toBe(true);
    // The same on a context by hand: greedy (end-of-generation tokens banned), and whenever the
    // next decode would not fit, positions [1, 1 + d) removed and the later ones moved back by d.
    const model = stories();
    const ids = model.tokenizer.encode(prompt, { addSpecial: true, parseSpecial: false });
    const ctx = new Context(model, { nCtx: N_CTX });
    try {
      const want: number[] = [];
      const wantLogprob: number[] = [];
      let logits = await ctx.eval(ids);
      let nPast = ids.length;
      let shifts = 0;
      for (;;) {
        for (const e of model.tokenizer.vocab.eog) logits[e] = Number.NEGATIVE_INFINITY;
        const t = argmax(logits);
        want.push(t);
        let z = 0;
        for (const v of logits) z += Math.exp(v - logits[t]!);
        wantLogprob.push(-Math.log(z));
        if (want.length === n) break;
        if (nPast + 1 >= N_CTX) {
          const d = Math.floor((nPast - 1) / 2);
          ctx.seqRm(0, 1, 1 + d);
          ctx.seqAdd(0, 1 + d, -1, -d);
          nPast -= d;
          shifts++;
        }
        logits = await ctx.eval([t]);
        nPast++;
      }
      expect(shifts).toBeGreaterThan(1);
      expect(res.tokens).toEqual(want);
      // (the drawn tokens' log-probabilities too: a shift a position off would move them)
      res.completion_probabilities.forEach((p, i) => {
        expect(p.logprob).toBeCloseTo(wantLogprob[i]!, 3);
      });
    } finally {
      ctx.dispose();
    }
  });

  it("without it, generation stops when the slot is full: finish length, truncated", async () => {
    const s = await start({ model: stories(), parallel: 1, contextOptions: { nCtx: N_CTX } });
    try {
      const res = (await (
        await s.post("/completion", {
          prompt: "Once upon a time",
          n_predict: 200,
          temperature: 0,
          ignore_eos: true,
        })
      ).json()) as { truncated: boolean; stop_type: string; timings: { predicted_n: number } };
      expect(res.truncated).toBe(true);
      expect(res.stop_type).toBe("limit");
      expect(res.timings.predicted_n).toBeLessThan(N_CTX);
    } finally {
      await s.server.close();
    }
  });
});
