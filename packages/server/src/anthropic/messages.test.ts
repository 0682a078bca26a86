// Anthropic's Messages API (`POST /v1/messages`, `/v1/messages/count_tokens`) through the official
// `@anthropic-ai/sdk` client: plain and streamed answers checked against the same greedy request through
// /v1/chat/completions, the stream's events in the order Anthropic sends them, forced tool calls (the
// Qwen3 template's hermes calls) as tool_use blocks, token counts, and errors as the SDK's typed errors.

import Anthropic from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  API_KEY,
  chatByFetch,
  QUESTION,
  TOO_LONG,
  useClientServers,
  WEATHER_QUESTION,
  WeatherArgs,
  watchIgnoredFields,
} from "../client-fixtures.js";
import { IGNORED_FIELDS_HEADER } from "../index.js";
import type { Running } from "../test-helpers.js";

const servers = useClientServers();
const watched = watchIgnoredFields();

const client = (run: Running, apiKey = API_KEY) =>
  new Anthropic({ baseURL: run.url, apiKey, maxRetries: 0, fetch: watched });

type Event = Anthropic.Messages.RawMessageStreamEvent;
type Params = Anthropic.Messages.MessageCreateParamsNonStreaming;
/** With the sampling fields Anthropic's API takes (and llama-server's seed), which this SDK's types leave out. */
type Sampled = Params & { temperature?: number; top_k?: number; seed?: number };

const create = (run: Running, body: Sampled) => client(run).messages.create(body as Params);
const createStream = (run: Running, body: Sampled) =>
  client(run).messages.create({ ...body, stream: true } as Anthropic.Messages.MessageCreateParamsStreaming);

/** The event types with runs of content_block_delta folded into one `content_block_delta*`. */
function shape(es: Event[]): string[] {
  const out: string[] = [];
  for (const e of es) {
    const t = e.type === "content_block_delta" ? `${e.type}*` : e.type;
    if (out.at(-1) !== t) out.push(t);
  }
  return out;
}

const weather: Anthropic.Messages.Tool = {
  name: "get_weather",
  description: "The weather in a city",
  input_schema: z.toJSONSchema(WeatherArgs) as Anthropic.Messages.Tool.InputSchema,
};
const chatWeather = {
  type: "function",
  function: { name: weather.name, description: weather.description, parameters: weather.input_schema },
};

