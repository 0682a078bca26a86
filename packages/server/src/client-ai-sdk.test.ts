import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import {
  APICallError,
  generateObject,
  generateText,
  InvalidToolInputError,
  streamObject,
  streamText,
  type TextStreamPart,
  type ToolSet,
  tool,
} from "ai";
import { describe, expect, it } from "vitest";
import {
  API_KEY,
  chatByFetch,
  cutCallByFetch,
  LongCityArgs,
  Person,
  QUESTION,
  TOO_LONG,
  useClientServers,
  WEATHER_QUESTION,
  WeatherArgs,
  watchIgnoredFields,
} from "./client-fixtures.js";
import type { Running } from "./test-helpers.js";

// The Vercel AI SDK (`ai` with `@ai-sdk/openai-compatible`, the provider meant for OpenAI-compatible
// servers) against the server: what the SDK sends and how it reads the answers, streams, errors.

const servers = useClientServers();
const watched = watchIgnoredFields();

/** An AI SDK provider named "minfer" for a running server: providerOptions.minfer goes into the body. */
function provider(run: Running, apiKey = API_KEY) {
  return createOpenAICompatible({
    name: "minfer",
    baseURL: `${run.url}/v1`,
    apiKey,
    includeUsage: true, // stream_options.include_usage, so a stream reports its usage
    supportsStructuredOutputs: true, // response_format json_schema rather than json_object
    fetch: watched,
  });
}

const model = (run: Running, apiKey?: string) => provider(run, apiKey).chatModel("stories");
const prompt = QUESTION;

describe("text", () => {
  it("generateText gives the server's own greedy answer and its usage", async () => {
    const s = servers().stories;
    const ref = await chatByFetch(s, {
      messages: [{ role: "user", content: prompt }],
      max_tokens: 8,
      temperature: 0,
    });
    const r = await generateText({
      model: model(s),
      prompt,
      maxOutputTokens: 8,
      temperature: 0,
      maxRetries: 0,
    });
    expect(r.text).toBe(ref.text);
    expect(r.text.length).toBeGreaterThan(0);
    expect(r.finishReason).toBe("length");
    expect(r.usage.inputTokens).toBe(ref.usage.prompt_tokens);
    expect(r.usage.outputTokens).toBe(8);
    expect(r.usage.totalTokens).toBe(ref.usage.total_tokens);
  });

  it("streamText's chunks join to the same text, with the same usage and finish reason", async () => {
    const m = model(servers().stories);
    const args = { model: m, prompt, maxOutputTokens: 10, temperature: 0, maxRetries: 0 };
    const whole = await generateText(args);
    const s = streamText(args);
    const chunks: string[] = [];
    for await (const c of s.textStream) chunks.push(c);
    expect(chunks.length).toBeGreaterThan(1); // really streamed, token by token
    expect(chunks.join("")).toBe(whole.text);
    expect(await s.finishReason).toBe(whole.finishReason);
    const usage = await s.usage;
    expect([usage.inputTokens, usage.outputTokens, usage.totalTokens]).toEqual([
      whole.usage.inputTokens,
      whole.usage.outputTokens,
      whole.usage.totalTokens,
    ]);
  });
});

describe("structured output", () => {
  it("generateObject with a zod schema returns an object that validates", async () => {
    const r = await generateObject({
      model: model(servers().stories),
      schema: Person,
      prompt: "Describe a person as JSON.",
      maxOutputTokens: 60,
      temperature: 0,
      maxRetries: 0,
    });
    expect(Person.safeParse(r.object).success).toBe(true);
    expect(Object.keys(r.object).sort()).toEqual(["age", "name"]);
    expect(r.finishReason).toBe("stop");
  });

  it("streamObject streams partial objects that end in one that validates", async () => {
    const s = streamObject({
      model: model(servers().stories),
      schema: Person,
      prompt: "Describe a person as JSON.",
      maxOutputTokens: 60,
      temperature: 1,
      seed: 3,
      maxRetries: 0,
    });
    let partials = 0;
    for await (const _ of s.partialObjectStream) partials++;
    expect(partials).toBeGreaterThan(1);
    const object = await s.object;
    expect(Person.safeParse(object).success).toBe(true);
  });
});

