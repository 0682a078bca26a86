import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IGNORED_FIELDS_HEADER } from "./index.js";
import { parseChat, parseCompletion } from "./request.js";
import { makeSampler } from "./sampling.js";
import { type Running, start, useStories } from "./test-helpers.js";

// llama-server's request fields: its sampler fields under their names, validated and used; fields
// the server does not know or use, ignored and named (a header, the log) or refused (strictApi).

const stories = useStories();
let lax: Running;
let strict: Running;

beforeAll(async () => {
  lax = await start({ model: stories(), parallel: 1, contextOptions: { nCtx: 256 } });
  strict = await start({ model: stories(), parallel: 1, contextOptions: { nCtx: 256 }, strictApi: true });
});

afterAll(async () => {
  await lax?.server.close();
  await strict?.server.close();
});

const prompt = "Once upon a time";
type Body = {
  error?: { param?: string; message: string };
  choices?: { finish_reason: string; text?: string }[];
};

describe("fields the server does not use", () => {
  it("are ignored and named in a response header (streamed too), or refused with --strict-api", async () => {
    const body = { prompt, max_tokens: 2, temperature: 0, frobnicate: 1, n_keep: 4, id_slot: -1 };
    const r = await lax.post("/v1/completions", body);
    expect(r.status).toBe(200);
    expect(r.headers.get(IGNORED_FIELDS_HEADER)).toBe("frobnicate, n_keep"); // id_slot -1: no-op
    const s = await lax.post("/v1/completions", { ...body, stream: true });
    expect(s.status).toBe(200);
    expect(s.headers.get(IGNORED_FIELDS_HEADER)).toBe("frobnicate, n_keep");
    expect(await s.text()).toContain("data: [DONE]");
    const chat = await lax.post("/v1/chat/completions", {
      messages: [{ role: "user", content: "hi", refusal: null }],
      max_tokens: 1,
      frobnicate: 1,
    });
    expect(chat.headers.get(IGNORED_FIELDS_HEADER)).toBe("frobnicate, messages[0].refusal");

    const refused = await strict.post("/v1/completions", body);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as Body).error!.param).toBe("frobnicate");
    const noEffect = await strict.post("/v1/completions", { prompt, n_keep: 4 });
    expect(noEffect.status).toBe(400);
    expect(((await noEffect.json()) as Body).error!.param).toBe("n_keep");
    const fine = await strict.post("/v1/completions", { prompt, max_tokens: 1, id_slot: -1, typical_p: 0.9 });
    expect(fine.status).toBe(200);
    expect(fine.headers.get(IGNORED_FIELDS_HEADER)).toBeNull();
  });

  it("a huge field name is named in the header cut short", async () => {
    const name = "y".repeat(100_000);
    const r = await lax.post("/v1/completions", { prompt, max_tokens: 1, [name]: 1 });
    expect(r.status).toBe(200);
    expect(r.headers.get(IGNORED_FIELDS_HEADER)).toBe("y".repeat(64));
  });
});

