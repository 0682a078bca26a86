// OpenAI's Responses API (`POST /v1/responses`) through the official `openai` client: plain and streamed
// answers checked against the same greedy request through /v1/chat/completions, the stream's events in
// the order the API defines them, forced function calls (the Qwen3 template's hermes calls), structured
// output by text.format, and the fields a stateless server refuses by name.

import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  API_KEY,
  chatByFetch,
  Person,
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

const client = (run: Running) =>
  new OpenAI({ baseURL: `${run.url}/v1`, apiKey: API_KEY, maxRetries: 0, fetch: watched });

type Event = OpenAI.Responses.ResponseStreamEvent;

/** Every event of a streamed response, in order. */
async function events(run: Running, body: Record<string, unknown>): Promise<Event[]> {
  const s = await client(run).responses.create({ model: "m", ...body, stream: true } as never);
  const out: Event[] = [];
  for await (const e of s as unknown as AsyncIterable<Event>) out.push(e);
  return out;
}

/** The event types with the runs of deltas folded into one `…delta*` entry. */
function shape(es: Event[]): string[] {
  const out: string[] = [];
  for (const e of es) {
    const t = e.type.endsWith(".delta") ? `${e.type}*` : e.type;
    if (out.at(-1) !== t) out.push(t);
  }
  return out;
}

const weatherTool = {
  type: "function" as const,
  name: "get_weather",
  description: "The weather in a city",
  parameters: z.toJSONSchema(WeatherArgs) as Record<string, unknown>,
  strict: true,
};