describe("tools (Qwen3 template)", () => {
  const tools = { get_weather: tool({ description: "The weather in a city", inputSchema: WeatherArgs }) };
  const base = (run: Running, parallel?: boolean) => ({
    model: provider(run).chatModel("qwen"),
    prompt: WEATHER_QUESTION,
    tools,
    toolChoice: "required" as const,
    maxOutputTokens: 120,
    temperature: 1,
    seed: 5,
    maxRetries: 0,
    // The SDK has no setting for parallel_tool_calls; the body takes it from providerOptions.
    ...(parallel === undefined ? {} : { providerOptions: { minfer: { parallel_tool_calls: parallel } } }),
  });

  it("toolChoice required gives tool calls whose input validates", async () => {
    // The template allows parallel calls, so by default (as llama-server) there may be several.
    const many = await generateText(base(servers().qwen));
    expect(many.finishReason).toBe("tool-calls");
    expect(many.toolCalls.length).toBeGreaterThanOrEqual(1);
    for (const call of many.toolCalls) {
      expect(call.toolName).toBe("get_weather");
      expect(call.toolCallId).toMatch(/^call_/);
      expect(WeatherArgs.safeParse(call.input).success, JSON.stringify(call.input)).toBe(true);
    }
    const one = await generateText(base(servers().qwen, false));
    expect(one.finishReason).toBe("tool-calls");
    expect(one.toolCalls).toHaveLength(1);
    expect(WeatherArgs.safeParse(one.toolCalls[0]!.input).success).toBe(true);
  });

  it("streamed: the input arrives in several deltas that rebuild the same call", async () => {
    const run = servers().qwen;
    const whole = await generateText(base(run, false));
    const s = streamText(base(run, false));
    const { deltas, calls, errors } = await toolParts(s.fullStream);
    expect(deltas.length).toBeGreaterThan(1); // as generated, not the whole arguments at once
    expect(errors).toEqual([]);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.toolName).toBe("get_weather");
    expect(WeatherArgs.safeParse(calls[0]!.input).success).toBe(true);
    expect(calls[0]!.input).toEqual(whole.toolCalls[0]!.input);
    expect(deltas.join("")).toBe(sentArguments(whole.response.body)[0]);
    expect(await s.finishReason).toBe("tool-calls");
  });
});

/** The arguments of the tool calls in a raw (non-streamed) response body, as the server wrote them. */
function sentArguments(body: unknown): string[] {
  const b = body as { choices: { message: { tool_calls?: { function: { arguments: string } }[] } }[] };
  return (b.choices[0]!.message.tool_calls ?? []).map((c) => c.function.arguments);
}

interface ToolParts {
  deltas: string[];
  calls: { toolName: string; toolCallId: string; input: unknown; invalid?: boolean; error?: unknown }[];
  errors: { toolName: string; input: unknown; error: unknown }[];
  text: string;
}

/** A fullStream's tool-input deltas, tool calls, tool errors and text (a stream error is thrown). */
async function toolParts(stream: AsyncIterable<TextStreamPart<ToolSet>>): Promise<ToolParts> {
  const out: ToolParts = { deltas: [], calls: [], errors: [], text: "" };
  for await (const part of stream) {
    if (part.type === "error") throw part.error;
    if (part.type === "tool-input-delta") out.deltas.push(part.delta);
    if (part.type === "tool-call") out.calls.push(part);
    if (part.type === "tool-error") out.errors.push(part);
    if (part.type === "text-delta") out.text += part.text;
  }
  return out;
}

describe("a tool call cut by max tokens (Qwen3 template)", () => {
  // A city of 24 to 40 characters, so that a cut lands inside its string.
  const tools = { get_weather: tool({ description: "The weather in a city", inputSchema: LongCityArgs }) };
  const ask = (maxOutputTokens: number) => ({
    model: provider(servers().qwen).chatModel("qwen"),
    prompt: WEATHER_QUESTION,
    tools,
    toolChoice: "required" as const,
    maxOutputTokens,
    temperature: 1,
    seed: 7,
    maxRetries: 0,
    providerOptions: { minfer: { parallel_tool_calls: false } },
  });

  it("finish length; the call, invalid, has the partial arguments as input and a tool-error; no text", async () => {
    const whole = await generateText(ask(200));
    expect(whole.finishReason).toBe("tool-calls");
    const ref = await cutCallByFetch(servers().qwen, JSON.parse(whole.request.body as string));
    // The server's answer: the call as far as it got, no markup in content.
    expect(ref.cut.finishReason).toBe("length");
    expect(ref.cut.content ?? "").toBe("");
    expect(ref.cut.calls).toHaveLength(1);
    const partial = ref.cut.calls[0]!.function.arguments;
    expect(partial.startsWith('{"city"')).toBe(true);
    expect(ref.full.startsWith(partial) && partial.length < ref.full.length).toBe(true);

    // The SDK parses the input when the call ends; truncated JSON makes the call invalid (its input the
    // raw text, its error an InvalidToolInputError) and adds a tool-error result, rather than throwing.
    const r = await generateText(ask(ref.maxTokens));
    expect(r.finishReason).toBe("length");
    expect(r.text).toBe("");
    expect(sentArguments(r.response.body)).toEqual([partial]);
    expect(r.toolCalls).toHaveLength(1);
    const call = r.toolCalls[0]! as ToolParts["calls"][number];
    expect(call).toMatchObject({ toolName: "get_weather", input: partial, invalid: true });
    expect(call.toolCallId).toMatch(/^call_/);
    expect(InvalidToolInputError.isInstance(call.error)).toBe(true);
    expect((call.error as InvalidToolInputError).toolInput).toBe(partial);
    expect(r.content.map((p) => p.type)).toEqual(["tool-call", "tool-error"]);

    const s = streamText(ask(ref.maxTokens));
    const parts = await toolParts(s.fullStream);
    expect(await s.finishReason).toBe("length");
    expect(parts.text).toBe("");
    expect(parts.deltas.length).toBeGreaterThan(1);
    expect(parts.deltas.join("")).toBe(partial);
    expect(parts.calls).toHaveLength(1);
    expect(parts.calls[0]).toMatchObject({ toolName: "get_weather", input: partial, invalid: true });
    expect(InvalidToolInputError.isInstance(parts.calls[0]!.error)).toBe(true);
    expect(parts.errors).toEqual([expect.objectContaining({ toolName: "get_weather", input: partial })]);
  });
});

