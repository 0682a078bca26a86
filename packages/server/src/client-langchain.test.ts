import { ContextOverflowError } from "@langchain/core/errors";
import type { AIMessage, AIMessageChunk } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { ChatOpenAI, type ChatOpenAIFields, OpenAIClient } from "@langchain/openai";
import { describe, expect, it } from "vitest";
import {
  API_KEY,
  chatByFetch,
  cutCallByFetch,
  LongCityArgs,
  Person,
  QUESTION,
  recordingFetch,
  TOO_LONG,
  useClientServers,
  WEATHER_QUESTION,
  WeatherArgs,
  watchIgnoredFields,
} from "./client-fixtures.js";
import type { Running } from "./test-helpers.js";

// LangChain (`@langchain/openai`'s ChatOpenAI over `@langchain/core`) against the server: invoke,
// stream, withStructuredOutput, bindTools, modelKwargs for llama-server's fields, and its errors.

const servers = useClientServers();
const watched = watchIgnoredFields();

function chat(run: Running, fields: ChatOpenAIFields = {}): ChatOpenAI {
  return new ChatOpenAI({
    model: "x",
    apiKey: API_KEY,
    configuration: { baseURL: `${run.url}/v1`, fetch: watched },
    maxRetries: 0,
    ...fields,
  });
}

/** Joins a stream's chunks the way LangChain does (content, tool-call chunks, usage). */
async function joined(stream: AsyncIterable<AIMessageChunk>): Promise<{ all: AIMessageChunk; n: number }> {
  let all: AIMessageChunk | undefined;
  let n = 0;
  for await (const c of stream) {
    all = all ? all.concat(c) : c;
    n++;
  }
  if (!all) throw new Error("the stream gave no chunk");
  return { all, n };
}

const messages = [{ role: "user", content: QUESTION }];

describe("text", () => {
  it("invoke gives the server's own greedy answer and its usage", async () => {
    const s = servers().stories;
    const ref = await chatByFetch(s, { messages, max_tokens: 8, temperature: 0 });
    const m = await chat(s, { temperature: 0, maxTokens: 8 }).invoke(QUESTION);
    expect(m.content).toBe(ref.text);
    expect(m.text.length).toBeGreaterThan(0);
    expect(m.response_metadata.finish_reason).toBe("length");
    expect(m.usage_metadata).toMatchObject({
      input_tokens: ref.usage.prompt_tokens,
      output_tokens: 8,
      total_tokens: ref.usage.total_tokens,
    });
  });

  it("stream's chunks join to the same text with the same usage", async () => {
    const m = chat(servers().stories, { temperature: 0, maxTokens: 10 });
    const whole = await m.invoke(QUESTION);
    const { all, n } = await joined(await m.stream(QUESTION));
    expect(n).toBeGreaterThan(2); // really streamed, token by token
    expect(all.content).toBe(whole.content);
    expect(all.usage_metadata).toMatchObject({
      input_tokens: whole.usage_metadata!.input_tokens,
      output_tokens: whole.usage_metadata!.output_tokens,
      total_tokens: whole.usage_metadata!.total_tokens,
    });
    expect(all.response_metadata.finish_reason).toBe(whole.response_metadata.finish_reason);
  });
});

describe("structured output", () => {
  it("withStructuredOutput (json_schema) returns an object that validates", async () => {
    const m = chat(servers().stories, { temperature: 0, maxTokens: 60 });
    const out = await m
      .withStructuredOutput(Person, { method: "jsonSchema", includeRaw: true })
      .invoke("Describe a person as JSON.");
    expect(Person.safeParse(out.parsed).success).toBe(true);
    expect((out.raw as AIMessage).response_metadata.finish_reason).toBe("stop");
  });

  it("withStructuredOutput (function calling, Qwen3 template) returns an object that validates", async () => {
    const m = chat(servers().qwen, { temperature: 1, maxTokens: 120, modelKwargs: { seed: 2 } });
    const out = await m
      .withStructuredOutput(WeatherArgs, { method: "functionCalling", name: "get_weather" })
      .invoke(WEATHER_QUESTION);
    expect(WeatherArgs.safeParse(out).success).toBe(true);
  });
});