describe("text", () => {
  it("gives the chat endpoint's greedy answer as one message item, cut by max_output_tokens", async () => {
    const s = servers().stories;
    const ref = await chatByFetch(s, {
      messages: [{ role: "user", content: QUESTION }],
      max_tokens: 8,
      temperature: 0,
    });
    const r = await client(s).responses.create({
      model: "m",
      input: QUESTION,
      max_output_tokens: 8,
      temperature: 0,
    });
    expect(r.id).toMatch(/^resp_[0-9a-f]{32}$/);
    expect(r.object).toBe("response");
    expect(r.output_text).toBe(ref.text);
    expect(r.output_text.length).toBeGreaterThan(0);
    // The token limit ends it: OpenAI's "incomplete" with the reason (chat's finish "length").
    expect(ref.finishReason).toBe("length");
    expect(r.status).toBe("incomplete");
    expect(r.incomplete_details).toEqual({ reason: "max_output_tokens" });
    expect(r.output).toHaveLength(1);
    const m = r.output[0]!;
    expect(m.type).toBe("message");
    if (m.type !== "message") return;
    expect(m.id).toMatch(/^msg_/);
    expect(m.role).toBe("assistant");
    expect(m.content).toEqual([{ type: "output_text", text: ref.text, annotations: [], logprobs: [] }]);
    expect(r.usage).toMatchObject({
      input_tokens: ref.usage.prompt_tokens,
      output_tokens: 8,
      total_tokens: ref.usage.prompt_tokens + 8,
    });
    expect(r.max_output_tokens).toBe(8);
  });

  it("reads instructions and message items (roles, input_text and output_text parts) as chat messages", async () => {
    const s = servers().stories;
    const ref = await chatByFetch(s, {
      messages: [
        { role: "system", content: "Be brief." },
        { role: "system", content: "Talk about cats." },
        { role: "user", content: "Hello." },
        { role: "assistant", content: "Hi." },
        { role: "user", content: `${QUESTION}\nPlease.` },
      ],
      max_tokens: 6,
      temperature: 0,
    });
    const r = await client(s).responses.create({
      model: "m",
      instructions: "Be brief.",
      input: [
        { role: "developer", content: "Talk about cats." },
        { type: "message", role: "user", content: [{ type: "input_text", text: "Hello." }] },
        {
          type: "message",
          role: "assistant",
          id: "msg_1",
          status: "completed",
          content: [{ type: "output_text", text: "Hi.", annotations: [] }],
        },
        {
          role: "user",
          content: [
            { type: "input_text", text: QUESTION },
            { type: "input_text", text: "Please." },
          ],
        },
      ],
      max_output_tokens: 6,
      temperature: 0,
    });
    expect(r.output_text).toBe(ref.text);
    expect(r.usage?.input_tokens).toBe(ref.usage.prompt_tokens);
    expect(r.instructions).toBe("Be brief.");
  });

  it("streams the events in the API's order, each with the next sequence_number", async () => {
    const s = servers().stories;
    const ref = await chatByFetch(s, {
      messages: [{ role: "user", content: QUESTION }],
      max_tokens: 10,
      temperature: 0,
    });
    const es = await events(s, { input: QUESTION, max_output_tokens: 10, temperature: 0 });
    expect(shape(es)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta*",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.incomplete",
    ]);
    expect(es.map((e) => e.sequence_number)).toEqual(es.map((_, i) => i));
    const deltas = es.filter((e) => e.type === "response.output_text.delta");
    expect(deltas.length).toBeGreaterThan(1); // token by token
    const text = deltas.map((e) => (e as OpenAI.Responses.ResponseTextDeltaEvent).delta).join("");
    expect(text).toBe(ref.text);
    const created = es[0] as OpenAI.Responses.ResponseCreatedEvent;
    expect(created.response.status).toBe("in_progress");
    const added = es[2] as OpenAI.Responses.ResponseOutputItemAddedEvent;
    expect(added.output_index).toBe(0);
    const itemId = added.item.id;
    for (const e of es)
      if ("item_id" in e) {
        expect(e.item_id).toBe(itemId);
        expect((e as { output_index: number }).output_index).toBe(0);
      }
    const last = es.at(-1) as OpenAI.Responses.ResponseIncompleteEvent;
    expect(last.response.id).toBe(created.response.id);
    const item = last.response.output[0] as OpenAI.Responses.ResponseOutputMessage;
    expect(item.id).toBe(itemId);
    expect(item.status).toBe("incomplete");
    expect(item.content).toEqual([{ type: "output_text", text: ref.text, annotations: [], logprobs: [] }]);
    expect(last.response.usage?.output_tokens).toBe(10);
    expect(last.response.usage?.input_tokens).toBe(ref.usage.prompt_tokens);
  });

  it("the SDK's stream helper accumulates the events into the non-streamed response", async () => {
    const s = servers().stories;
    const args = { model: "m", input: QUESTION, max_output_tokens: 8, temperature: 0 };
    const whole = await client(s).responses.create(args);
    const stream = client(s).responses.stream(args);
    const final = await stream.finalResponse();
    expect(final.output_text).toBe(whole.output_text);
    expect(final.status).toBe(whole.status);
    expect(final.output.map((o) => o.type)).toEqual(["message"]);
  });
});

describe("structured output", () => {
  it("text.format json_schema gives JSON that validates, as chat's response_format does", async () => {
    const s = servers().stories;
    const schema = z.toJSONSchema(Person) as Record<string, unknown>;
    const ref = await chatByFetch(s, {
      messages: [{ role: "user", content: "Describe a person as JSON." }],
      response_format: { type: "json_schema", json_schema: { name: "person", schema } },
      max_tokens: 60,
      temperature: 0,
    });
    const r = await client(s).responses.create({
      model: "m",
      input: "Describe a person as JSON.",
      text: { format: { type: "json_schema", name: "person", schema, strict: true } },
      max_output_tokens: 60,
      temperature: 0,
    });
    expect(r.output_text).toBe(ref.text);
    expect(Person.safeParse(JSON.parse(r.output_text)).success).toBe(true);
    // The schema's object ended it, not the limit.
    expect(r.status).toBe("completed");
    expect(r.incomplete_details).toBeNull();
    expect(r.text?.format?.type).toBe("json_schema");
  });
});