describe("llama-server's sampler fields through providerOptions", () => {
  const messages = [{ role: "user", content: prompt }];

  it.each([
    ["top_k", -1],
    ["min_p", 2],
    ["repeat_penalty", -1],
    ["dry_multiplier", -1],
    ["xtc_probability", 1.5],
    ["mirostat", 3],
    ["typical_p", 0],
    ["n_probs", 21],
  ])("%s = %j comes back as an APICallError naming it", async (field, value) => {
    const err = await generateText({
      model: model(servers().stories),
      prompt,
      maxOutputTokens: 2,
      providerOptions: { minfer: { [field]: value } },
      maxRetries: 0,
    }).catch((e: unknown) => e);
    expect(APICallError.isInstance(err)).toBe(true);
    const e = err as APICallError;
    expect(e.statusCode).toBe(400);
    expect(e.message).toContain(field);
    expect((e.data as { error: { param: string } }).error.param).toBe(field);
    expect((e.requestBodyValues as Record<string, unknown>)[field]).toBe(value); // sent at the top level
  });

  it("a seeded request with the fields set equals the fetch-made one, and the fields change it", async () => {
    const s = servers().stories;
    const fields = { top_k: 1, min_p: 0.05, typical_p: 0.9 };
    const common = { max_tokens: 12, temperature: 1.5, seed: 11 };
    const withFields = await chatByFetch(s, { messages, ...common, ...fields });
    const without = await chatByFetch(s, { messages, ...common });
    // top_k 1 keeps only the most likely token (min_p and typical_p come after it in llama.cpp's
    // chain and keep a lone candidate): the answer is the greedy one whatever the seed.
    const greedy = await chatByFetch(s, { messages, max_tokens: 12, temperature: 0 });
    expect(withFields.text).toBe(greedy.text);
    expect(without.text).not.toBe(withFields.text);
    const r = await generateText({
      model: model(s),
      prompt,
      maxOutputTokens: 12,
      temperature: 1.5,
      seed: 11,
      providerOptions: { minfer: fields },
      maxRetries: 0,
    });
    expect(r.text).toBe(withFields.text);
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
    };
    const common = { max_tokens: 12, temperature: 1, seed: 4 };
    const ref = await chatByFetch(s, { messages, ...common, ...fields });
    const plain = await chatByFetch(s, { messages, ...common });
    expect(ref.text).not.toBe(plain.text);
    const r = await generateText({
      model: model(s),
      prompt,
      maxOutputTokens: 12,
      temperature: 1,
      seed: 4,
      providerOptions: { minfer: fields },
      maxRetries: 0,
    });
    expect(r.text).toBe(ref.text);
  });

  it("n_probs: the raw response carries that many alternatives a token", async () => {
    const r = await generateText({
      model: model(servers().stories),
      prompt,
      maxOutputTokens: 3,
      temperature: 0,
      providerOptions: { minfer: { n_probs: 3 } },
      maxRetries: 0,
    });
    const body = r.response.body as {
      choices: { logprobs: { content: { top_logprobs: unknown[] }[] } }[];
    };
    const content = body.choices[0]!.logprobs.content;
    expect(content).toHaveLength(3);
    for (const t of content) expect(t.top_logprobs).toHaveLength(3);
  });
});

describe("errors", () => {
  it("a wrong API key is an APICallError with status 401, not retried", async () => {
    const err = await generateText({
      model: model(servers().stories, "sk-wrong"),
      prompt,
      maxOutputTokens: 2,
    }).catch((e: unknown) => e);
    // The SDK retries only what may pass on a retry (429, 5xx); a 401 comes back as it is.
    expect(APICallError.isInstance(err)).toBe(true);
    const e = err as APICallError;
    expect(e.statusCode).toBe(401);
    expect(e.isRetryable).toBe(false);
  });

  it("a prompt longer than the context is an APICallError with the server's message", async () => {
    const err = await generateText({
      model: model(servers().stories),
      prompt: TOO_LONG,
      maxOutputTokens: 2,
      maxRetries: 0,
    }).catch((e: unknown) => e);
    expect(APICallError.isInstance(err)).toBe(true);
    const e = err as APICallError;
    expect(e.statusCode).toBe(400);
    expect(e.message).toMatch(/exceeds the available context size \(512 tokens a slot/);
    expect((e.data as { error: { code: string } }).error.code).toBe("context_length_exceeded");
  });
});
