import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Model } from "@minfer/engine";
import { ChatTemplate } from "@minfer/tokenizer";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { SERVER_LIMITS } from "./limits.js";
import { isOpenAiError, rawRequest } from "./raw-http.js";
import { cpuRuntime, FIXTURES, type Running, STORIES, start, until } from "./test-helpers.js";

// Regression tests of issue 30: what a misbehaving client could do to the server, each answered
// with an OpenAI error object and the server still serving.

let runtime: Awaited<ReturnType<typeof cpuRuntime>>;
let stories: Model;
let r: Running;
let template: ChatTemplate;

/** Bounds short enough for a test to wait them out. */
const LIMITS = {
  headersTimeoutMs: 400,
  requestTimeoutMs: 800,
  keepAliveTimeoutMs: 300,
  connectionsPerClient: 16,
};

beforeAll(async () => {
  runtime = await cpuRuntime();
  const { Model } = await import("@minfer/engine");
  stories = await Model.load(STORIES, { runtime });
  const qwen3 = readFileSync(join(FIXTURES, "templates/Qwen-Qwen3-0.6B.jinja"), "utf8");
  template = ChatTemplate.parse(qwen3, "qwen3");
  r = await start({
    model: stories,
    parallel: 2,
    contextOptions: { nCtx: 512 },
    limits: LIMITS,
    chatTemplate: template,
  });
  await r.server.ready;
});
afterAll(async () => {
  await r?.server.close();
  stories?.dispose();
  runtime?.dispose();
});

const json = (s: string) => {
  try {
    return JSON.parse(s) as unknown;
  } catch {
    return undefined;
  }
};