describe("function calls (Qwen3 template)", () => {
  const ask = {
    model: "m",
    input: WEATHER_QUESTION,
    tools: [weatherTool],
    tool_choice: "required" as const,
    parallel_tool_calls: false,
    max_output_tokens: 120,
    temperature: 1,
    seed: 5,
  };

  it("tool_choice required gives a function_call item whose arguments validate, as chat's call", async () => {
    const q = servers().qwen;
    const chat = await q.post("/v1/chat/completions", {
      model: "m",
      messages: [{ role: "user", content: WEATHER_QUESTION }],
      tools: [{ type: "function", function: { ...weatherTool, type: undefined } }],
      tool_choice: "required",
      parallel_tool_calls: false,
      max_tokens: 120,
      temperature: 1,
      seed: 5,
    });
    const ref = (await chat.json()) as {
      choices: { message: { tool_calls: { id: string; function: { name: string; arguments: string } }[] } }[];
    };
    const refCall = ref.choices[0]!.message.tool_calls[0]!;
    const r = await client(q).responses.create(ask as never);
    expect(r.status).toBe("completed");
    const calls = r.output.filter((o) => o.type === "function_call");
    expect(calls).toHaveLength(1);
    const c = calls[0]!;
    expect(c.name).toBe("get_weather");
    expect(c.call_id).toMatch(/^call_/);
    expect(c.id).toBe(`fc_${c.call_id.slice(5)}`);
    expect(c.status).toBe("completed");
    expect(WeatherArgs.safeParse(JSON.parse(c.arguments)).success).toBe(true);
    expect(c.arguments).toBe(refCall.function.arguments);
    expect(r.tool_choice).toBe("required");
  });

  it("streams the call as output_item.added, argument deltas, arguments done, output_item.done", async () => {
    const q = servers().qwen;
    const whole = await client(q).responses.create(ask as never);
    const es = await events(q, ask);
    const s = shape(es);
    expect(s.slice(0, 2)).toEqual(["response.created", "response.in_progress"]);
    expect(s.slice(-5)).toEqual([
      "response.output_item.added",
      "response.function_call_arguments.delta*",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(es.map((e) => e.sequence_number)).toEqual(es.map((_, i) => i));
    const added = es.find(
      (e) => e.type === "response.output_item.added" && e.item.type === "function_call",
    ) as OpenAI.Responses.ResponseOutputItemAddedEvent;
    const item = added.item as OpenAI.Responses.ResponseFunctionToolCall;
    expect(item.name).toBe("get_weather");
    expect(item.arguments).toBe("");
    const args = es
      .filter((e) => e.type === "response.function_call_arguments.delta")
      .map((e) => (e as OpenAI.Responses.ResponseFunctionCallArgumentsDeltaEvent).delta);
    expect(args.length).toBeGreaterThan(1);
    const wholeCall = whole.output.find((o) => o.type === "function_call")!;
    if (wholeCall.type !== "function_call") return;
    expect(args.join("")).toBe(wholeCall.arguments);
    const done = es.find(
      (e) => e.type === "response.function_call_arguments.done",
    ) as OpenAI.Responses.ResponseFunctionCallArgumentsDoneEvent;
    expect(done.arguments).toBe(wholeCall.arguments);
    expect(done.item_id).toBe(item.id);
    // The SDK's helper accepts the stream (it checks ids, indexes and order).
    const final = await client(q)
      .responses.stream(ask as never)
      .finalResponse();
    const fc = final.output.find((o) => o.type === "function_call");
    expect(fc?.type === "function_call" && fc.arguments).toBe(wholeCall.arguments);
  });

  it("reads function_call and function_call_output items back as the call and its result", async () => {
    const q = servers().qwen;
    const call = {
      id: "call_abc123",
      type: "function",
      function: { name: "get_weather", arguments: '{"city":"Paris","unit":"c"}' },
    };
    const ref = await chatByFetch(q, {
      messages: [
        { role: "user", content: WEATHER_QUESTION },
        { role: "assistant", content: "", tool_calls: [call] },
        { role: "tool", tool_call_id: "call_abc123", content: "Sunny, 21 C" },
      ],
      tools: [{ type: "function", function: { ...weatherTool, type: undefined } }],
      max_tokens: 8,
      temperature: 0,
    });
    const r = await client(q).responses.create({
      model: "m",
      input: [
        { role: "user", content: WEATHER_QUESTION },
        {
          type: "function_call",
          id: "fc_abc123",
          call_id: "call_abc123",
          name: "get_weather",
          arguments: '{"city":"Paris","unit":"c"}',
          status: "completed",
        },
        { type: "function_call_output", call_id: "call_abc123", output: "Sunny, 21 C" },
      ],
      tools: [weatherTool],
      max_output_tokens: 8,
      temperature: 0,
    });
    expect(r.usage?.input_tokens).toBe(ref.usage.prompt_tokens);
    expect(r.output_text).toBe(ref.text);
  });
});

describe("input_tokens", () => {
  it("counts the prompt as the chat endpoint's input_tokens does", async () => {
    const s = servers().stories;
    const chat = await s.post("/v1/chat/completions/input_tokens", {
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: QUESTION },
      ],
    });
    const want = ((await chat.json()) as { input_tokens: number }).input_tokens;
    const r = await client(s).responses.inputTokens.count({ instructions: "Be brief.", input: QUESTION });
    expect(r).toEqual({ object: "response.input_tokens", input_tokens: want });
  });
});