describe("llama-server's sampler fields", () => {
  it.each([
    ["typical_p", 0],
    ["typical_p", 1.5],
    ["xtc_probability", -0.1],
    ["xtc_threshold", 2],
    ["top_n_sigma", "wide"],
    ["repeat_last_n", -2],
    ["repeat_last_n", 1.5],
    ["dry_multiplier", -1],
    ["dry_base", 0.5],
    ["dry_allowed_length", 0],
    ["dry_penalty_last_n", -5],
    ["dry_sequence_breakers", []],
    ["dry_sequence_breakers", "\n"],
    ["mirostat", 3],
    ["mirostat_tau", -1],
    ["mirostat_eta", "fast"],
    ["dynatemp_range", -0.5],
    ["dynatemp_exponent", "two"],
    ["ignore_eos", "yes"],
    ["n_probs", 21],
    ["n_predict", -2],
    ["json_schema", "object"],
  ])("%s = %j is a 400 naming it", async (field, value) => {
    const r = await lax.post("/v1/completions", { prompt, [field]: value });
    expect(r.status).toBe(400);
    const b = (await r.json()) as Body;
    expect(b.error!.param).toMatch(new RegExp(`^${field}`));
  });

  it("reach the sampler under its names", () => {
    const p = parseCompletion(
      {
        prompt,
        typical_p: 0.5,
        xtc_probability: 0.25,
        xtc_threshold: 0.2,
        top_n_sigma: 1.5,
        repeat_last_n: 32,
        dry_multiplier: 0.8,
        dry_base: 2,
        dry_allowed_length: 3,
        dry_penalty_last_n: 128,
        dry_sequence_breakers: ["\n", "."],
        mirostat: 2,
        mirostat_tau: 4,
        mirostat_eta: 0.2,
        dynatemp_range: 0.4,
        dynatemp_exponent: 1.5,
      },
      stories().hparams.nVocab,
    );
    const o = makeSampler(stories(), p, undefined).options;
    expect([o.typicalP, o.xtcProbability, o.xtcThreshold, o.topNSigma, o.repeatLastN]).toEqual([
      0.5, 0.25, 0.2, 1.5, 32,
    ]);
    expect([o.dryMultiplier, o.dryBase, o.dryAllowedLength, o.dryPenaltyLastN]).toEqual([0.8, 2, 3, 128]);
    expect(o.drySequenceBreakers).toEqual(["\n", "."]);
    expect([o.mirostat, o.mirostatTau, o.mirostatEta]).toEqual([2, 4, 0.2]);
    expect([o.dynatempRange, o.dynatempExponent]).toEqual([0.4, 1.5]);
  });

  it("logit_bias in llama-server's forms: [token, bias] pairs, text keys, false to ban", async () => {
    const tok = stories().tokenizer;
    const tokenize = (t: string) => tok.encode(t, { addSpecial: false, parseSpecial: false });
    const hello = tokenize("hello");
    const p = parseCompletion(
      {
        prompt,
        logit_bias: [
          [5, 2],
          ["hello", false],
          [7, -100],
        ],
      },
      stories().hparams.nVocab,
      { tokenize },
    );
    expect(p.logitBias!.get(5)).toBe(2);
    expect(p.logitBias!.get(7)).toBe(Number.NEGATIVE_INFINITY);
    for (const t of hello) expect(p.logitBias!.get(t)).toBe(Number.NEGATIVE_INFINITY);
    const q = parseCompletion({ prompt, logit_bias: { hello: 1.5, 9: false } }, 512, { tokenize });
    expect(q.logitBias!.get(9)).toBe(Number.NEGATIVE_INFINITY);
    for (const t of hello) expect(q.logitBias!.get(t)).toBe(1.5);
    // through the server: the end-of-generation token forced by a pair ends at once
    const eos = tok.vocab.special.eos!;
    const forced = (await (
      await lax.post("/v1/completions", { prompt, max_tokens: 4, logit_bias: [[eos, 100]] })
    ).json()) as Body;
    expect(forced.choices![0]!.finish_reason).toBe("stop");
    for (const [bias, param] of [
      [[[1]], "logit_bias[0]"],
      [[[1, "x"]], "logit_bias[0]"],
      [[[99999, 1]], "logit_bias[0]"],
      [{ 5: 500 }, "logit_bias"],
      [{ "": 1 }, "logit_bias"],
      [{ ["w".repeat(1025)]: 1 }, "logit_bias"],
      ["x", "logit_bias"],
    ] as const) {
      const r = await lax.post("/v1/completions", { prompt, logit_bias: bias });
      expect(r.status, JSON.stringify(bias)).toBe(400);
      expect(((await r.json()) as Body).error!.param).toBe(param);
    }
  });

  it("ignore_eos keeps end-of-generation tokens from being sampled", async () => {
    const eos = stories().tokenizer.vocab.special.eos!;
    const forced = { prompt, max_tokens: 4, temperature: 0, logit_bias: { [eos]: 100 } };
    const stops = (await (await lax.post("/v1/completions", forced)).json()) as Body;
    expect(stops.choices![0]!.finish_reason).toBe("stop");
    const runs = (await (await lax.post("/v1/completions", { ...forced, ignore_eos: true })).json()) as Body;
    expect(runs.choices![0]!.finish_reason).toBe("length");
    const o = makeSampler(stories(), parseCompletion({ prompt, ignore_eos: true }, 512), undefined).options;
    expect(o.logitBias.get(eos)).toBe(Number.NEGATIVE_INFINITY);
  });

  it("n_predict is max_tokens (-1: no limit), json_schema is response_format's schema, n_probs asks for logprobs", async () => {
    const r = (await (
      await lax.post("/v1/completions", { prompt, n_predict: 3, ignore_eos: true })
    ).json()) as {
      usage: { completion_tokens: number };
    };
    expect(r.usage.completion_tokens).toBe(3);
    expect(parseCompletion({ prompt, n_predict: -1 }, 512).maxTokens).toBeUndefined();
    const both = await lax.post("/v1/completions", { prompt, n_predict: 3, max_tokens: 4 });
    expect(((await both.json()) as Body).error!.param).toBe("n_predict");

    const schema = { type: "object", properties: { n: { type: "integer" } }, required: ["n"] };
    expect(parseCompletion({ prompt, json_schema: schema }, 512).responseFormat).toEqual({
      type: "json_schema",
      schema,
      name: "response",
      param: "json_schema", // (errors in the schema name this field)
    });
    const j = (await (
      await lax.post("/v1/completions", { prompt, json_schema: schema, max_tokens: 24, temperature: 0 })
    ).json()) as Body;
    if (j.choices![0]!.finish_reason === "stop")
      expect(Number.isInteger(JSON.parse(j.choices![0]!.text!).n)).toBe(true);
    else expect(j.choices![0]!.text!.trimStart().startsWith("{")).toBe(true);
    const twice = await lax.post("/v1/completions", {
      prompt,
      json_schema: schema,
      response_format: { type: "text" },
    });
    expect(((await twice.json()) as Body).error!.param).toBe("json_schema");

    expect(parseCompletion({ prompt, n_probs: 3 }, 512).nProbs).toBe(3);
    expect(parseChat({ messages: [{ role: "user", content: "hi" }], n_probs: 2 }, 512).nProbs).toBe(2);
    expect(parseChat({ messages: [{ role: "user", content: "hi" }], model: null }, 512).ignored).toEqual([]);
  });
});

