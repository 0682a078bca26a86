import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Running, start, useStories } from "./test-helpers.js";

// llama-server's own completion format, `POST /completion` (and `/completions`): content, tokens,
// timings, stop_type, generation_settings; streamed as a chunk a token, the last with stop: true.

const stories = useStories();
let r: Running;

beforeAll(async () => {
  r = await start({ model: stories(), parallel: 1, contextOptions: { nCtx: 256 } });
});

afterAll(async () => {
  await r?.server.close();
});

const prompt = "Once upon a time,";
type Native = {
  content: string;
  tokens: number[];
  stop: boolean;
  stop_type: string;
  stopping_word: string;
  tokens_predicted: number;
  tokens_evaluated: number;
  truncated: boolean;
  has_new_line: boolean;
  model: string;
  prompt: string;
  generation_settings: { n_predict: number; temperature: number };
  timings: { prompt_n: number; predicted_n: number; cache_n: number; predicted_per_second: number };
  error?: { param: string };
};
const post = async (path: string, body: object) => (await r.post(path, body)).json() as Promise<Native>;

describe("POST /completion (llama-server's format)", () => {
  it("answers with its fields, the text greedy gives on /v1/completions, and the ids with return_tokens", async () => {
    const body = { prompt, n_predict: 6, temperature: 0, ignore_eos: true };
    const a = await post("/completion", body);
    const nPrompt = stories().tokenizer.encode(prompt).length; // (with BOS, as llama-server adds it)
    expect(a.stop).toBe(true);
    expect(a.stop_type).toBe("limit");
    expect(a.tokens).toEqual([]);
    expect([a.tokens_predicted, a.timings.predicted_n]).toEqual([6, 6]);
    expect([a.tokens_evaluated, a.timings.prompt_n + a.timings.cache_n]).toEqual([nPrompt, nPrompt]);
    expect(a.truncated).toBe(false);
    expect(typeof a.has_new_line).toBe("boolean");
    expect(a.generation_settings).toMatchObject({ n_predict: 6, temperature: 0 });
    expect(a.timings.predicted_per_second).toBeGreaterThan(0);
    expect(a.prompt).toBe(`<s> ${prompt}`); // (as the model reads it, as llama-server reports it)
    const oai = (await (await r.post("/v1/completions", { ...body, max_tokens: 6 })).json()) as {
      choices: { text: string }[];
    };
    expect(a.content).toBe(oai.choices[0]!.text);

    const t = await post("/completions", { ...body, return_tokens: true });
    expect(t.tokens).toHaveLength(6);
    expect(stories().tokenizer.decode(t.tokens, { keepLeadingSpace: true })).toBe(a.content);
    // the prompt as token ids: the same completion
    const ids = stories().tokenizer.encode(prompt);
    expect((await post("/completion", { ...body, prompt: ids })).content).toBe(a.content);
  });

  it("streams a chunk a token, then a last one with stop: true and the result's fields, no [DONE]", async () => {
    const body = { prompt, n_predict: 8, temperature: 0, ignore_eos: true };
    const whole = await post("/completion", body);
    const text = await (await r.post("/completion", { ...body, stream: true })).text();
    expect(text).not.toContain("[DONE]");
    const chunks = text
      .split("\n\n")
      .filter((l) => l.startsWith("data: "))
      .map((l) => JSON.parse(l.slice(6)) as Native);
    const last = chunks.at(-1)!;
    expect(chunks.slice(0, -1).every((c) => !c.stop && c.tokens.length === 1)).toBe(true);
    expect(chunks).toHaveLength(9);
    expect(last.stop).toBe(true);
    expect(last.stop_type).toBe("limit");
    expect(last.timings.predicted_n).toBe(8);
    expect(chunks.map((c) => c.content).join("")).toBe(whole.content);
  });

  it("says why it stopped: a stop string (named), the end-of-generation token", async () => {
    const base = { prompt, temperature: 0, n_predict: 12, ignore_eos: true };
    const free = await post("/completion", base);
    const word = free.content.trim().split(" ")[1]!; // a word inside the greedy text
    const w = await post("/completion", { ...base, stop: [word] });
    expect(w.stop_type).toBe("word");
    expect(w.stopping_word).toBe(word);
    expect(free.content.startsWith(w.content)).toBe(true);
    const eos = stories().tokenizer.vocab.special.eos!;
    const e = await post("/completion", { prompt, temperature: 0, logit_bias: { [eos]: 100 } });
    expect(e.stop_type).toBe("eos");
    expect(e.tokens_predicted).toBe(0);
  });

  it("refuses a bad prompt or n naming the field", async () => {
    expect((await post("/completion", { n_predict: 1 })).error!.param).toBe("prompt");
    expect((await post("/completion", { prompt: [1, 99999] })).error!.param).toBe("prompt[1]");
    expect((await post("/completion", { prompt: [] })).error!.param).toBe("prompt");
    expect((await post("/completion", { prompt, n: 2 })).error!.param).toBe("n");
    expect((await post("/completion", { prompt: { prompt_string: 3 } })).error!.param).toBe(
      "prompt.prompt_string",
    );
    const media = await post("/completion", { prompt: { prompt_string: "a", multimodal_data: "x" } });
    expect(media.error!.param).toBe("prompt.multimodal_data");
    expect((await post("/completion", { prompt: ["a", "b"], stream: true })).error!.param).toBe("prompt");
  });

  it("n_probs: completion_probabilities with the drawn token's log-probability among the alternatives (chat's)", async () => {
    type P = { id: number; token: string; logprob: number; bytes: number[] };
    const body = { prompt, n_predict: 3, n_probs: 4, temperature: 0 };
    const res = (await post("/completion", body)) as Native & {
      completion_probabilities: (P & { top_logprobs: P[] })[];
    };
    expect(res.completion_probabilities).toHaveLength(3);
    const chat = (await (
      await r.post("/v1/completions", { prompt, max_tokens: 3, temperature: 0, logprobs: 4 })
    ).json()) as {
      choices: { logprobs: { token_logprobs: number[] } }[];
    };
    res.completion_probabilities.forEach((t, i) => {
      expect(t.top_logprobs).toHaveLength(4);
      // greedy: the drawn token is the most probable alternative
      expect(t.top_logprobs[0]!.id).toBe(t.id);
      expect(t.logprob).toBeCloseTo(t.top_logprobs[0]!.logprob, 6);
      expect(t.logprob).toBeCloseTo(chat.choices[0]!.logprobs.token_logprobs[i]!, 6);
      expect(Buffer.from(t.bytes).toString("utf8")).toBe(t.token);
    });
  });

  it("post_sampling_probs: the kept candidates' probabilities after top-k and temperature, the drawn one's among them", async () => {
    type P = { id: number; token: string; prob: number; bytes: number[] };
    const res = (await post("/completion", {
      prompt,
      n_predict: 4,
      n_probs: 10,
      post_sampling_probs: true,
      temperature: 1,
      top_k: 3,
      top_p: 1,
      min_p: 0,
      seed: 5,
    })) as Native & { completion_probabilities: (P & { top_probs: P[] })[] };
    for (const t of res.completion_probabilities) {
      expect(t.top_probs.length).toBeLessThanOrEqual(3);
      expect(t.top_probs.reduce((a, x) => a + x.prob, 0)).toBeCloseTo(1, 5);
      expect(t.top_probs.find((x) => x.id === t.id)?.prob).toBe(t.prob);
      for (let i = 1; i < t.top_probs.length; i++)
        expect(t.top_probs[i]!.prob).toBeLessThanOrEqual(t.top_probs[i - 1]!.prob);
    }
  });

  it("several prompts: an array of results in order; token ids mixed with text; {prompt_string}; response_fields", async () => {
    const ids = stories().tokenizer.encode(prompt, { addSpecial: true, parseSpecial: false });
    const settings = { n_predict: 4, temperature: 0 };
    const one = await post("/completion", { prompt, ...settings });
    const many = (await (
      await r.post("/completion", { prompt: [ids, prompt, { prompt_string: prompt }], ...settings })
    ).json()) as (Native & {
      index: number;
    })[];
    expect(many.map((m) => m.content)).toEqual([one.content, one.content, one.content]);
    expect(many.map((m) => m.index)).toEqual([0, 1, 2]);
    // (ids then a text: one prompt, the text tokenized as it is)
    const mixed = await post("/completion", {
      prompt: [...ids.slice(0, -2), stories().tokenizer.decode(ids.slice(-2))],
      ...settings,
    });
    expect(mixed.tokens_evaluated).toBeGreaterThan(0);
    const picked = (await post("/completion", {
      prompt,
      ...settings,
      response_fields: ["content", "generation_settings/n_predict"],
    })) as unknown as Record<string, unknown>;
    expect(picked).toEqual({ content: one.content, "generation_settings/n_predict": 4 });
    // the prompt as the model reads it: BOS shown, SentencePiece's leading space kept
    expect(one.prompt).toBe(`<s> ${prompt}`);
  });
});