describe("tools (Qwen3 template)", () => {
  const weather = tool(async () => "sunny", {
    name: "get_weather",
    description: "The weather in a city",
    schema: WeatherArgs,
  });
  const model = () =>
    chat(servers().qwen, { temperature: 1, maxTokens: 120, modelKwargs: { seed: 5 } }).bindTools([weather], {
      tool_choice: "required",
      parallel_tool_calls: false,
    });

  it("bindTools with tool_choice required gives a call whose args validate", async () => {
    const m = await model().invoke(WEATHER_QUESTION);
    expect(m.response_metadata.finish_reason).toBe("tool_calls");
    expect(m.tool_calls).toHaveLength(1);
    const call = m.tool_calls![0]!;
    expect(call.name).toBe("get_weather");
    expect(call.id).toMatch(/^call_/);
    expect(WeatherArgs.safeParse(call.args).success, JSON.stringify(call.args)).toBe(true);
  });

  it("streamed: the arguments arrive in several tool-call chunks that join to the same call", async () => {
    const whole = await model().invoke(WEATHER_QUESTION);
    const { all, argChunks } = await joinedCalls(await model().stream(WEATHER_QUESTION));
    expect(argChunks).toBeGreaterThan(1); // as generated, not the whole arguments at once
    expect(all.tool_calls).toHaveLength(1);
    expect(all.tool_calls![0]!.name).toBe("get_weather");
    expect(WeatherArgs.safeParse(all.tool_calls![0]!.args).success).toBe(true);
    expect(all.tool_calls![0]!.args).toEqual(whole.tool_calls![0]!.args);
    expect(all.tool_calls![0]!.id).toMatch(/^call_/);
    // the joined text is the non-streamed call's arguments as the server wrote them
    const sent = whole.additional_kwargs.tool_calls![0]!.function.arguments;
    expect(all.tool_call_chunks!.map((c) => c.args)).toEqual([sent]);
  });
});

/** A stream joined, and how many of its chunks carried a piece of tool-call arguments. */
async function joinedCalls(stream: AsyncIterable<AIMessageChunk>) {
  let argChunks = 0;
  async function* counted() {
    for await (const c of stream) {
      if (c.tool_call_chunks?.some((t) => t.args)) argChunks++;
      yield c;
    }
  }
  const { all } = await joined(counted());
  return { all, argChunks };
}

describe("a tool call cut by max tokens (Qwen3 template)", () => {
  // A city of 24 to 40 characters, so that a cut lands inside its string.
  const weather = tool(async () => "sunny", {
    name: "get_weather",
    description: "The weather in a city",
    schema: LongCityArgs,
  });
  const recorded = recordingFetch(watched);
  const model = (maxTokens: number) =>
    chat(servers().qwen, {
      temperature: 1,
      maxTokens,
      modelKwargs: { seed: 7 },
      configuration: { baseURL: `${servers().qwen.url}/v1`, fetch: recorded.fetch },
    }).bindTools([weather], { tool_choice: "required", parallel_tool_calls: false });

  it("invoke: an invalid tool call with the partial args; stream: chunks whose args parse partially", async () => {
    const whole = await model(200).invoke(WEATHER_QUESTION);
    expect(whole.response_metadata.finish_reason).toBe("tool_calls");
    const ref = await cutCallByFetch(servers().qwen, recorded.lastBody());
    // The server's answer: the call as far as it got, no markup in content.
    expect(ref.cut.finishReason).toBe("length");
    expect(ref.cut.content ?? "").toBe("");
    expect(ref.cut.calls).toHaveLength(1);
    const partial = ref.cut.calls[0]!.function.arguments;
    expect(partial.startsWith('{"city"')).toBe(true);
    expect(ref.full.startsWith(partial) && partial.length < ref.full.length).toBe(true);

    // invoke parses each call with JSON.parse: truncated JSON goes to invalid_tool_calls, args as sent.
    // (@langchain/core then warns of "new LangChain packages", seeing raw tool_calls and no parsed one.)
    const m = await model(ref.maxTokens).invoke(WEATHER_QUESTION);
    expect(m.response_metadata.finish_reason).toBe("length");
    expect(m.content).toBe("");
    expect(m.tool_calls).toEqual([]);
    expect(m.invalid_tool_calls).toHaveLength(1);
    expect(m.invalid_tool_calls![0]).toMatchObject({
      name: "get_weather",
      args: partial,
      type: "invalid_tool_call",
    });
    expect(m.invalid_tool_calls![0]!.id).toMatch(/^call_/);
    expect(m.invalid_tool_calls![0]!.error).toContain("are not valid JSON");

    // Streamed, the chunks' args join to the same text, and the joined message parses them as partial
    // JSON: a tool call whose city is the part that came (the string closed where it stopped).
    const { all, argChunks } = await joinedCalls(await model(ref.maxTokens).stream(WEATHER_QUESTION));
    expect(all.response_metadata.finish_reason).toBe("length");
    expect(all.content).toBe("");
    expect(argChunks).toBeGreaterThan(1);
    expect(all.tool_call_chunks!.map((c) => [c.name, c.args])).toEqual([["get_weather", partial]]);
    expect(all.invalid_tool_calls).toEqual([]);
    expect(all.tool_calls).toHaveLength(1);
    expect(all.tool_calls![0]!.args).toEqual(JSON.parse(`${partial}"}`));
  });
});

