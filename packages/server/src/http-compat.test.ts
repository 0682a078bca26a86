import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Running, start, useStories } from "./test-helpers.js";

// What a client of llama-server meets at the HTTP level: CORS for browsers, the key as
// `X-Api-Key` too, an `authentication_error` without it, the routes without /v1 and a model by id.

const stories = useStories();
let r: Running;

beforeAll(async () => {
  r = await start({ model: stories(), parallel: 1, contextOptions: { nCtx: 256 }, apiKey: "k" });
});

afterAll(async () => {
  await r?.server.close();
});

const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${r.url}${path}`, { headers: { authorization: "Bearer k", ...headers } });

describe("HTTP as llama-server serves it", () => {
  it("answers a CORS preflight without the key, and names the origin on every response (streams too)", async () => {
    const pre = await fetch(`${r.url}/v1/chat/completions`, {
      method: "OPTIONS",
      headers: {
        origin: "http://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
      },
    });
    // (llama-server's answer: 200, its methods, any header)
    expect(pre.status).toBe(200);
    expect(pre.headers.get("access-control-allow-origin")).toBe("http://app.example");
    expect(pre.headers.get("access-control-allow-methods")).toBe("GET, POST, DELETE, OPTIONS");
    expect(pre.headers.get("access-control-allow-credentials")).toBe("true");
    expect(pre.headers.get("access-control-allow-headers")).toBe("*");
    const models = await get("/v1/models", { origin: "http://app.example" });
    expect(models.headers.get("access-control-allow-origin")).toBe("http://app.example");
    const stream = await r.post(
      "/v1/completions",
      { prompt: "Once", max_tokens: 2, stream: true },
      { origin: "http://app.example" },
    );
    expect(stream.headers.get("access-control-allow-origin")).toBe("http://app.example");
    expect(await stream.text()).toContain("data: [DONE]");
    expect((await fetch(`${r.url}/health`)).headers.get("access-control-allow-origin")).toBe("*");
  });

  it("takes the key as X-Api-Key; without one it is a 401 authentication_error", async () => {
    const ok = await fetch(`${r.url}/v1/models`, { headers: { "x-api-key": "k" } });
    expect(ok.status).toBe(200);
    const no = await fetch(`${r.url}/v1/models`, { headers: { "x-api-key": "wrong" } });
    expect(no.status).toBe(401);
    const body = (await no.json()) as { error: { type: string; code: string } };
    expect(body.error).toMatchObject({ type: "authentication_error", code: "invalid_api_key" });
  });

  it("serves chat and models without /v1 too, /v1/health, and a model by its id", async () => {
    const list = (await (await get("/models")).json()) as { data: { id: string }[] };
    const id = list.data[0]!.id;
    expect(((await (await get(`/v1/models/${id}`)).json()) as { id: string }).id).toBe(id);
    expect(((await (await get(`/models/${id}`)).json()) as { id: string }).id).toBe(id);
    const missing = await get("/v1/models/nope");
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("model_not_found");
    expect((await fetch(`${r.url}/v1/health`)).status).toBe(200); // no key: public, as /health
    // (stories260K has no chat template: ChatML, as llama-server falls back to)
    const chat = await r.post("/chat/completions", {
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 2,
    });
    expect(((await chat.json()) as { object: string }).object).toBe("chat.completion");
    const t = await r.post("/apply-template", { messages: [{ role: "user", content: "hi" }] });
    expect(((await t.json()) as { prompt: string }).prompt).toBe(
      "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    );
  });

  it("SentencePiece text keeps the first piece's space, as llama-server's (completions, streams, /detokenize)", async () => {
    const tok = stories().tokenizer;
    expect(tok.tokenText(263)).toBe("\u2581w");
    const d = (await (await r.post("/detokenize", { tokens: [263] })).json()) as { content: string };
    expect(d.content).toBe(" w");
    const body = { prompt: "Once upon a time,", max_tokens: 6, temperature: 0, logprobs: 0 };
    const c = (await (await r.post("/v1/completions", body)).json()) as {
      choices: { text: string; logprobs: { tokens: string[] } }[];
    };
    const text = c.choices[0]!.text;
    expect(text.startsWith(" ")).toBe(true);
    expect(text).toBe(c.choices[0]!.logprobs.tokens.join(""));
    const sse = await (await r.post("/v1/completions", { ...body, stream: true })).text();
    const streamed = sse
      .split("\n\n")
      .filter((l) => l.startsWith("data: {"))
      .map((l) => (JSON.parse(l.slice(6)) as { choices: { text: string }[] }).choices[0]?.text ?? "")
      .join("");
    expect(streamed).toBe(text);
  });

  it("--cors-origins: localhost only, or a list; another origin gets no CORS header", async () => {
    for (const [origins, allowed, refused] of [
      ["localhost", ["http://localhost:3000", "http://127.0.0.1:8080"], ["http://evil.example"]],
      [
        "https://app.example,https://b.example",
        ["https://b.example"],
        ["https://c.example", "http://localhost"],
      ],
    ] as const) {
      const c = await start({
        model: stories(),
        parallel: 1,
        contextOptions: { nCtx: 64 },
        corsOrigins: origins,
      });
      try {
        for (const origin of allowed) {
          const res = await fetch(`${c.url}/health`, { headers: { origin } });
          expect(res.headers.get("access-control-allow-origin")).toBe(origin);
        }
        for (const origin of refused) {
          const res = await fetch(`${c.url}/health`, { headers: { origin } });
          expect(res.headers.get("access-control-allow-origin"), origin).toBeNull();
        }
      } finally {
        await c.server.close();
      }
    }
    await expect(start({ model: stories(), corsOrigins: "ftp://x" })).rejects.toThrow(/corsOrigins/);
  });
});