describe("text", () => {
  it("gives the chat endpoint's greedy answer as one text block, stopped by max_tokens", async () => {
    const s = servers().stories;
    const ref = await chatByFetch(s, {
      messages: [{ role: "user", content: QUESTION }],
      max_tokens: 8,
      temperature: 0,
    });
    const m = await create(s, {
      model: "m",
      max_tokens: 8,
      temperature: 0,
      messages: [{ role: "user", content: QUESTION }],
    });
    expect(m.id).toMatch(/^msg_/);
    expect(m.type).toBe("message");
    expect(m.role).toBe("assistant");
    expect(ref.text.length).toBeGreaterThan(0);
    expect(m.content).toEqual([{ type: "text", text: ref.text, citations: null }]);
    expect(ref.finishReason).toBe("length");
    expect(m.stop_reason).toBe("max_tokens");
    expect(m.stop_sequence).toBeNull();
    // Anthropic's input_tokens leave out the tokens read from the cache.
    expect(m.usage.input_tokens + (m.usage.cache_read_input_tokens ?? 0)).toBe(ref.usage.prompt_tokens);
    expect(m.usage.output_tokens).toBe(8);
  });

  it("reads system (text or blocks), a conversation and content blocks as chat messages", async () => {
    const s = servers().stories;
    const ref = await chatByFetch(s, {
      messages: [
        { role: "system", content: "Be brief.\nTalk about cats." },
        { role: "user", content: "Hello." },
        { role: "assistant", content: "Hi." },
        { role: "user", content: `${QUESTION}\nPlease.` },
      ],
      max_tokens: 6,
      temperature: 0,
      top_k: 5,
    });
    const m = await create(s, {
      model: "m",
      max_tokens: 6,
      temperature: 0,
      top_k: 5,
      system: [
        { type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } },
        { type: "text", text: "Talk about cats." },
      ],
      messages: [
        { role: "user", content: "Hello." },
        { role: "assistant", content: [{ type: "text", text: "Hi." }] },
        {
          role: "user",
          content: [
            { type: "text", text: QUESTION },
            { type: "text", text: "Please." },
          ],
        },
      ],
    });
    expect(m.content).toEqual([{ type: "text", text: ref.text, citations: null }]);
    expect(m.usage.input_tokens + (m.usage.cache_read_input_tokens ?? 0)).toBe(ref.usage.prompt_tokens);
  });

  it("a stop sequence ends the text with stop_reason stop_sequence and names it", async () => {
    const s = servers().stories;
    const long = await chatByFetch(s, {
      messages: [{ role: "user", content: QUESTION }],
      max_tokens: 24,
      temperature: 0,
    });
    // A word of the greedy answer, past its start: the text ends right before it.
    const word = long.text.split(/\s+/).filter((w) => w.length >= 3)[2]!;
    expect(word).toBeDefined();
    const m = await create(s, {
      model: "m",
      max_tokens: 24,
      temperature: 0,
      stop_sequences: [word],
      messages: [{ role: "user", content: QUESTION }],
    });
    expect(m.stop_reason).toBe("stop_sequence");
    expect(m.stop_sequence).toBe(word);
    const text = m.content[0]?.type === "text" ? m.content[0].text : "";
    expect(text).toBe(long.text.slice(0, long.text.indexOf(word)));
  });

  it("streams message_start, one text block of deltas, message_delta and message_stop", async () => {
    const s = servers().stories;
    const args = {
      model: "m",
      max_tokens: 10,
      temperature: 0,
      messages: [{ role: "user" as const, content: QUESTION }],
    };
    const whole = await create(s, args);
    const es: Event[] = [];
    for await (const e of await createStream(s, args)) es.push(e);
    expect(shape(es)).toEqual([
      "message_start",
      "content_block_start",
      "content_block_delta*",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    const start = es[0] as Anthropic.Messages.RawMessageStartEvent;
    expect(start.message.id).toMatch(/^msg_/);
    expect(start.message.content).toEqual([]);
    expect(start.message.stop_reason).toBeNull();
    expect(start.message.usage.output_tokens).toBe(0);
    const deltas = es.filter((e) => e.type === "content_block_delta");
    expect(deltas.length).toBeGreaterThan(1);
    for (const d of deltas) {
      expect(d.index).toBe(0);
      expect(d.delta.type).toBe("text_delta");
    }
    const md = es.find((e) => e.type === "message_delta") as Anthropic.Messages.RawMessageDeltaEvent;
    expect(md.delta.stop_reason).toBe("max_tokens");
    expect(md.usage.output_tokens).toBe(10);
    // The SDK's stream helper makes the same message of them.
    const final = await client(s)
      .messages.stream(args as Params)
      .finalMessage();
    expect(final.content).toEqual(whole.content);
    expect(final.stop_reason).toBe(whole.stop_reason);
    expect(final.usage.output_tokens).toBe(whole.usage.output_tokens);
    expect(final.usage.input_tokens + (final.usage.cache_read_input_tokens ?? 0)).toBe(
      whole.usage.input_tokens + (whole.usage.cache_read_input_tokens ?? 0),
    );
  });

  it("the raw stream names each event as its data's type, with a ping after message_start", async () => {
    const s = servers().stories;
    const r = await fetch(`${s.url}/v1/messages`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-api-key": API_KEY,
        "anthropic-version": "2023-06-01",
      },
      body: JSON.stringify({
        model: "m",
        max_tokens: 4,
        stream: true,
        messages: [{ role: "user", content: "Hi" }],
      }),
    });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/event-stream");
    const frames = (await r.text()).split("\n\n").filter((f) => f !== "");
    const names: string[] = [];
    for (const f of frames) {
      const [ev, data, ...rest] = f.split("\n");
      expect(rest).toEqual([]);
      const name = ev!.replace(/^event: /, "");
      expect(JSON.parse(data!.replace(/^data: /, "")).type).toBe(name);
      names.push(name);
    }
    expect(names.slice(0, 3)).toEqual(["message_start", "ping", "content_block_start"]);
    expect(names.slice(-2)).toEqual(["message_delta", "message_stop"]);
  });
});

