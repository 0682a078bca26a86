import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { backend } from "@minfer/backend-cpu";
import { Model } from "@minfer/engine";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type MinferServer } from "./index.js";

const CHAT_MODEL = fileURLToPath(new URL("../../cli/models/minfer-default-7m-f16.gguf", import.meta.url));
const STORIES = fileURLToPath(new URL("../../../shared/fixtures/models/stories260K.gguf", import.meta.url));
const STORIES_ALT = "/work/shared/fixtures/models/stories260K.gguf";
const storiesPath = existsSync(STORIES) ? STORIES : STORIES_ALT;

type Runtime = Awaited<ReturnType<NonNullable<ReturnType<typeof backend.devices>[0]>["init"]>>;

let runtime: Runtime;
let chatModel: Model;
let server: MinferServer;
let url: string;
let client: OpenAI;

beforeAll(async () => {
  runtime = await backend.devices()[0]!.init({ threads: 2 });
  chatModel = await Model.load(CHAT_MODEL, { runtime });
  server = createServer({ model: chatModel, parallel: 2, contextOptions: { nCtx: 1024 }, apiKey: "sk-test" });
  url = await server.listen(0, "127.0.0.1");
  client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "sk-test", maxRetries: 0 });
});

afterAll(async () => {
  await server?.close();
  chatModel?.dispose();
  runtime?.dispose();
});

const messages = [{ role: "user" as const, content: "Tell me about the city." }];

describe("chat completions", () => {
  it("answers without streaming, with consistent usage", async () => {
    const r = await client.chat.completions.create({ model: "x", messages, max_tokens: 24, temperature: 0 });
    expect(r.object).toBe("chat.completion");
    expect(r.choices[0]!.message.role).toBe("assistant");
    expect(r.choices[0]!.message.content!.length).toBeGreaterThan(0);
    const u = r.usage!;
    expect(u.prompt_tokens).toBeGreaterThan(0);
    expect(u.completion_tokens).toBeGreaterThan(0);
    expect(u.completion_tokens).toBeLessThanOrEqual(24);
    expect(u.total_tokens).toBe(u.prompt_tokens + u.completion_tokens);
    expect(["stop", "length"]).toContain(r.choices[0]!.finish_reason);
  });

  it("streams the same greedy text, role first, finish_reason last, then [DONE]", async () => {
    const body = { model: "x", messages, max_tokens: 32, temperature: 0, seed: 7 };
    const whole = await client.chat.completions.create(body);
    const stream = await client.chat.completions.create({ ...body, stream: true });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks[0]!.choices[0]!.delta.role).toBe("assistant");
    expect(chunks[0]!.choices[0]!.delta.content).toBeNull(); // llama-server's first delta
    expect(chunks[0]!.system_fingerprint).toBe("b-minfer");
    expect(whole.system_fingerprint).toBe("b-minfer");
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    expect(text).toBe(whole.choices[0]!.message.content);
    const last = chunks[chunks.length - 1]!;
    expect(last.choices[0]!.finish_reason).toBe(whole.choices[0]!.finish_reason);
    for (const c of chunks.slice(0, -1)) expect(c.choices[0]!.finish_reason).toBeNull();

    // The raw stream ends with data: [DONE].
    const raw = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sk-test" },
      body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }),
    });
    expect(raw.headers.get("content-type")).toContain("text/event-stream");
    const sse = await raw.text();
    expect(sse.endsWith("data: [DONE]\n\n")).toBe(true);
    const events = sse.split("\n\n").filter(Boolean);
    const usageChunk = JSON.parse(events[events.length - 2]!.slice(6));
    expect(usageChunk.usage.total_tokens).toBe(whole.usage!.total_tokens);
  });

  it("reports cached prompt tokens on a repeated prompt", async () => {
    const body = { model: "x", messages, max_tokens: 4, temperature: 0 };
    await client.chat.completions.create(body);
    const r = await client.chat.completions.create(body);
    expect(r.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThan(0);
  });

  it("max_tokens ends with finish_reason length", async () => {
    const r = await client.chat.completions.create({ model: "x", messages, max_tokens: 3, temperature: 0 });
    expect(r.choices[0]!.finish_reason).toBe("length");
    expect(r.usage!.completion_tokens).toBe(3);
    const r2 = await client.chat.completions.create({
      model: "x",
      messages,
      max_completion_tokens: 2,
      temperature: 0,
    });
    expect(r2.usage!.completion_tokens).toBe(2);
  });

  it("stops at a stop string, which is not returned", async () => {
    const free = await client.chat.completions.create({
      model: "x",
      messages,
      max_tokens: 40,
      temperature: 0,
    });
    const text = free.choices[0]!.message.content!;
    // A stop string taken from the middle of the free text: the stopped text is what precedes it.
    const at = text.indexOf(" ", 8);
    expect(at).toBeGreaterThan(0);
    const stop = text.slice(at, at + 3);
    const r = await client.chat.completions.create({
      model: "x",
      messages,
      max_tokens: 40,
      temperature: 0,
      stop,
    });
    expect(r.choices[0]!.finish_reason).toBe("stop");
    expect(r.choices[0]!.message.content).toBe(text.slice(0, text.indexOf(stop)));
    const r2 = await client.chat.completions.create({
      model: "x",
      messages,
      max_tokens: 40,
      temperature: 0,
      stop: ["@@never@@", stop],
    });
    expect(r2.choices[0]!.message.content).toBe(r.choices[0]!.message.content);
  });

  it("sampling with a seed is reproducible", async () => {
    const body = { model: "x", messages, max_tokens: 16, temperature: 1, seed: 42, top_p: 0.9 };
    const a = await client.chat.completions.create(body);
    const b = await client.chat.completions.create(body);
    expect(a.choices[0]!.message.content).toBe(b.choices[0]!.message.content);
  });

  it("response_format json_schema gives JSON with the required keys", async () => {
    const schema = {
      type: "object",
      properties: {
        name: { type: "string", maxLength: 12 },
        age: { type: "integer", minimum: 0, maximum: 150 },
      },
      required: ["name", "age"],
      additionalProperties: false,
    };
    const r = await client.chat.completions.create({
      model: "x",
      messages,
      max_tokens: 80,
      temperature: 0,
      response_format: { type: "json_schema", json_schema: { name: "person", schema } },
    });
    const value = JSON.parse(r.choices[0]!.message.content!);
    expect(Object.keys(value).sort()).toEqual(["age", "name"]);
    expect(typeof value.name).toBe("string");
    expect(Number.isInteger(value.age)).toBe(true);

    const obj = await client.chat.completions.create({
      model: "x",
      messages,
      max_tokens: 60,
      temperature: 0,
      response_format: { type: "json_object" },
    });
    const content = obj.choices[0]!.message.content!;
    expect(content.trimStart().startsWith("{")).toBe(true);
    if (obj.choices[0]!.finish_reason === "stop") expect(typeof JSON.parse(content)).toBe("object");
  });

  it("a schema that cannot be enforced is a 400, not free text", async () => {
    const err = await client.chat.completions
      .create({
        model: "x",
        messages,
        response_format: {
          type: "json_schema",
          json_schema: { name: "bad", schema: { type: "object", properties: { a: { $ref: "#/nowhere" } } } },
        },
      })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.status).toBe(400);
  });
});

