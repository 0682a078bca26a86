import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Context, Model } from "@minfer/engine";
import type { DeviceRuntime } from "@minfer/ir";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CHAT_MODEL,
  cpuRuntime,
  type Running,
  STORIES,
  start,
  writeChatModel,
  writeQwen3,
} from "./test-helpers.js";

// OpenAI features through the official client: logprobs (checked against a float64 log-softmax of
// the engine's own logits), n, llama.cpp's grammar and chat_template_kwargs, JSON Schema output
// (checked by ajv) and tool calls, on stories260K and on a synthetic Qwen3 model that carries the
// real Qwen3 chat template.

let runtime: DeviceRuntime;
let dir: string;
let stories: Model;
let qwen: Model;
let s: Running;
let q: Running;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "minfer-server-features-"));
  runtime = await cpuRuntime();
  stories = await Model.load(STORIES, { runtime });
  qwen = await Model.load(await writeQwen3(dir), { runtime });
  s = await start({ model: stories, parallel: 2, contextOptions: { nCtx: 1024 } });
  q = await start({ model: qwen, parallel: 2, contextOptions: { nCtx: 2048 } });
});
afterAll(async () => {
  await s?.server.close();
  await q?.server.close();
  stories?.dispose();
  qwen?.dispose();
  runtime?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

/** Float64 log-softmax of a row of logits. */
function logSoftmax(row: Float32Array): Float64Array {
  let max = Number.NEGATIVE_INFINITY;
  for (const v of row) max = Math.max(max, v);
  let z = 0;
  for (const v of row) z += Math.exp(v - max);
  const lse = max + Math.log(z);
  return Float64Array.from(row, (v) => v - lse);
}

/** Greedy decoding on a plain Context: each step's float64 log-probabilities and the token taken. */
async function reference(
  model: Model,
  ids: number[],
  steps: number,
): Promise<{ token: number; lp: Float64Array }[]> {
  const ctx = new Context(model, { nCtx: 512 });
  try {
    const out: { token: number; lp: Float64Array }[] = [];
    let logits = await ctx.eval(ids);
    for (let i = 0; i < steps; i++) {
      const lp = logSoftmax(logits);
      let token = 0;
      for (let t = 1; t < lp.length; t++) if (lp[t]! > lp[token]!) token = t;
      out.push({ token, lp });
      logits = await ctx.eval([token]);
    }
    return out;
  } finally {
    ctx.dispose();
  }
}

const bytesOf = (m: Model, id: number) => new TextDecoder().decode(m.tokenizer.tokenBytes(id));

describe.each([
  ["stories260K (completions)", () => s, "completion"],
  ["synthetic Qwen3 with its template (chat)", () => q, "chat"],
  ["synthetic Qwen3 (completions)", () => q, "completion"],
] as const)("basics on %s", (_name, server, kind) => {
  /** Non-streamed and streamed text of one request body. */
  async function both(
    body: Record<string, unknown>,
  ): Promise<{ text: string; streamed: string; finish: string; usage: { completion_tokens: number } }> {
    const c = server().client;
    if (kind === "completion") {
      const r = await c.completions.create({ model: "m", prompt: "Once upon a time", ...body } as never);
      let streamed = "";
      const stream = (await c.completions.create({
        model: "m",
        prompt: "Once upon a time",
        ...body,
        stream: true,
      } as never)) as unknown as AsyncIterable<unknown>;
      for await (const x of stream) streamed += (x as { choices: { text: string }[] }).choices[0]?.text ?? "";
      return { text: r.choices[0]!.text, streamed, finish: r.choices[0]!.finish_reason, usage: r.usage! };
    }
    const messages = [{ role: "user" as const, content: "Tell me a story." }];
    const r = await c.chat.completions.create({ model: "m", messages, ...body } as never);
    let streamed = "";
    const stream = (await c.chat.completions.create({
      model: "m",
      messages,
      ...body,
      stream: true,
    } as never)) as unknown as AsyncIterable<unknown>;
    for await (const x of stream)
      streamed += (x as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? "";
    return {
      text: r.choices[0]!.message.content ?? "",
      streamed,
      finish: r.choices[0]!.finish_reason,
      usage: r.usage!,
    };
  }

  it("max_tokens, streamed = not streamed, seeds reproducible, stop strings cut the text", async () => {
    const greedy = await both({ max_tokens: 12, temperature: 0 });
    expect(greedy.finish).toBe("length");
    expect(greedy.usage.completion_tokens).toBe(12);
    expect(greedy.streamed).toBe(greedy.text);
    const seeded = { max_tokens: 12, temperature: 1, seed: 77 };
    const a = await both(seeded);
    const b = await both(seeded);
    expect(a.text).toBe(b.text);
    expect(a.streamed).toBe(a.text);
    // A stop string from the middle of the greedy text: the text before it comes back.
    const at = Math.max(1, Math.floor(greedy.text.length / 2));
    const stop = greedy.text.slice(at, at + 2);
    const cut = await both({ max_tokens: 12, temperature: 0, stop });
    expect(cut.finish).toBe("stop");
    expect(cut.text).toBe(greedy.text.slice(0, greedy.text.indexOf(stop)));
    expect(cut.streamed).toBe(cut.text);
  });
});

describe("logprobs", () => {
  it("completions: each token's logprob and top alternatives match a float64 log-softmax", async () => {
    const prompt = "Once upon a time";
    const r = await s.client.completions.create({
      model: "m",
      prompt,
      max_tokens: 8,
      temperature: 0,
      logprobs: 3,
    });
    const lp = r.choices[0]!.logprobs!;
    const ref = await reference(stories, stories.tokenizer.encode(prompt, { addSpecial: true }), 8);
    expect(lp.tokens).toHaveLength(8);
    ref.forEach((step, i) => {
      expect(lp.tokens![i]).toBe(bytesOf(stories, step.token));
      expect(lp.token_logprobs![i]).toBeCloseTo(step.lp[step.token]!, 3);
      const top = Object.entries(lp.top_logprobs![i]!);
      expect(top.length).toBeGreaterThan(0);
      for (const [text, v] of top) {
        const id = [...step.lp.keys()].find(
          (t) => bytesOf(stories, t) === text && Math.abs(step.lp[t]! - v) < 1e-3,
        );
        expect(id, `step ${i}: ${JSON.stringify(text)} ${v}`).toBeDefined();
      }
    });
    expect(lp.text_offset![0]).toBe(0);
    expect(lp.tokens!.join("")).toBe(r.choices[0]!.text);
  });

  it("chat: logprobs.content has every token with top_logprobs, streamed the same", async () => {
    const messages = [{ role: "user" as const, content: "Hello there" }];
    const body = { model: "m", messages, max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 4 };
    const r = await q.client.chat.completions.create(body);
    const content = r.choices[0]!.logprobs!.content!;
    expect(content).toHaveLength(r.usage!.completion_tokens);
    const prompt = qwen.chatTemplate!.render({ messages, addGenerationPrompt: true });
    const ids = qwen.tokenizer.encode(prompt, { addSpecial: true, parseSpecial: true });
    expect(ids).toHaveLength(r.usage!.prompt_tokens);
    const ref = await reference(qwen, ids, content.length);
    content.forEach((c, i) => {
      const step = ref[i]!;
      expect(c.logprob).toBeCloseTo(step.lp[step.token]!, 3);
      expect(c.top_logprobs).toHaveLength(4);
      expect(c.top_logprobs[0]!.logprob).toBeCloseTo(step.lp[step.token]!, 3);
      expect(Buffer.from(c.bytes!).toString("utf8")).toBe(c.token);
      const sorted = [...step.lp].sort((a, b) => b - a);
      c.top_logprobs.forEach((t, k) => {
        expect(t.logprob).toBeCloseTo(sorted[k]!, 3);
      });
    });
    const stream = await q.client.chat.completions.create({ ...body, stream: true });
    const streamed = [];
    for await (const c of stream) streamed.push(...(c.choices[0]?.logprobs?.content ?? []));
    expect(streamed.map((x) => x.token)).toEqual(content.map((x) => x.token));
  });

  it("top_logprobs without logprobs, or above 20, is a 400", async () => {
    for (const body of [{ top_logprobs: 2 }, { logprobs: true, top_logprobs: 21 }]) {
      const res = await q.post("/v1/chat/completions", {
        messages: [{ role: "user", content: "x" }],
        ...body,
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe("top_logprobs");
    }
  });
});

describe("n, seeds, grammar, template kwargs", () => {
  it("n choices: greedy ones are equal, seeded ones reproducible, usage sums them", async () => {
    const greedy = await s.client.completions.create({
      model: "m",
      prompt: "Tom",
      max_tokens: 10,
      temperature: 0,
      n: 3,
    });
    expect(greedy.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(new Set(greedy.choices.map((c) => c.text)).size).toBe(1);
    expect(greedy.usage!.completion_tokens).toBe(30);
    const body = { model: "m", prompt: "Tom", max_tokens: 16, temperature: 1, seed: 11, n: 3 };
    const a = await s.client.completions.create(body);
    const b = await s.client.completions.create(body);
    expect(a.choices.map((c) => c.text)).toEqual(b.choices.map((c) => c.text));
    expect(new Set(a.choices.map((c) => c.text)).size).toBeGreaterThan(1);
    // Streamed n: chunks carry each choice's index, each ends with its finish_reason.
    const stream = await s.client.completions.create({ ...body, stream: true });
    const texts = ["", "", ""];
    const finishes: (string | null)[] = [null, null, null];
    for await (const c of stream)
      for (const ch of c.choices) {
        texts[ch.index] += ch.text;
        finishes[ch.index] = ch.finish_reason ?? finishes[ch.index]!;
      }
    expect(texts).toEqual(a.choices.map((c) => c.text));
    expect(finishes).toEqual(["length", "length", "length"]);
  });

  it("llama.cpp's grammar field constrains the output; two constraints at once are a 400", async () => {
    const grammar = 'root ::= ("yes" | "no") " " [a-z]+ "."';
    for (let seed = 1; seed <= 4; seed++) {
      const r = await s.post("/v1/completions", {
        prompt: "Once",
        grammar,
        max_tokens: 40,
        temperature: 1,
        seed,
      });
      const text = ((await r.json()) as { choices: { text: string }[] }).choices[0]!.text;
      expect(text).toMatch(/^(yes|no) [a-z]+\.$/);
    }
    const both = await s.post("/v1/completions", {
      prompt: "Once",
      grammar,
      response_format: { type: "json_object" },
    });
    expect(both.status).toBe(400);
    const bad = await s.post("/v1/completions", { prompt: "Once", grammar: "root ::= (" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe("grammar");
  });

  it("chat_template_kwargs reach the template (Qwen3's enable_thinking)", async () => {
    const messages = [{ role: "user", content: "Hi" }];
    const usage = async (extra: object) =>
      (
        (await (await q.post("/v1/chat/completions", { messages, max_tokens: 1, ...extra })).json()) as {
          usage: { prompt_tokens: number };
        }
      ).usage.prompt_tokens;
    const plain = await usage({});
    const off = await usage({ chat_template_kwargs: { enable_thinking: false } });
    const expected = qwen.tokenizer.encode(
      qwen.chatTemplate!.render({ messages, addGenerationPrompt: true, kwargs: { enable_thinking: false } }),
      { parseSpecial: true },
    ).length;
    expect(off).toBe(expected);
    expect(off).toBeGreaterThan(plain); // the empty <think></think> block
    const bad = await q.post("/v1/chat/completions", { messages, chat_template_kwargs: { messages: [] } });
    expect(bad.status).toBe(400);
  });

  it("json_schema output on Qwen3 validates against the schema (ajv)", async () => {
    const schema = {
      type: "object",
      properties: {
        city: { type: "string", minLength: 1, maxLength: 10 },
        population: { type: "integer", minimum: 0, maximum: 100000 },
        tags: { type: "array", items: { enum: ["old", "new", "big"] }, maxItems: 3 },
      },
      required: ["city", "population", "tags"],
      additionalProperties: false,
    };
    const validate = new Ajv2020().compile(schema);
    for (let seed = 1; seed <= 3; seed++) {
      const r = await q.client.chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "Describe a city as JSON." }],
        max_tokens: 200,
        temperature: 1,
        seed,
        response_format: { type: "json_schema", json_schema: { name: "city", schema } },
      });
      const text = r.choices[0]!.message.content!;
      expect(r.choices[0]!.finish_reason, text).toBe("stop");
      expect(validate(JSON.parse(text)), text).toBe(true);
    }
  });
});

const weather = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string", maxLength: 12 }, unit: { enum: ["c", "f"] } },
      required: ["city", "unit"],
      additionalProperties: false,
    },
  },
};
const time = {
  type: "function" as const,
  function: {
    name: "get_time",
    parameters: {
      type: "object",
      properties: { zone: { type: "string", maxLength: 8 } },
      required: ["zone"],
      additionalProperties: false,
    },
  },
};

describe("tool calls (Qwen3 template, Hermes <tool_call> format)", () => {
  const messages = [{ role: "user" as const, content: "What is the weather in Paris?" }];
  const validateArgs = new Ajv2020().compile(weather.function.parameters);

  it("tool_choice required: message.tool_calls with arguments that fit the schema", async () => {
    for (let seed = 1; seed <= 3; seed++) {
      const r = await q.client.chat.completions.create({
        model: "m",
        messages,
        tools: [weather, time],
        tool_choice: "required",
        parallel_tool_calls: false,
        max_tokens: 120,
        temperature: 1,
        seed,
      });
      const ch = r.choices[0]!;
      expect(ch.finish_reason).toBe("tool_calls");
      const calls = ch.message.tool_calls!;
      expect(calls).toHaveLength(1);
      const call = calls[0]! as { id: string; type: string; function: { name: string; arguments: string } };
      expect(call.type).toBe("function");
      expect(call.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
      expect(["get_weather", "get_time"]).toContain(call.function.name);
      const args = JSON.parse(call.function.arguments);
      if (call.function.name === "get_weather") expect(validateArgs(args)).toBe(true);
      else expect(typeof args.zone).toBe("string");
    }
  });

  it("a named tool_choice forces that function; streamed deltas rebuild the same call", async () => {
    const body = {
      model: "m",
      messages,
      tools: [weather, time],
      tool_choice: { type: "function" as const, function: { name: "get_weather" } },
      max_tokens: 120,
      temperature: 1,
      seed: 5,
    };
    const whole = await q.client.chat.completions.create(body);
    const call = whole.choices[0]!.message.tool_calls![0]! as {
      function: { name: string; arguments: string };
    };
    expect(call.function.name).toBe("get_weather");
    expect(validateArgs(JSON.parse(call.function.arguments))).toBe(true);

    const stream = await q.client.chat.completions.create({ ...body, stream: true });
    const built: { id?: string; name: string; arguments: string }[] = [];
    let finish: string | null = null;
    for await (const c of stream) {
      const d = c.choices[0];
      if (!d) continue;
      finish = d.finish_reason ?? finish;
      for (const t of d.delta.tool_calls ?? []) {
        built[t.index] ??= { name: "", arguments: "" };
        const b = built[t.index]!;
        if (t.id) b.id = t.id;
        b.name += t.function?.name ?? "";
        b.arguments += t.function?.arguments ?? "";
      }
    }
    expect(finish).toBe("tool_calls");
    expect(built).toHaveLength(1);
    expect(built[0]!.name).toBe("get_weather");
    expect(built[0]!.arguments).toBe(call.function.arguments);

    // The same request through the stream helper of the official client.
    const runner = q.client.chat.completions.stream({ ...body });
    const final = await runner.finalChatCompletion();
    const fc = final.choices[0]!.message.tool_calls![0]! as { function: { name: string } };
    expect(fc.function.name).toBe("get_weather");
  });

  it("a tool result turn renders and generates; bad tool fields are 400s naming them", async () => {
    const r = await q.client.chat.completions.create({
      model: "m",
      tools: [weather],
      messages: [
        ...messages,
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "call_1",
              type: "function",
              function: { name: "get_weather", arguments: '{"city":"Paris","unit":"c"}' },
            },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: '{"temp": 21}' },
      ],
      max_tokens: 4,
      temperature: 0,
    });
    expect(r.usage!.prompt_tokens).toBeGreaterThan(30);
    for (const [body, param] of [
      [{ messages, tools: [{ type: "function", function: {} }] }, "tools[0].function.name"],
      [
        { messages, tools: [weather], tool_choice: { type: "function", function: { name: "nope" } } },
        "tool_choice",
      ],
      [{ messages, tool_choice: "required" }, "tool_choice"],
    ] as const) {
      const res = await q.post("/v1/chat/completions", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(((await res.json()) as { error: { param: string } }).error.param).toContain(param);
    }
  });

  it("Llama 3.1's template: a forced call in its JSON format comes back as tool_calls", async () => {
    const path = await writeChatModel(dir, {
      arch: "llama",
      vocab: "ggml-vocab-llama-bpe.gguf",
      template: "meta-llama-Llama-3.1-8B-Instruct.jinja",
    });
    const llama = await Model.load(path, { runtime });
    const l = await start({ model: llama, parallel: 1, contextOptions: { nCtx: 2048 } });
    try {
      const body = {
        model: "m",
        messages,
        tools: [weather, time],
        tool_choice: "required" as const,
        max_tokens: 120,
        temperature: 1,
        seed: 2,
      };
      const r = await l.client.chat.completions.create(body);
      expect(r.choices[0]!.finish_reason).toBe("tool_calls");
      const call = r.choices[0]!.message.tool_calls![0]! as { function: { name: string; arguments: string } };
      expect(["get_weather", "get_time"]).toContain(call.function.name);
      expect(typeof JSON.parse(call.function.arguments)).toBe("object");
      let args = "";
      for await (const c of await l.client.chat.completions.create({ ...body, stream: true }))
        for (const t of c.choices[0]?.delta.tool_calls ?? []) args += t.function?.arguments ?? "";
      expect(args).toBe(call.function.arguments);
    } finally {
      await l.server.close();
      llama.dispose();
    }
  });

  it("a template without a tool format gets the generic JSON format: a required call comes back as tool_calls", async () => {
    const chat = await Model.load(CHAT_MODEL, { runtime });
    const c = await start({ model: chat, parallel: 1, contextOptions: { nCtx: 1024 } });
    try {
      const res = await c.post("/v1/chat/completions", {
        messages,
        tools: [weather],
        tool_choice: "required",
        max_tokens: 200,
        temperature: 0,
      });
      const j = (await res.json()) as {
        choices: { finish_reason: string; message: { tool_calls?: { function: { name: string } }[] } }[];
      };
      expect(res.status, JSON.stringify(j)).toBe(200);
      expect(j.choices[0]!.message.tool_calls?.[0]?.function.name).toBe("get_weather");
    } finally {
      await c.server.close();
      chat.dispose();
    }
  });
});