describe("tools (Qwen3 template)", () => {
  const ask = {
    model: "m",
    max_tokens: 120,
    temperature: 1,
    seed: 5,
    tools: [weather],
    tool_choice: { type: "tool" as const, name: "get_weather", disable_parallel_tool_use: true },
    messages: [{ role: "user" as const, content: WEATHER_QUESTION }],
  };

  it("tool_choice tool gives a tool_use block with the input chat's call has", async () => {
    const q = servers().qwen;
    const chat = await q.post("/v1/chat/completions", {
      model: "m",
      messages: [{ role: "user", content: WEATHER_QUESTION }],
      tools: [chatWeather],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      parallel_tool_calls: false,
      max_tokens: 120,
      temperature: 1,
      seed: 5,
    });
    const ref = (await chat.json()) as {
      choices: { message: { tool_calls: { function: { arguments: string } }[] } }[];
    };
    const m = await create(q, ask);
    expect(m.stop_reason).toBe("tool_use");
    const uses = m.content.filter((b) => b.type === "tool_use");
    expect(uses).toHaveLength(1);
    const u = uses[0]!;
    expect(u.id).toMatch(/^toolu_/);
    expect(u.name).toBe("get_weather");
    expect(WeatherArgs.safeParse(u.input).success).toBe(true);
    expect(u.input).toEqual(JSON.parse(ref.choices[0]!.message.tool_calls[0]!.function.arguments));
  });

  it("streams the tool_use block as input_json_delta fragments that make its input", async () => {
    const q = servers().qwen;
    const whole = await create(q, ask);
    const es: Event[] = [];
    for await (const e of await createStream(q, ask)) es.push(e);
    const s = shape(es);
    expect(s[0]).toBe("message_start");
    expect(s.slice(-5)).toEqual([
      "content_block_start",
      "content_block_delta*",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    const starts = es.filter((e) => e.type === "content_block_start");
    const toolStart = starts.at(-1) as Anthropic.Messages.RawContentBlockStartEvent;
    expect(toolStart.index).toBe(starts.length - 1); // (blocks are numbered as they start)
    expect(toolStart.content_block).toMatchObject({ type: "tool_use", name: "get_weather", input: {} });
    const json = es
      .filter((e) => e.type === "content_block_delta" && e.index === toolStart.index)
      .map((e) => {
        const d = (e as Anthropic.Messages.RawContentBlockDeltaEvent).delta;
        expect(d.type).toBe("input_json_delta");
        return d.type === "input_json_delta" ? d.partial_json : "";
      });
    expect(json.length).toBeGreaterThan(1);
    const wholeUse = whole.content.find((b) => b.type === "tool_use");
    expect(JSON.parse(json.join(""))).toEqual(wholeUse?.type === "tool_use" && wholeUse.input);
    const final = await client(q)
      .messages.stream(ask as Params)
      .finalMessage();
    // (the same blocks but for the tool_use ids, new every call)
    const noIds = (c: Anthropic.Messages.ContentBlock[]) =>
      c.map((b) => (b.type === "tool_use" ? { ...b, id: "" } : b));
    expect(noIds(final.content)).toEqual(noIds(whole.content));
    expect(final.stop_reason).toBe("tool_use");
  });

  it("reads tool_use and tool_result blocks back as the call and its result", async () => {
    const q = servers().qwen;
    const ref = await chatByFetch(q, {
      messages: [
        { role: "user", content: WEATHER_QUESTION },
        {
          role: "assistant",
          content: "",
          tool_calls: [
            {
              id: "toolu_1",
              type: "function",
              function: { name: "get_weather", arguments: '{"city":"Paris","unit":"c"}' },
            },
          ],
        },
        { role: "tool", tool_call_id: "toolu_1", content: "Sunny, 21 C" },
      ],
      tools: [chatWeather],
      max_tokens: 8,
      temperature: 0,
    });
    const m = await create(q, {
      model: "m",
      max_tokens: 8,
      temperature: 0,
      tools: [weather],
      messages: [
        { role: "user", content: WEATHER_QUESTION },
        {
          role: "assistant",
          content: [
            { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris", unit: "c" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "Sunny, 21 C" }] },
          ],
        },
      ],
    });
    expect(m.usage.input_tokens + (m.usage.cache_read_input_tokens ?? 0)).toBe(ref.usage.prompt_tokens);
    const text = m.content.find((b) => b.type === "text");
    expect(text?.type === "text" ? text.text : "").toBe(ref.text);
  });
});

describe("count_tokens", () => {
  it("counts the prompt as the chat endpoint's input_tokens does", async () => {
    const s = servers().stories;
    const chat = await s.post("/v1/chat/completions/input_tokens", {
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: QUESTION },
      ],
    });
    const want = ((await chat.json()) as { input_tokens: number }).input_tokens;
    const r = await client(s).messages.countTokens({
      model: "m",
      system: "Be brief.",
      messages: [{ role: "user", content: QUESTION }],
    });
    expect(r).toEqual({ input_tokens: want });
  });

  it("thinking disabled renders the prompt with the template's enable_thinking false", async () => {
    const q = servers().qwen;
    const count = async (body: Record<string, unknown>) =>
      ((await (await q.post("/v1/chat/completions/input_tokens", body)).json()) as { input_tokens: number })
        .input_tokens;
    const messages = [{ role: "user" as const, content: QUESTION }];
    const off = await count({ messages, chat_template_kwargs: { enable_thinking: false } });
    // (Qwen3's template writes an empty think block when thinking is off)
    expect(off).toBeGreaterThan(await count({ messages }));
    const r = await client(q).messages.countTokens({ model: "m", messages, thinking: { type: "disabled" } });
    expect(r.input_tokens).toBe(off);
  });
});

describe("errors", () => {
  /** The error a request ends in. */
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (e: unknown) => e,
    );

  it.each([
    [
      "messages[0].content[0].type",
      {
        messages: [
          {
            role: "user",
            content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "AA==" } }],
          },
        ],
      },
    ],
    ["max_tokens", { max_tokens: undefined }],
    ["temperature", { temperature: 1.5 }],
    ["messages[0].role", { messages: [{ role: "system", content: "x" }] }],
    ["tools[0].type", { tools: [{ type: "web_search_20250305", name: "web_search" }] }],
    ["tools[0].input_schema.type", { tools: [{ ...weather, input_schema: { type: "array" } }] }],
    ["tool_choice.name", { tools: [weather], tool_choice: { type: "tool", name: "nope" } }],
    ["stop_sequences", { stop_sequences: [""] }],
  ])("%s: a 400 in Anthropic's shape, as the SDK's BadRequestError", async (param, extra) => {
    const err = await failure(
      client(servers().stories).messages.create({
        model: "m",
        max_tokens: 4,
        messages: [{ role: "user", content: QUESTION }],
        ...extra,
      } as never),
    );
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    const e = err as InstanceType<typeof Anthropic.BadRequestError>;
    expect(e.status).toBe(400);
    expect(e.error).toEqual({
      type: "error",
      error: { type: "invalid_request_error", message: expect.any(String) },
    });
    expect(e.type).toBe("invalid_request_error");
    expect(e.apiMessage).toContain(`${param}:`);
  });

  it("a wrong API key is the SDK's AuthenticationError with Anthropic's body", async () => {
    const err = await failure(
      client(servers().stories, "wrong").messages.create({
        model: "m",
        max_tokens: 4,
        messages: [{ role: "user", content: QUESTION }],
      }),
    );
    expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((err as InstanceType<typeof Anthropic.AuthenticationError>).error).toEqual({
      type: "error",
      error: { type: "authentication_error", message: "invalid or missing API key" },
    });
  });

  it("a prompt longer than the context is a BadRequestError that says so", async () => {
    const err = await failure(
      client(servers().stories).messages.create({
        model: "m",
        max_tokens: 4,
        messages: [{ role: "user", content: TOO_LONG }],
      }),
    );
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as InstanceType<typeof Anthropic.BadRequestError>).apiMessage).toContain(
      "maximum context length",
    );
  });

  it("fields without effect are named in the ignored-fields header; cache_control is not one", async () => {
    const r = await servers().stories.post("/v1/messages", {
      model: "m",
      max_tokens: 2,
      service_tier: "auto",
      output_config: { effort: "low" },
      container: "c1",
      system: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }],
      messages: [
        { role: "user", content: [{ type: "text", text: QUESTION, cache_control: { type: "ephemeral" } }] },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.headers.get(IGNORED_FIELDS_HEADER)).toBe("container, output_config.effort");
  });

  it("a body that is no JSON is answered in Anthropic's shape too", async () => {
    const r = await servers().stories.post("/v1/messages", "{not json");
    expect(r.status).toBe(400);
    const body = (await r.json()) as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe("error");
    expect(body.error.type).toBe("invalid_request_error");
  });
});