describe("server-side sampling defaults (llama-server's --temp, --seed, -n)", () => {
  it("fill what a request leaves unset; the request's own fields win", async () => {
    const d = await start({
      model: stories(),
      parallel: 1,
      contextOptions: { nCtx: 256 },
      sampling: { temperature: 0 },
      nPredict: 5,
    });
    try {
      const body = { prompt, ignore_eos: true };
      type R = { choices: { text: string }[]; usage: { completion_tokens: number } };
      const a = (await (await d.post("/v1/completions", body)).json()) as R;
      const greedy = (await (
        await lax.post("/v1/completions", { ...body, temperature: 0, max_tokens: 5 })
      ).json()) as R;
      expect(a.usage.completion_tokens).toBe(5); // nPredict
      expect(a.choices[0]!.text).toBe(greedy.choices[0]!.text); // temperature 0 by default
      const own = (await (await d.post("/v1/completions", { ...body, max_tokens: 2 })).json()) as R;
      expect(own.usage.completion_tokens).toBe(2);
    } finally {
      await d.server.close();
    }
    const seeded = await start({
      model: stories(),
      parallel: 1,
      contextOptions: { nCtx: 256 },
      sampling: { temperature: 1.5, seed: 11 },
    });
    try {
      const body = { prompt, max_tokens: 12, ignore_eos: true };
      const text = async (b: object) =>
        ((await (await seeded.post("/v1/completions", b)).json()) as { choices: { text: string }[] })
          .choices[0]!.text;
      const viaServerSeed = await text(body);
      expect(await text(body)).toBe(viaServerSeed); // the server's seed: the same draws
      expect(await text({ ...body, seed: 11 })).toBe(viaServerSeed);
      const otherSeeds = await Promise.all([12, 13, 14].map((seed) => text({ ...body, seed })));
      expect(otherSeeds.some((t) => t !== viaServerSeed)).toBe(true);
    } finally {
      await seeded.server.close();
    }
    await expect(start({ model: stories(), sampling: { topP: 2 } })).rejects.toThrow(/topP/);
  });
});
