import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseChat } from "./request.js";
import { type Running, start, useStories } from "./test-helpers.js";

// What llama-server does with a chat beyond OpenAI's fields: a last assistant message continued
// (prefill, continue_final_message), /apply-template with the chat's fields, built-in template
// names, __verbose, timings and prompt progress in streams, its llamacpp: metrics.

const stories = useStories();
let r: Running;

beforeAll(async () => {
  r = await start({
    model: stories(),
    parallel: 1,
    contextOptions: { nCtx: 512 },
    batchSize: 16,
    chatTemplate: (await import("./templates.js")).chatTemplateArg("llama3"),
    metrics: true,
  });
});

afterAll(async () => {
  await r?.server.close();
});

const user = { role: "user", content: "What is the best book" };
// biome-ignore lint/suspicious/noExplicitAny: the responses are read loosely, field by field
type Loose = Record<string, any>;
const json = async (path: string, body: object) => (await r.post(path, body)).json() as Promise<Loose>;

describe("continuing the last message", () => {
  it("a last assistant message is continued: the generation prompt, then its text; parts joined as llama-server joins them", async () => {
    const head =
      "<|start_header_id|>user<|end_header_id|>\n\nWhat is the best book<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
    const a = await json("/apply-template", { messages: [user, { role: "assistant", content: "Whill" }] });
    expect(a.prompt).toBe(`${head}Whill`);
    const parts = [
      { type: "text", text: "Wh" },
      { type: "text", text: "ill" },
    ];
    const b = await json("/apply-template", { messages: [user, { role: "assistant", content: parts }] });
    expect(b.prompt).toBe(`${head}Wh\n\nill`);
    const c = await json("/apply-template", {
      messages: [user, { role: "assistant", content: "Whill" }],
      continue_final_message: true,
      add_generation_prompt: false,
    });
    expect(c.prompt).toBe(a.prompt);
    // a user message's parts: one newline between them
    const d = await json("/apply-template", { messages: [{ role: "user", content: parts }] });
    expect(d.prompt).toContain("Wh\nill<|eot_id|>");
    const e = await json("/apply-template", { messages: [user], add_generation_prompt: false });
    expect(e.prompt).toBe(head.slice(0, head.indexOf("<|start_header_id|>assistant")));
  });

  it("refuses what cannot be continued, naming the field", () => {
    const two = [user, { role: "assistant", content: "a" }, { role: "assistant", content: "b" }];
    expect(() => parseChat({ messages: two }, 512)).toThrow(/two assistant messages/);
    const both = {
      messages: [user, { role: "assistant", content: "a" }],
      continue_final_message: true,
      add_generation_prompt: true,
    };
    expect(() => parseChat(both, 512)).toThrow(/continue_final_message/);
    expect(() =>
      parseChat({ messages: [user], continue_final_message: true, add_generation_prompt: false }, 512),
    ).toThrow(/must be from the assistant/);
    expect(() => parseChat({ messages: [user], continue_final_message: 3 }, 512)).toThrow(
      /continue_final_message/,
    );
  });

  it("a chat with verbose: true carries __verbose, the prompt as the model reads it", async () => {
    const body = { messages: [{ role: "system", content: "Book" }, user], max_tokens: 2 };
    const v = await json("/v1/chat/completions", { ...body, verbose: true });
    expect(v.__verbose.prompt).toBe(
      "<s> <|start_header_id|>system<|end_header_id|>\n\nBook<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is the best book<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
    );
    expect(v.system_fingerprint).toMatch(/^b/);
    expect(v.timings.predicted_n).toBe(2);
    expect("__verbose" in (await json("/v1/chat/completions", body))).toBe(false);
  });
});

describe("streams with llama-server's extras", () => {
  it("return_progress sends prompt_progress before each chunk of the prompt; the usage chunk has timings", async () => {
    const res = await r.post("/v1/chat/completions", {
      messages: [{ role: "user", content: "This is a test. ".repeat(6) }],
      max_tokens: 3,
      stream: true,
      stream_options: { include_usage: true },
      return_progress: true,
      timings_per_token: true,
    });
    const events = (await res.text())
      .split("\n\n")
      .filter((e) => e.startsWith("data: {"))
      .map((e) => JSON.parse(e.slice(6)));
    const progress = events.filter((e) => e.prompt_progress).map((e) => e.prompt_progress);
    const { total, cache } = progress[0];
    // one report before the prompt is read (the cached prefix counted read), then one a batch of 16
    expect(progress.length).toBe(1 + Math.ceil((total - cache) / 16));
    expect(progress[0].processed).toBe(progress[0].cache);
    expect(progress.at(-1).processed).toBe(total);
    for (let i = 1; i < progress.length; i++)
      expect(progress[i].processed).toBeGreaterThan(progress[i - 1].processed);
    const tokens = events.filter(
      (e) => e.choices?.[0]?.delta?.content !== undefined && e.choices[0].delta.content !== null,
    );
    for (const t of tokens) expect(t.timings.predicted_n).toBeGreaterThan(0);
    const usage = events.find((e) => e.usage);
    expect(usage.timings.predicted_n).toBe(3);
  });
});

describe("llama-server's llamacpp: metrics", () => {
  it("count prefilled and cached prompt tokens and generated tokens as the responses' timings do", async () => {
    const scrape = async () => {
      const text = await (await fetch(`${r.url}/metrics`)).text();
      const m = new Map<string, number>();
      for (const line of text.split("\n"))
        if (line.startsWith("llamacpp:") && !line.includes("{"))
          m.set(line.split(" ")[0]!, Number(line.split(" ")[1]));
      return { m, text };
    };
    const before = (await scrape()).m;
    let prompt = 0;
    let cached = 0;
    let predicted = 0;
    for (let i = 0; i < 2; i++) {
      const res = await json("/completion", {
        prompt: "the quick brown fox jumps over the lazy dog",
        n_predict: 4,
      });
      prompt += res.timings.prompt_n;
      cached += res.timings.cache_n;
      predicted += res.timings.predicted_n;
    }
    expect(cached).toBeGreaterThan(0);
    const { m, text } = await scrape();
    const d = (k: string) => m.get(`llamacpp:${k}`)! - (before.get(`llamacpp:${k}`) ?? 0);
    expect(d("prompt_tokens_total")).toBe(prompt);
    expect(d("prompt_tokens_cached_total")).toBe(cached);
    expect(d("tokens_predicted_total")).toBe(predicted);
    expect(d("n_decode_total")).toBeGreaterThan(0);
    expect(text).toContain("# TYPE llamacpp:requests_processing gauge");
    const res = await fetch(`${r.url}/metrics`);
    expect(Number(res.headers.get("process-start-time-unix"))).toBeLessThanOrEqual(Date.now() / 1000);
  });
});