const post = (path: string, body: string, extra = "") =>
  `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

describe("request bodies", () => {
  const deep = (n: number) => `${"[".repeat(n)}1${"]".repeat(n)}`;

  it("a body nested 5000 levels deep is a 400 naming the bound, on every route and field", async () => {
    for (const [path, field] of [
      ["/v1/completions", "temperature"],
      ["/v1/completions", "stream"],
      ["/v1/chat/completions", "max_tokens"],
      ["/tokenize", "add_special"],
      ["/detokenize", "tokens"],
    ] as const) {
      const body = `{"prompt":"hi","messages":[{"role":"user","content":"hi"}],"content":"hi","${field}":${deep(5000)}}`;
      const res = await r.post(path, body);
      const b = (await res.json()) as { error: { code: string; message: string } };
      expect(res.status, `${path} ${field}`).toBe(400);
      expect(b.error.code).toBe("nesting_too_deep");
      expect(b.error.message).toContain(`${SERVER_LIMITS.jsonDepth} levels`);
    }
  });

  it("a value nested within the bound is quoted shortly in the 400, not serialised whole", async () => {
    const res = await r.post("/v1/completions", `{"prompt":"hi","temperature":${deep(60)}}`);
    expect(res.status).toBe(400);
    const b = (await res.json()) as { error: { message: string; param: string } };
    expect(b.error.param).toBe("temperature");
    expect(b.error.message.length).toBeLessThan(200);
  });

  it("a 7 MB bad value is not echoed back: the 400 quotes a bounded prefix", async () => {
    const huge = "x".repeat(7 * 1024 * 1024);
    for (const body of [
      { prompt: "hi", temperature: huge },
      { prompt: "hi", logit_bias: { [huge.slice(0, 1_000_000)]: 1 } },
    ]) {
      const res = await r.post("/v1/completions", JSON.stringify(body));
      expect(res.status).toBe(400);
      const text = await res.text();
      expect(text.length).toBeLessThan(1000);
      expect(isOpenAiError(json(text))).toBe(true);
    }
  });

  it("a prompt too large for any slot is refused by its size, before it is tokenized", async () => {
    const encode = vi.spyOn(stories.tokenizer, "encode");
    const encodeAsync = vi.spyOn(stories.tokenizer, "encodeAsync");
    try {
      // Within the server's prompt bound, but more bytes than a slot's tokens could hold.
      const res = await r.post("/v1/completions", JSON.stringify({ prompt: "Once ".repeat(200_000) }));
      expect(res.status).toBe(400);
      const b = (await res.json()) as { error: { code: string; message: string } };
      expect(b.error.code).toBe("context_length_exceeded");
      expect(b.error.message).toMatch(
        /^the prompt \(1000000 bytes, at least \d+ tokens\) exceeds the available context size/,
      );
      // Past the server's prompt bound (7 MB): refused on every route that tokenizes.
      for (const [path, body] of [
        ["/tokenize", { content: "Once ".repeat(1_400_000) }],
        ["/v1/completions", { prompt: "Once ".repeat(1_400_000) }],
        ["/v1/chat/completions", { messages: [{ role: "user", content: "Once ".repeat(1_400_000) }] }],
      ] as const) {
        const tok = await r.post(path, JSON.stringify(body));
        expect(tok.status, path).toBe(400);
        const e = (await tok.json()) as { error: { code: string } };
        expect(e.error.code).toBe("prompt_too_large");
      }
      expect(encode).not.toHaveBeenCalled();
      expect(encodeAsync).not.toHaveBeenCalled();
    } finally {
      encode.mockRestore();
      encodeAsync.mockRestore();
    }
  });

  it("a long text is tokenized a slice at a time: /health answers while it is", async () => {
    const content = "Once upon a time, there was a little girl named Lily. ".repeat(8000);
    const encodeAsync = vi.spyOn(stories.tokenizer, "encodeAsync");
    const order: string[] = [];
    try {
      const tokenize = r.post("/tokenize", JSON.stringify({ content })).then(async (x) => {
        order.push("tokenize");
        return x.json();
      });
      // Once tokenizing has begun (or, were it done in one go, ended), ask for /health.
      await until(() => encodeAsync.mock.calls.length > 0 || order.length > 0, 5000, "tokenizing");
      await fetch(`${r.url}/health`).then(() => order.push("health"));
      const out = (await tokenize) as { tokens: number[] };
      expect(out.tokens).toEqual(
        stories.tokenizer.encode(content, { addSpecial: false, parseSpecial: true }),
      );
      expect(order).toEqual(["health", "tokenize"]);
    } finally {
      encodeAsync.mockRestore();
    }
  });

  it("a long token list is decoded a slice at a time, as the tokenizer decodes it", async () => {
    const tokens = Array.from({ length: 300_000 }, (_, i) => (i * 7919) % stories.hparams.nVocab);
    const order: string[] = [];
    const decode = vi.spyOn(stories.tokenizer, "decode");
    try {
      const detok = r.post("/detokenize", { tokens }).then(async (x) => {
        order.push("detokenize");
        return (await x.json()) as { content: string };
      });
      await new Promise((res) => setTimeout(res, 30));
      await fetch(`${r.url}/health`).then(() => order.push("health"));
      const out = await detok;
      expect(decode).not.toHaveBeenCalled();
      expect(out.content).toBe(stories.tokenizer.decode(tokens));
      expect(order).toEqual(["health", "detokenize"]);
    } finally {
      decode.mockRestore();
    }
  });
});

describe("chat templates and grammars", () => {
  it("a long conversation is rendered off the event loop, as the template renders it", async () => {
    // (ending with the user's message: a last assistant message would be continued, not closed)
    const messages = Array.from({ length: 6001 }, (_, i) => ({
      role: i % 2 ? "assistant" : "user",
      content: `m${i}`,
    }));
    const order: string[] = [];
    const rendering = r.post("/apply-template", { messages }).then(async (x) => {
      order.push("apply-template");
      return (await x.json()) as { prompt: string };
    });
    await new Promise((res) => setTimeout(res, 30));
    await fetch(`${r.url}/health`).then(() => order.push("health"));
    const out = await rendering;
    expect(out.prompt).toBe(
      template.render({ messages, addGenerationPrompt: true, bosToken: "", eosToken: "</s>", kwargs: {} }),
    );
    expect(order).toEqual(["health", "apply-template"]);
  });

  it("a grammar or JSON Schema past the grammar bound is refused before it is compiled", async () => {
    const big = `root ::= ${Array.from({ length: 6000 }, (_, i) => `"w${i}"`).join(" | ")}`;
    const g = await r.post("/v1/completions", { prompt: "x", grammar: big });
    expect(g.status).toBe(400);
    expect(
      ((await g.json()) as { error: { code: string; param: string; message: string } }).error,
    ).toMatchObject({
      code: "grammar_too_large",
      param: "grammar",
      message: expect.stringMatching(/the grammar is \d+ bytes/),
    });
    const properties = Object.fromEntries(
      Array.from({ length: 3000 }, (_, i) => [`p${i}`, { type: "integer" }]),
    );
    const js = await r.post("/v1/completions", {
      prompt: "x",
      response_format: {
        type: "json_schema",
        json_schema: { name: "s", schema: { type: "object", properties } },
      },
    });
    expect(js.status).toBe(400);
    const je = ((await js.json()) as { error: { code: string; message: string } }).error;
    expect(je.code).toBe("grammar_too_large");
    // Refused on the schema's own size, before it was converted.
    expect(je.message).toMatch(/the JSON Schema is \d+ bytes/);
  });
});

describe("the HTTP layer", () => {
  it("a body that never completes is cut at the request bound with a 408", async () => {
    const res = await rawRequest(
      r.url,
      post("/v1/completions", `{"prompt":"hi","max_tokens":1}`).slice(0, -20),
    );
    expect(res.closed).toBe(true);
    expect(res.status).toBe(408);
    expect(isOpenAiError(json(res.body))).toBe(true);
    expect(res.ms).toBeGreaterThanOrEqual(LIMITS.requestTimeoutMs - 50);
    expect(res.ms).toBeLessThan(LIMITS.requestTimeoutMs + 3000);
  });

  it("headers that never complete are cut at the header bound with a 408", async () => {
    const res = await rawRequest(r.url, "POST /v1/completions HTTP/1.1\r\nhost: x\r\n");
    expect(res.status).toBe(408);
    expect(isOpenAiError(json(res.body))).toBe(true);
    expect(res.ms).toBeGreaterThanOrEqual(LIMITS.headersTimeoutMs - 50);
    expect(res.ms).toBeLessThan(LIMITS.requestTimeoutMs + 3000);
  });

  it("an idle kept-alive connection is closed after the keep-alive bound", async () => {
    const res = await rawRequest(r.url, "GET /health HTTP/1.1\r\nhost: x\r\n\r\n");
    expect(res.status).toBe(200);
    expect(res.closed).toBe(true);
    expect(res.ms).toBeLessThan(LIMITS.keepAliveTimeoutMs + 3000);
  });

  it("one client holds at most connectionsPerClient connections; one more is a 429", async () => {
    const held = await Promise.all(
      Array.from({ length: LIMITS.connectionsPerClient }, () => {
        let socket!: import("node:net").Socket;
        const done = rawRequest(r.url, "GET /health HTTP/1.1\r\nhost: x\r\n", {
          waitMs: 1000,
          onSocket: (s) => {
            socket = s;
          },
        });
        return new Promise<{ done: typeof done; socket: import("node:net").Socket }>((res) =>
          socket.once("connect", () => res({ done, socket })),
        );
      }),
    );
    const extra = await rawRequest(r.url, "GET /health HTTP/1.1\r\nhost: x\r\n\r\n");
    expect(extra.status).toBe(429);
    expect(extra.headers["retry-after"]).toBe("1");
    expect((json(extra.body) as { error?: { code: string } } | undefined)?.error?.code).toBe(
      "too_many_connections",
    );
    for (const h of held) h.socket.destroy();
    await Promise.all(held.map((h) => h.done));
    await until(async () => (await fetch(`${r.url}/health`)).status === 200, 3000, "served again");
  });

  it("malformed requests get OpenAI error objects with their status, never fastify's", async () => {
    const cases: [string, number][] = [
      ["GET /v1/models/%zz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n", 400],
      [`POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-length: -1\r\n\r\n`, 400],
      ["FOO / HTTP/1.1\r\nhost: x\r\n\r\n", 400],
      [`GET /health HTTP/1.1\r\nhost: x\r\nx-big: ${"a".repeat(SERVER_LIMITS.headerBytes)}\r\n\r\n`, 431],
      ["CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\r\n", 405],
      ["GET /health HTTP/1.1\r\nconnection: close\r\n\r\n", 400],
      [post("/v1/completions", `{"prompt":"${"z".repeat(9 * 1024 * 1024)}"}`, "connection: close\r\n"), 413],
      [post("/v1/completions", `{"prompt":`, "connection: close\r\n"), 400],
      [post("/v1/completions", "[1,2]", "connection: close\r\n"), 400],
      [
        "POST /v1/completions HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: text/xml\r\ncontent-length: 2\r\n\r\nab",
        415,
      ],
    ];
    for (const [text, status] of cases) {
      const res = await rawRequest(r.url, text, { waitMs: 3000 });
      expect(res.status, text.slice(0, 40)).toBe(status);
      expect(isOpenAiError(json(res.body)), `${text.slice(0, 40)} → ${res.body}`).toBe(true);
    }
  });

  it("a 401 says how to authenticate (WWW-Authenticate)", async () => {
    const k = await start({ model: stories, parallel: 1, contextOptions: { nCtx: 64 }, apiKey: "k" });
    try {
      const res = await fetch(`${k.url}/v1/models`);
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
      expect(isOpenAiError(await res.json())).toBe(true);
    } finally {
      await k.server.close();
    }
  });

  it("a stream honours Connection: close: the socket is closed after [DONE]", async () => {
    const body = JSON.stringify({ prompt: "Once", max_tokens: 4, stream: true });
    const res = await rawRequest(r.url, post("/v1/completions", body, "connection: close\r\n"));
    expect(res.status).toBe(200);
    expect(res.text).toContain("data: [DONE]");
    expect(res.headers.connection).toBe("close");
    expect(res.closed).toBe(true);
    expect(res.ms).toBeLessThan(3000);
  });
});

describe("slots and usage", () => {
  it("prompt and completion together fill a slot's context exactly, not one more", async () => {
    const s = await start({ model: stories, parallel: 1, contextOptions: { nCtx: 64 } });
    try {
      const out = await s.client.completions.create({
        model: "m",
        prompt: "Once upon a time",
        max_tokens: 1000,
        temperature: 1,
        seed: 3,
        logit_bias: { "2": -100 },
      });
      expect(out.usage!.total_tokens).toBe(64);
      expect(out.choices[0]!.finish_reason).toBe("length");
      // An idle slot still shows its last request, as llama-server's /slots does.
      const slots = (await (await fetch(`${s.url}/slots`)).json()) as { n_decoded: number; state: string }[];
      expect(slots[0]!.state).toBe("idle");
      expect(slots[0]!.n_decoded).toBe(out.usage!.completion_tokens);
    } finally {
      await s.server.close();
    }
  });
});

describe("shutting down", () => {
  it("requests still running at the drain bound are told the server is shutting down", async () => {
    const s = await start({ model: stories, parallel: 1, contextOptions: { nCtx: 4096 } });
    const long = {
      prompt: "Once upon a time",
      max_tokens: 100_000,
      temperature: 1,
      seed: 5,
      logit_bias: { "2": -100 },
    };
    const streamed = s.post("/v1/completions", { ...long, stream: true }).then((x) => x.text());
    const whole = s
      .post("/v1/completions", long)
      .then(async (x) => ({ status: x.status, body: await x.json() }));
    await until(
      () => s.server.batcher.busy === 1 && s.server.batcher.waiting === 1,
      5000,
      "one running, one queued",
    );
    const drained = s.server.drain(0.2);
    const late = await rawRequest(s.url, post("/v1/completions", JSON.stringify({ prompt: "x" })), {
      waitMs: 3000,
    });
    expect(await drained).toBe(false);
    const text = await streamed;
    const events = text
      .split("\n\n")
      .filter((e) => e.startsWith("data: "))
      .map((e) => e.slice(6));
    const last = json(events.at(-1)!) as { error: { code: string; type: string } };
    expect(isOpenAiError(last)).toBe(true);
    expect(last.error.code).toBe("shutting_down");
    const w = await whole;
    expect(w.status).toBe(503);
    expect((w.body as { error: { code: string } }).error.code).toBe("shutting_down");
    // Asked while draining on a new connection: refused, or answered with the same 503.
    if (late.status !== 0) {
      expect(late.status).toBe(503);
      expect(isOpenAiError(json(late.body))).toBe(true);
    }
  });
});