describe("bad requests", () => {
  const post = (body: unknown, path = "/v1/chat/completions", key = "sk-test") =>
    fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });

  it.each([
    [{ messages, temperature: "hot" }, "temperature"],
    [{ messages, max_tokens: -1 }, "max_tokens"],
    [{ messages, stop: 5 }, "stop"],
    [{ messages, logit_bias: { 5: "high" } }, "logit_bias"],
    [{ messages: [{ role: "wizard", content: "hi" }] }, "messages[0].role"],
    [{}, "messages"],
    [{ messages, response_format: { type: "yaml" } }, "response_format.type"],
    [{ messages, n: 17 }, "n"],
  ])("%j → 400 naming %s", async (body, param) => {
    const r = await post(body);
    expect(r.status).toBe(400);
    const j = (await r.json()) as { error: { message: string; type: string; param: string; code: string } };
    expect(j.error.type).toBe("invalid_request_error");
    expect(j.error.param).toBe(param);
    expect(j.error.message).toContain(param);
  });

  it("malformed JSON and non-object bodies are 400s, and the server lives on", async () => {
    expect((await post("{not json")).status).toBe(400);
    expect((await post("[1,2]")).status).toBe(400);
    expect((await post("null")).status).toBe(400);
    expect((await post({ prompt: 5 }, "/v1/completions")).status).toBe(400);
    expect((await fetch(`${url}/health`)).status).toBe(200);
  });

  it("unknown route is a 404 error object", async () => {
    const r = await fetch(`${url}/v1/nothing`, { headers: { authorization: "Bearer sk-test" } });
    expect(r.status).toBe(404);
    expect(((await r.json()) as { error: unknown }).error).toBeTruthy();
  });
});

