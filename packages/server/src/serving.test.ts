import { Model } from "@minfer/engine";
import type { DeviceRuntime } from "@minfer/ir";
import { Sampler } from "@minfer/sampler";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Batcher } from "./batcher.js";
import { CHAT_MODEL, cpuRuntime, type Running, STORIES, start, until } from "./test-helpers.js";

// The serving model: continuous batching over slots, prefix reuse across slots, the bounded queue,
// disconnects and drain. Independent checks: a request's output alone (one slot, nothing else
// running) is the reference for the same request run among others.

let runtime: DeviceRuntime;
let stories: Model;
let chat: Model;

beforeAll(async () => {
  runtime = await cpuRuntime();
  stories = await Model.load(STORIES, { runtime });
  chat = await Model.load(CHAT_MODEL, { runtime });
});
afterAll(() => {
  stories?.dispose();
  chat?.dispose();
  runtime?.dispose();
});

/** Sampling that never ends early: stories end with an end-of-sequence token, banned here. */
const LONG = { temperature: 1, seed: 5, logit_bias: { "2": -100 } };

const STORY_PROMPTS = [
  "Once upon a time",
  "Lily and her mom",
  "The big red ball",
  "One day, a little bird",
  "Tom had a dog",
  "The sun was hot and",
  "Sam wanted to play",
  "In the park there was",
];

async function streamText(
  r: Running,
  body: Record<string, unknown>,
): Promise<{ text: string; finish: string | null }> {
  const stream = await r.client.completions.create({ model: "m", ...body, stream: true } as never);
  let text = "";
  let finish: string | null = null;
  for await (const c of stream as unknown as AsyncIterable<{
    choices: { text: string; finish_reason: string | null }[];
  }>) {
    text += c.choices[0]?.text ?? "";
    finish = c.choices[0]?.finish_reason ?? finish;
  }
  return { text, finish };
}