describe("llama-server's sampler fields through modelKwargs", () => {
  it.each([
    ["top_k", -1],
    ["min_p", 2],
    ["repeat_penalty", -1],
    ["dry_multiplier", -1],
    ["xtc_probability", 1.5],
    ["mirostat", 3],
    ["typical_p", 0],
    ["n_probs", 21],
  ])("%s = %j comes back as a BadRequestError naming it", async (field, value) => {
    const err = await chat(servers().stories, { maxTokens: 2, modelKwargs: { [field]: value } })
      .invoke(QUESTION)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAIClient.BadRequestError);
    const e = err as InstanceType<typeof OpenAIClient.BadRequestError>;
    expect(e.status).toBe(400);
    expect(e.message).toContain(field);
    expect((e.error as { param: string }).param).toBe(field);
  });

  it("a seeded request with the fields set equals the fetch-made one, and the fields change it", async () => {
    const s = servers().stories;
    const fields = { top_k: 1, min_p: 0.05, typical_p: 0.9, seed: 11 };
    const withFields = await chatByFetch(s, { messages, max_tokens: 12, temperature: 1.5, ...fields });
    const without = await chatByFetch(s, { messages, max_tokens: 12, temperature: 1.5, seed: 11 });
    // top_k 1 keeps only the most likely token (min_p and typical_p come after it in llama.cpp's
    // chain and keep a lone candidate): the answer is the greedy one whatever the seed.
    const greedy = await chatByFetch(s, { messages, max_tokens: 12, temperature: 0 });
    expect(withFields.text).toBe(greedy.text);
    expect(without.text).not.toBe(withFields.text);
    const m = await chat(s, { temperature: 1.5, maxTokens: 12, modelKwargs: fields }).invoke(QUESTION);
    expect(m.content).toBe(withFields.text);
  });

  it("mirostat, dry, xtc and repeat_penalty, seeded, give what the same fetch request gives", async () => {
    const s = servers().stories;
    const fields = {
      mirostat: 2,
      mirostat_tau: 3,
      dry_multiplier: 0.8,
      dry_allowed_length: 2,
      xtc_probability: 0.5,
      xtc_threshold: 0.1,
      repeat_penalty: 1.3,
      seed: 4,
    };
    const ref = await chatByFetch(s, { messages, max_tokens: 12, temperature: 1, ...fields });
    const plain = await chatByFetch(s, { messages, max_tokens: 12, temperature: 1, seed: 4 });
    expect(ref.text).not.toBe(plain.text);
    const m = await chat(s, { temperature: 1, maxTokens: 12, modelKwargs: fields }).invoke(QUESTION);
    expect(m.content).toBe(ref.text);
  });

  it("n_probs: the response's logprobs carry that many alternatives a token", async () => {
    const m = await chat(servers().stories, {
      temperature: 0,
      maxTokens: 3,
      modelKwargs: { n_probs: 3 },
    }).invoke(QUESTION);
    const lp = m.response_metadata.logprobs as { content: { top_logprobs: unknown[] }[] };
    expect(lp.content).toHaveLength(3);
    for (const t of lp.content) expect(t.top_logprobs).toHaveLength(3);
  });
});

describe("errors", () => {
  it("a wrong API key is the client's AuthenticationError, marked MODEL_AUTHENTICATION", async () => {
    const err = await chat(servers().stories, { apiKey: "sk-wrong", maxTokens: 2 })
      .invoke(QUESTION)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAIClient.AuthenticationError);
    expect((err as { status: number }).status).toBe(401);
    expect((err as { lc_error_code: string }).lc_error_code).toBe("MODEL_AUTHENTICATION");
  });

  it("a prompt longer than the context is LangChain's ContextOverflowError with the server's message", async () => {
    const err = await chat(servers().stories, { maxTokens: 2 })
      .invoke(TOO_LONG)
      .catch((e: unknown) => e);
    // LangChain knows a context overflow by OpenAI's words ("maximum context length"), which the
    // server's message carries after llama-server's.
    expect(err).toBeInstanceOf(ContextOverflowError);
    const e = err as ContextOverflowError & { cause?: { status: number; code: string; type: string } };
    expect(e.message).toMatch(
      /exceeds the available context size \(512 tokens a slot.*maximum context length: 512 tokens/,
    );
    expect(e.cause?.status).toBe(400);
    expect(e.cause?.code).toBe("context_length_exceeded");
    expect(e.cause?.type).toBe("exceed_context_size_error");
  });
});
