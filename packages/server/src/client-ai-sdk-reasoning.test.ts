import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, streamText } from "ai";
import { describe, expect, it } from "vitest";
import {
  ANSWER,
  API_KEY,
  chatByFetch,
  RAW_REASONING,
  REASONING_GRAMMAR,
  REASONING_QUESTION,
  THOUGHT,
  useReasoningServer,
  watchIgnoredFields,
} from "./client-fixtures.js";

// The Vercel AI SDK against the server's reasoning: @ai-sdk/openai-compatible (2.0.x) reads
// message.reasoning_content (or `reasoning`) into a reasoning part, so `result.reasoningText`, and
// delta.reasoning_content into `reasoning-delta` stream parts. The model (DeepSeek R1's template, whose
// prompt opens the think block) is made to write RAW_REASONING by a grammar.

const server = useReasoningServer();
const watched = watchIgnoredFields();

/** The request, `format` going into the body as llama-server's reasoning_format. */
function ask(format?: string) {
  const minfer = createOpenAICompatible({
    name: "minfer",
    baseURL: `${server().url}/v1`,
    apiKey: API_KEY,
    includeUsage: true,
    fetch: watched,
  });
  return {
    model: minfer.chatModel("r1"),
    prompt: REASONING_QUESTION,
    maxOutputTokens: 100,
    temperature: 0,
    maxRetries: 0,
    providerOptions: {
      minfer: { grammar: REASONING_GRAMMAR, ...(format === undefined ? {} : { reasoning_format: format }) },
    },
  };
}

/** The server's own answer to the same request, by fetch. */
const reference = (format?: string) =>
  chatByFetch(server(), {
    messages: [{ role: "user", content: REASONING_QUESTION }],
    grammar: REASONING_GRAMMAR,
    max_tokens: 100,
    temperature: 0,
    ...(format === undefined ? {} : { reasoning_format: format }),
  });

/** streamText's parts, reasoning and text joined, and the order they came in. */
async function streamed(format?: string) {
  const s = streamText(ask(format));
  const out = { reasoning: "", text: "", reasoningDeltas: 0, order: [] as string[] };
  for await (const part of s.fullStream) {
    if (part.type === "error") throw part.error;
    if (part.type === "reasoning-delta") {
      out.reasoning += part.text;
      out.reasoningDeltas++;
    }
    if (part.type === "text-delta") out.text += part.text;
    if (part.type === "reasoning-start" || part.type === "text-start") out.order.push(part.type);
  }
  return { ...out, finishReason: await s.finishReason, reasoningText: await s.reasoningText };
}

describe("reasoning_content (the prompt opened the think block)", () => {
  it("generateText: reasoningText is the server's reasoning_content, text the answer after the block", async () => {
    const ref = await reference();
    expect(ref).toMatchObject({ reasoning: THOUGHT, text: ANSWER });
    const r = await generateText(ask());
    expect(r.reasoningText).toBe(ref.reasoning);
    expect(r.reasoning.map((p) => p.text)).toEqual([THOUGHT]);
    expect(r.text).toBe(ref.text);
    expect(r.content.map((p) => p.type)).toEqual(["reasoning", "text"]);
    expect(r.finishReason).toBe("stop");
  });

  it("streamText: reasoning-delta parts as the thinking is generated, then the text", async () => {
    const ref = await reference();
    const s = await streamed();
    expect(s.reasoningDeltas).toBeGreaterThan(1);
    expect(s.reasoning).toBe(ref.reasoning);
    expect(s.reasoningText).toBe(ref.reasoning);
    expect(s.text).toBe(ref.text);
    expect(s.order).toEqual(["reasoning-start", "text-start"]);
    expect(s.finishReason).toBe("stop");
  });

  it("reasoning_format none (providerOptions): the block stays in the text, no reasoning", async () => {
    const ref = await reference("none");
    expect(ref).toEqual(expect.objectContaining({ text: RAW_REASONING, reasoning: undefined }));
    const r = await generateText(ask("none"));
    expect(r.text).toBe(ref.text);
    expect(r.reasoningText).toBeUndefined();
    expect(r.reasoning).toEqual([]);
    const s = await streamed("none");
    expect(s).toMatchObject({
      text: RAW_REASONING,
      reasoning: "",
      reasoningDeltas: 0,
      reasoningText: undefined,
    });
    expect(s.order).toEqual(["text-start"]);
  });
});