describe("errors", () => {
  it.each([
    ["previous_response_id", { previous_response_id: "resp_1" }],
    ["store", { store: true }],
    ["conversation", { conversation: "conv_1" }],
    ["background", { background: true }],
    ["max_output_tokens", { max_output_tokens: 0 }],
    [
      "input[0].content[0].type",
      { input: [{ role: "user", content: [{ type: "input_image", image_url: "data:," }] }] },
    ],
    ["input[0].type", { input: [{ type: "item_reference", id: "msg_1" }] }],
    ["tools[0].type", { tools: [{ type: "web_search" }] }],
    ["tools[0].parameters.type", { tools: [{ ...weatherTool, parameters: { type: "array" } }] }],
    ["tool_choice.name", { tools: [weatherTool], tool_choice: { type: "function", name: "nope" } }],
    ["text.format.type", { text: { format: { type: "yaml" } } }],
    ["temperature", { temperature: 3 }],
    ["input", { input: undefined }],
  ])("%s: a 400 naming the field, as the SDK's BadRequestError", async (param, extra) => {
    const err = await client(servers().stories)
      .responses.create({ model: "m", input: QUESTION, max_output_tokens: 4, ...extra } as never)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.status).toBe(400);
    expect(e.param).toBe(param);
    expect(e.message).toContain(param);
  });

  it("fields without effect are named in the ignored-fields header", async () => {
    const r = await servers().stories.post("/v1/responses", {
      model: "m",
      input: QUESTION,
      max_output_tokens: 2,
      store: false,
      reasoning: { effort: "low" },
      include: ["reasoning.encrypted_content"],
      truncation: "auto",
      prompt_cache_key: "k",
      metadata: { a: "b" },
      frobnicate: 1,
    });
    expect(r.status).toBe(200);
    expect(r.headers.get(IGNORED_FIELDS_HEADER)).toBe("frobnicate, include, reasoning, truncation");
    expect(((await r.json()) as { metadata: unknown }).metadata).toEqual({ a: "b" });
  });

  it("a prompt longer than the context is a 400 naming input", async () => {
    const err = await client(servers().stories)
      .responses.create({ model: "m", input: TOO_LONG, max_output_tokens: 4 })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("input");
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).code).toBe("context_length_exceeded");
  });
});