describe("auth, health, models", () => {
  it("a wrong or missing key is a 401; /health needs none", async () => {
    const wrong = new OpenAI({ baseURL: `${url}/v1`, apiKey: "sk-wrong", maxRetries: 0 });
    const err = await wrong.models.list().catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((await fetch(`${url}/v1/models`)).status).toBe(401);
    const h = await fetch(`${url}/health`);
    expect(h.status).toBe(200);
    expect(await h.json()).toEqual({ status: "ok" });
  });

  it("a model whose slots cannot be set up ends loading with a 500 naming why, not an endless 503", async () => {
    const bad = createServer({ model: chatModel, parallel: 4, contextOptions: { nCtx: 4 } });
    const at = await bad.listen(0, "127.0.0.1");
    try {
      await expect(bad.ready).rejects.toThrow(/a context of 4 tokens cannot be shared by 4 slots/);
      const h = await fetch(`${at}/health`);
      expect(h.status).toBe(500);
      expect(JSON.stringify(await h.json())).toMatch(
        /failed to load: a context of 4 tokens cannot be shared by 4 slots/,
      );
    } finally {
      await bad.close();
    }
  });

  it("/v1/models lists the one model", async () => {
    const list = await client.models.list();
    const ids = list.data.map((m) => m.id);
    expect(ids).toEqual([server.modelId]);
    expect(server.modelId).toBe("minfer-default-7m-f16");
  });
});

describe("completions on a model without a chat template", () => {
  let stories: Model;
  let s2: MinferServer;
  let c2: OpenAI;
  let s2url: string;
  const finished: { finishReason: string; completionTokens: number }[] = [];
  beforeAll(async () => {
    stories = await Model.load(storiesPath, { runtime });
    s2 = createServer({
      model: stories,
      parallel: 1,
      contextOptions: { nCtx: 256 },
      onGeneration: (info) => finished.push(info),
    });
    s2url = await s2.listen(0);
    c2 = new OpenAI({ baseURL: `${s2url}/v1`, apiKey: "none", maxRetries: 0 });
  });
  afterAll(async () => {
    await s2?.close();
    stories?.dispose();
  });

  it("completes, streams the same text, and chats in ChatML (the model has no template of its own)", async () => {
    const body = { model: "stories", prompt: "Once upon a time", max_tokens: 20, temperature: 0 };
    const r = await c2.completions.create(body);
    expect(r.object).toBe("text_completion");
    expect(r.choices[0]!.text.length).toBeGreaterThan(0);
    expect(r.choices[0]!.finish_reason).toBe("length");
    expect(r.usage!.completion_tokens).toBe(20);
    const stream = await c2.completions.create({ ...body, stream: true });
    let text = "";
    let finish: string | null = null;
    for await (const c of stream) {
      text += c.choices[0]!.text;
      finish = c.choices[0]!.finish_reason ?? finish;
    }
    expect(text).toBe(r.choices[0]!.text);
    expect(finish).toBe("length");
    const chat = await c2.chat.completions.create({
      model: "stories",
      messages,
      max_tokens: 3,
      temperature: 0,
    });
    expect(chat.object).toBe("chat.completion");
    const chatml = "<|im_start|>user\nTell me about the city.<|im_end|>\n<|im_start|>assistant\n";
    expect(chat.usage!.prompt_tokens).toBe(stories.tokenizer.encode(chatml).length);
  });

  it("a prompt longer than the context is a 400 naming the context size", async () => {
    // More tokens than the context holds, though its bytes could have fit.
    const err = await c2.completions
      .create({ model: "s", prompt: "Once upon a time ".repeat(80), max_tokens: 4 })
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.error.code).toBe("context_length_exceeded");
    expect(err.message).toMatch(
      /the request \(\d+ prompt tokens\) exceeds the available context size \(256 tokens a slot/,
    );
    // llama-server's type and counts on the error object
    expect(err.error.type).toBe("exceed_context_size_error");
    expect(err.error.n_ctx).toBe(256);
    expect(err.error.n_prompt_tokens).toBeGreaterThanOrEqual(256);
    // So many bytes that even the longest tokens could not fit: refused before tokenizing.
    const big = await c2.completions
      .create({ model: "s", prompt: "Once upon a time ".repeat(200), max_tokens: 4 })
      .catch((e) => e);
    expect(big.status).toBe(400);
    expect(big.error.code).toBe("context_length_exceeded");
    expect(big.message).toMatch(
      /the prompt \(3400 bytes, at least \d+ tokens\) exceeds the available context size \(256 tokens a slot/,
    );
    expect([big.error.type, big.error.n_ctx]).toEqual(["exceed_context_size_error", 256]);
  });

  it("a fuzz of malformed bodies: every one a 4xx, the server alive", async () => {
    let seed = 12345;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    const values = [null, true, -1, 1e300, 3.5, "", "x", [], [1], {}, { a: 1 }, [{ role: 1 }], "[DONE]"];
    const fields = [
      "prompt",
      "max_tokens",
      "temperature",
      "top_p",
      "seed",
      "stop",
      "logit_bias",
      "stream",
      "response_format",
      "n",
      "stream_options",
      "top_k",
      "min_p",
      "frobnicate",
      "messages",
      "echo",
      "logprobs",
      "top_logprobs",
      "grammar",
      "cache_prompt",
      "tools",
      "tool_choice",
    ];
    const statuses = new Map<number, number>();
    for (let i = 0; i < 400; i++) {
      const chat = i % 2 === 1;
      const body: Record<string, unknown> = chat ? { messages } : { prompt: "Once" };
      const k = 1 + Math.floor(rand() * 3);
      for (let j = 0; j < k; j++)
        body[fields[Math.floor(rand() * fields.length)]!] = values[Math.floor(rand() * values.length)];
      const r = await fetch(chat ? `${url}/v1/chat/completions` : `${s2url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer sk-test" },
        body:
          i % 10 === 9
            ? JSON.stringify(body).slice(0, -3)
            : JSON.stringify({ ...body, max_tokens: body.max_tokens ?? 2 }),
      });
      const text = await r.text();
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      if (r.status !== 200) {
        expect(r.status, text).toBeGreaterThanOrEqual(400);
        expect(r.status, text).toBeLessThan(500);
        expect(JSON.parse(text).error.message).toBeTruthy();
      }
    }
    // Most random bodies are malformed; every one was refused cleanly.
    expect(statuses.get(400)!).toBeGreaterThan(300);
    expect((await fetch(`${url}/health`)).status).toBe(200);
    expect((await fetch(`${s2url}/health`)).status).toBe(200);
  });

  it("a client that goes away mid-stream aborts its generation; the next request is served", async () => {
    const ac = new AbortController();
    const r = await fetch(`${s2url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "Once", max_tokens: 250, stream: true, temperature: 1, seed: 3 }),
      signal: ac.signal,
    });
    const reader = r.body!.getReader();
    await reader.read();
    const before = finished.length;
    ac.abort();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const next = await c2.completions.create({ model: "s", prompt: "Once", max_tokens: 5, temperature: 0 });
    expect(next.usage!.completion_tokens).toBe(5);
    expect(finished[before]!.finishReason).toBe("abort");
    expect(finished[before]!.completionTokens).toBeLessThan(250);
  });
});