describe("continuous batching", () => {
  let r: Running;
  beforeAll(async () => {
    r = await start({ model: stories, parallel: 8, contextOptions: { nCtx: 8 * 256 }, metrics: true });
  });
  afterAll(async () => {
    await r?.server.close();
  });

  it("8 concurrent greedy streams each equal the same request alone", async () => {
    const body = (prompt: string) => ({ prompt, max_tokens: 48, temperature: 0, cache_prompt: false });
    const alone: string[] = [];
    for (const p of STORY_PROMPTS) alone.push((await streamText(r, body(p))).text);
    // All eight at once (how many steps they share depends on when each request arrives; the
    // batcher test below checks the sharing itself).
    const before = await batchStats(r);
    const together = await Promise.all(STORY_PROMPTS.map((p) => streamText(r, body(p))));
    const after = await batchStats(r);
    expect(together.map((t) => t.text)).toEqual(alone);
    expect(new Set(alone).size).toBe(alone.length);
    expect(after.steps - before.steps).toBeLessThanOrEqual(8 * 49);
  });

  it("jobs submitted together advance together: one decode per step for all of them", async () => {
    const steps: { tokens: number; generating: number; gapMs?: number }[] = [];
    const b = new Batcher(stories, {
      parallel: 8,
      ctxPerSlot: 256,
      batchSize: 512,
      queueSize: 0,
      observer: { onStep: (x) => steps.push(x) },
    });
    try {
      const jobs = STORY_PROMPTS.map((p) =>
        b.submit({
          ids: stories.tokenizer.encode(p, { addSpecial: true }),
          sampler: new Sampler({ temperature: 0 }),
          maxTokens: 32,
        }),
      );
      const results = await Promise.all(jobs);
      for (const r of results) expect(r.tokens).toHaveLength(32);
      // Step 1 prefills all eight prompts; then each step decodes the next token of all eight.
      expect(steps).toHaveLength(32);
      expect(steps[0]!.generating).toBe(0);
      for (const st of steps.slice(1)) expect(st).toMatchObject({ tokens: 8, generating: 8 });
      // The host's gap before each step: none before the first (the batcher was idle), a time
      // before every other.
      expect(steps[0]!.gapMs).toBeUndefined();
      for (const st of steps.slice(1)) expect(st.gapMs).toBeGreaterThanOrEqual(0);
      // Each equals the same job alone.
      for (const [i, p] of STORY_PROMPTS.entries()) {
        const solo = await b.submit({
          ids: stories.tokenizer.encode(p, { addSpecial: true }),
          sampler: new Sampler({ temperature: 0 }),
          maxTokens: 32,
          cachePrompt: false,
        });
        expect(solo.tokens).toEqual(results[i]!.tokens);
      }
      // Each solo job started on an idle batcher: its first step has no gap, its others have one.
      expect(steps).toHaveLength(32 * (1 + STORY_PROMPTS.length));
      for (let i = 32; i < steps.length; i++)
        if (i % 32 === 0) expect(steps[i]!.gapMs).toBeUndefined();
        else expect(steps[i]!.gapMs).toBeGreaterThanOrEqual(0);
    } finally {
      await b.close();
    }
  });

  it("the choices of one request prefill the prompt once; the others copy it", async () => {
    let promptTokens = 0;
    const b = new Batcher(stories, {
      parallel: 4,
      ctxPerSlot: 256,
      batchSize: 512,
      queueSize: 0,
      observer: { onStep: (x) => (promptTokens += x.promptTokens) },
    });
    try {
      const ids = stories.tokenizer.encode(
        "Once upon a time there was a little girl named Lily who liked to play",
        {
          addSpecial: true,
        },
      );
      const group = {};
      const jobs = [1, 2, 3].map(() =>
        b.submit({ ids, sampler: new Sampler({ temperature: 0 }), maxTokens: 16, group }),
      );
      const results = await Promise.all(jobs);
      // The first job prefills the whole prompt; each other one copies all but the last token.
      expect(promptTokens).toBe(ids.length + 2);
      expect(results.map((r) => r.cachedTokens)).toEqual([0, ids.length - 1, ids.length - 1]);
      promptTokens = 0;
      const solo = await b.submit({
        ids,
        sampler: new Sampler({ temperature: 0 }),
        maxTokens: 16,
        cachePrompt: false,
      });
      expect(promptTokens).toBe(ids.length);
      for (const r of results) expect(r.tokens).toEqual(solo.tokens);
    } finally {
      await b.close();
    }
  });

  it("chat streams on several slots match their solo runs too", async () => {
    const c = await start({ model: chat, parallel: 4, contextOptions: { nCtx: 4 * 256 } });
    try {
      const questions = [
        "Tell me about the city.",
        "What did the jury say?",
        "Who was the man?",
        "Where is the river?",
      ];
      const ask = (q: string) =>
        c.client.chat.completions
          .create({ model: "m", messages: [{ role: "user", content: q }], max_tokens: 32, temperature: 0 })
          .then((x) => x.choices[0]!.message.content);
      const alone: (string | null)[] = [];
      for (const q of questions) alone.push(await ask(q));
      // Solo runs leave the slots' caches behind; together, each also reuses its own prefix.
      expect(await Promise.all(questions.map(ask))).toEqual(alone);
    } finally {
      await c.server.close();
    }
  });

  it("reuses a prefix held by another, busy slot (its K/V rows copied), with the same output as no reuse", async () => {
    const long =
      "Once upon a time there was a little girl named Lily. She liked to play in the park with her dog.";
    const extended = `${long} One day`;
    const fresh = await r.client.completions.create({
      model: "m",
      prompt: extended,
      max_tokens: 24,
      temperature: 0,
      cache_prompt: false,
    } as never);
    // Occupy a slot with the long prompt and keep it generating while the extended one arrives.
    const busy = streamText(r, { prompt: long, max_tokens: 200, temperature: 0 });
    await until(
      async () => (await slots(r)).some((s) => s.is_processing && s.n_decoded > 0),
      5000,
      "a busy slot",
    );
    const reused = await r.client.completions.create({
      model: "m",
      prompt: extended,
      max_tokens: 24,
      temperature: 0,
    });
    await busy;
    const promptTokens = reused.usage!.prompt_tokens;
    expect(reused.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThan(promptTokens / 2);
    expect(fresh.usage!.prompt_tokens_details!.cached_tokens).toBe(0);
    expect(reused.choices[0]!.text).toBe(fresh.choices[0]!.text);
  });

  it("a second chat turn prefills only the new turn", async () => {
    const first = await r.client.completions.create({
      model: "m",
      prompt: "Tom had a big dog.",
      max_tokens: 16,
      temperature: 0,
    });
    const second = `Tom had a big dog.${first.choices[0]!.text} The dog`;
    const turn2 = await r.client.completions.create({
      model: "m",
      prompt: second,
      max_tokens: 8,
      temperature: 0,
    });
    const cached = turn2.usage!.prompt_tokens_details!.cached_tokens!;
    expect(cached).toBeGreaterThanOrEqual(first.usage!.prompt_tokens);
    expect(cached).toBeLessThan(turn2.usage!.prompt_tokens);
  });
});

async function slots(
  r: Running,
): Promise<{ is_processing: boolean; n_decoded: number; n_ctx: number; state: string }[]> {
  return (await (await fetch(`${r.url}/slots`)).json()) as never;
}

async function batchStats(r: Running): Promise<{ steps: number; tokens: number }> {
  const text = await (await fetch(`${r.url}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? Number.NaN);
  return { steps: value("minfer_decode_steps_total"), tokens: value("minfer_decode_batch_tokens_sum") };
}

describe("queue, disconnects, timeouts", () => {
  it("a full queue answers 503 with Retry-After; the queued request still runs", async () => {
    const r = await start({ model: stories, parallel: 1, queueSize: 1, contextOptions: { nCtx: 4096 } });
    try {
      const running = streamText(r, { prompt: "Once upon a time", max_tokens: 300, ...LONG });
      await until(async () => (await slots(r))[0]!.is_processing, 5000, "the slot to be busy");
      const queued = r.client.completions.create({
        model: "m",
        prompt: "Tom",
        max_tokens: 4,
        temperature: 0,
      });
      await until(async () => {
        const m = (await (await fetch(`${r.url}/props`)).json()) as { total_slots: number };
        return m.total_slots === 1 && r.server.batcher.waiting === 1;
      });
      const refused = await r.post("/v1/completions", { prompt: "Lily", max_tokens: 4 });
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("1");
      const body = (await refused.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("queue_full");
      expect(body.error.message).toContain("1 slots are busy");
      const err = await r.client.completions
        .create({ model: "m", prompt: "x", max_tokens: 2 })
        .catch((e) => e);
      expect(err.status).toBe(503);
      expect((await running).finish).toBe("length");
      expect((await queued).usage!.completion_tokens).toBe(4);
    } finally {
      await r.server.close();
    }
  });

  it("a client that disconnects frees its slot within a step", async () => {
    const ends: string[] = [];
    const r = await start({
      model: stories,
      parallel: 2,
      contextOptions: { nCtx: 1024 },
      onGeneration: (g) => ends.push(g.finishReason),
    });
    try {
      const ac = new AbortController();
      const res = await fetch(`${r.url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt: "Once", max_tokens: 400, stream: true, temperature: 1, seed: 2 }),
        signal: ac.signal,
      });
      const reader = res.body!.getReader();
      await reader.read();
      expect((await slots(r)).filter((s) => s.is_processing)).toHaveLength(1);
      ac.abort();
      await until(async () => (await slots(r)).every((s) => !s.is_processing), 2000, "the slot to be freed");
      expect(ends).toEqual(["abort"]);
      const decoded = r.server.batcher.slots().reduce((n, s) => n + s.nPast, 0);
      expect(decoded).toBeLessThan(400);
    } finally {
      await r.server.close();
    }
  });

  it("a request past --timeout is a 504 and frees its slot; the server goes on", async () => {
    // Deterministic on any machine: 3,000 tokens take far longer than 50 ms, so every request
    // here times out; what is checked is that each is a clean 504 and nothing stays busy.
    const r = await start({
      model: stories,
      parallel: 1,
      timeoutSeconds: 0.05,
      contextOptions: { nCtx: 4096 },
    });
    try {
      for (let i = 0; i < 2; i++) {
        const res = await r.post("/v1/completions", {
          prompt: "Once",
          max_tokens: 3000,
          temperature: 1,
          seed: 3,
        });
        expect(res.status).toBe(504);
        const err = ((await res.json()) as { error: { code: string; message: string } }).error;
        expect(err.code).toBe("timeout");
        expect(err.message).toContain("0.05 s");
        await until(
          async () => (await slots(r)).every((x) => !x.is_processing),
          2000,
          "the slot to be freed",
        );
      }
      expect((await fetch(`${r.url}/health`)).status).toBe(200);
      expect((await r.client.models.list()).data).toHaveLength(1);
    } finally {
      await r.server.close();
    }
  });
});