describe("llama-server's text endpoints", () => {
  const post = (path: string, body: unknown, key = "sk-test") =>
    fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
    });

  it("/chat/completions/input_tokens counts the prompt a chat request takes", async () => {
    const r = await client.chat.completions.create({ model: "x", messages, max_tokens: 1, temperature: 0 });
    for (const path of ["/v1/chat/completions/input_tokens", "/chat/completions/input_tokens"]) {
      const n = (await (await post(path, { messages })).json()) as { input_tokens: number };
      expect(n.input_tokens).toBe(r.usage!.prompt_tokens);
    }
    expect((await post("/v1/chat/completions/input_tokens", { messages: [] })).status).toBe(400);
  });

  it("/tokenize and /detokenize agree with the model's tokenizer and invert each other", async () => {
    const text = "The jury said that the city was quiet.";
    const t = (await (await post("/tokenize", { content: text })).json()) as { tokens: number[] };
    expect(t.tokens).toEqual(chatModel.tokenizer.encode(text, { addSpecial: false }));
    const d = (await (await post("/detokenize", { tokens: t.tokens })).json()) as { content: string };
    expect(d.content).toBe(text);
    const p = (await (await post("/tokenize", { content: "The jury", with_pieces: true })).json()) as {
      tokens: { id: number; piece: string }[];
    };
    expect(p.tokens.map((x) => x.piece).join("")).toBe("The jury");
  });

  it("/apply-template renders the chat template with the generation prompt", async () => {
    const r = (await (await post("/apply-template", { messages })).json()) as { prompt: string };
    expect(r.prompt).toBe(
      chatModel.chatTemplate!.render({
        messages,
        addGenerationPrompt: true,
        bosToken: "<|endoftext|>",
        eosToken: "<|endoftext|>",
      }),
    );
  });

  it("refuses bad bodies naming the field, and needs the key", async () => {
    for (const [path, body, param] of [
      ["/tokenize", { content: 3 }, "content"],
      ["/tokenize", { content: "x", extra: 1 }, "extra"],
      ["/detokenize", { tokens: [1, 99999] }, "tokens[1]"],
      ["/detokenize", { tokens: "x" }, "tokens"],
      ["/apply-template", { messages: [] }, "messages"],
    ] as const) {
      const r = await post(path, body);
      expect(r.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      expect(((await r.json()) as { error: { param: string } }).error.param).toBe(param);
    }
    expect((await post("/tokenize", { content: "x" }, "sk-wrong")).status).toBe(401);
  });
});