describe("isolation and responsiveness", () => {
  it("a job that fails mid-generation fails alone; the others finish and the batcher goes on", async () => {
    const b = new Batcher(stories, { parallel: 2, ctxPerSlot: 256, batchSize: 64, queueSize: 4 });
    try {
      const ids = stories.tokenizer.encode("Once upon a time", { addSpecial: true });
      let n = 0;
      const failing = new Sampler({ temperature: 0 });
      // (a step reads the row, or only its candidates: the sampler fails either way)
      const sample = failing.sample.bind(failing);
      const fromCandidates = failing.sampleCandidates.bind(failing);
      failing.sample = (logits: Float32Array, c?: Int32Array | Uint32Array) => {
        if (++n === 5) throw new Error("boom at token 5");
        return sample(logits, c);
      };
      failing.sampleCandidates = (c: Int32Array | Uint32Array, v: Float32Array, nVocab: number) => {
        if (++n === 5) throw new Error("boom at token 5");
        return fromCandidates(c, v, nVocab);
      };
      const bad = b.submit({ ids, sampler: failing, maxTokens: 40 });
      const good = b.submit({ ids, sampler: new Sampler({ temperature: 0 }), maxTokens: 40 });
      await expect(bad).rejects.toThrow("boom at token 5");
      const ok = await good;
      expect(ok.tokens).toHaveLength(40);
      expect(b.idle).toBe(true);
      const again = await b.submit({ ids, sampler: new Sampler({ temperature: 0 }), maxTokens: 40 });
      expect(again.tokens).toEqual(ok.tokens);
    } finally {
      await b.close();
    }
  });

  it("/health answers while a long prompt is prefilled", async () => {
    const r = await start({ model: stories, parallel: 1, batchSize: 16, contextOptions: { nCtx: 4096 } });
    try {
      // ~1,350 prompt tokens, 16 per step: the prefill spans about 85 steps.
      const prompt = "Once upon a time there was a little dog. ".repeat(150);
      let done = false;
      const completion = r.client.completions
        .create({ model: "m", prompt, max_tokens: 1, temperature: 0 })
        .then((x) => {
          done = true;
          return x;
        });
      let answered = 0;
      while (!done) {
        const h = await fetch(`${r.url}/health`);
        if (h.status === 200 && r.server.batcher.busy === 1) answered++;
      }
      const c = await completion;
      expect(c.usage!.prompt_tokens).toBeGreaterThan(1000);
      expect(answered).toBeGreaterThan(0);
    } finally {
      await r.server.close();
    }
  });
});

describe("drain and loading", () => {
  it("drain lets running and queued requests finish, refuses new ones, then closes", async () => {
    const r = await start({ model: stories, parallel: 1, contextOptions: { nCtx: 4096 } });
    const a = streamText(r, { prompt: "Once upon a time", max_tokens: 200, ...LONG });
    const b = r.client.completions.create({ model: "m", prompt: "Lily", max_tokens: 10, temperature: 0 });
    await until(
      async () => r.server.batcher.busy === 1 && r.server.batcher.waiting === 1,
      5000,
      "one running, one queued",
    );
    const drained = r.server.drain(20);
    const late = await fetch(`${r.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "x", max_tokens: 2 }),
    }).then(
      (x) => x.status,
      () => "refused",
    );
    expect([503, "refused"]).toContain(late);
    expect((await a).finish).toBe("length");
    expect((await b).usage!.completion_tokens).toBe(10);
    expect(await drained).toBe(true);
  });

  it("/health is 503 while the model loads, then 200; other routes wait too", async () => {
    let resolve!: (m: Model) => void;
    const loading = new Promise<Model>((res) => {
      resolve = res;
    });
    const r = await start({ model: loading, parallel: 1 });
    try {
      const h = await fetch(`${r.url}/health`);
      expect(h.status).toBe(503);
      expect(((await h.json()) as { error: { message: string } }).error.message).toBe("Loading model");
      expect((await fetch(`${r.url}/v1/models`)).status).toBe(503);
      resolve(stories);
      await r.server.ready;
      expect((await fetch(`${r.url}/health`)).status).toBe(200);
      expect((await r.client.models.list()).data[0]!.id).toBe("stories260K");
    } finally {
      await r.server.close();
    }
  });

  it("a model that fails to load makes /health a 500 naming the failure", async () => {
    const r = await start({ model: Promise.reject(new Error("no such file: x.gguf")) });
    try {
      await expect(r.server.ready).rejects.toThrow("no such file");
      const h = await fetch(`${r.url}/health`);
      expect(h.status).toBe(500);
      expect(((await h.json()) as { error: { message: string } }).error.message).toContain("no such file");
    } finally {
      await r.server.close();
    }
  });
});

describe("/props, /slots, /metrics", () => {
  it("report the slots' context, state and counters", async () => {
    const r = await start({ model: stories, parallel: 3, contextOptions: { nCtx: 3 * 200 }, metrics: true });
    const off = await start({ model: stories, parallel: 1 });
    try {
      const props = (await (await fetch(`${r.url}/props`)).json()) as Record<string, unknown>;
      expect(props.total_slots).toBe(3);
      expect(props.n_ctx).toBe(200);
      expect(props.n_ctx_total).toBe(600);
      // stories260K: 5 layers of 4 KV heads × 8 dims, F16: 64 bytes per row, K and V, 600 cells.
      expect(props.kv_caches).toEqual([
        { kind: "full", layers: 5, cells: 600, window: 0, bytes: 5 * 2 * 600 * 64 },
      ]);
      expect(props.devices).toEqual({
        placement: "all 5 layers on cpu",
        offloaded_layers: 0,
        n_layer: 5,
        runtimes: ["cpu"],
      });
      const s = await slots(r);
      expect(s.map((x) => [x.n_ctx, x.state])).toEqual([
        [200, "idle"],
        [200, "idle"],
        [200, "idle"],
      ]);
      await r.client.completions.create({
        model: "m",
        prompt: "Once upon a time",
        max_tokens: 5,
        temperature: 0,
      });
      const text = await (await fetch(`${r.url}/metrics`)).text();
      const value = (line: string) => Number(new RegExp(`^${line} (\\S+)$`, "m").exec(text)?.[1]);
      expect(value("minfer_generated_tokens_total")).toBe(5);
      expect(value('minfer_requests_total\\{endpoint="/v1/completions",status="200"\\}')).toBe(1);
      expect(value("minfer_slots_total")).toBe(3);
      expect(value("minfer_kv_cells_used")).toBeGreaterThan(5);
      expect(value("minfer_queue_waiting")).toBe(0);
      expect(text).toContain("minfer_decode_batch_tokens_bucket");
      // Every step's decode time, and the host gap before every step but the first after idle.
      const steps = value("minfer_decode_steps_total");
      expect(steps).toBeGreaterThanOrEqual(4);
      expect(value("minfer_decode_step_seconds_count")).toBe(steps);
      expect(value("minfer_decode_step_gap_seconds_count")).toBe(steps - 1);
      // The prompt took one step; every later step only generated.
      expect(value("minfer_decode_generate_step_seconds_count")).toBe(steps - 1);
      expect(text).toContain("minfer_time_to_first_token_seconds_count 1");
      expect((await fetch(`${off.url}/metrics`)).status).toBe(501);
    } finally {
      await r.server.close();
      await off.server.close();
    }
  });
});
