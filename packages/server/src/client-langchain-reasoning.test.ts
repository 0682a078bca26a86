import type { AIMessageChunk } from "@langchain/core/messages";
import { ChatOpenAI } from "@langchain/openai";
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

// LangChain against the server's reasoning: @langchain/openai 1.5.8's ChatOpenAI (chat completions)
// copies message.reasoning_content, and each delta's, into additional_kwargs.reasoning_content (chunks
// concatenate it); its standard content blocks for the "openai" provider carry no reasoning block. The
// model (DeepSeek R1's template, whose prompt opens the think block) is made to write RAW_REASONING.

const server = useReasoningServer();
const watched = watchIgnoredFields();

/** ChatOpenAI for the request, `format` going into the body as llama-server's reasoning_format. */
function chat(format?: string): ChatOpenAI {
  return new ChatOpenAI({
    model: "r1",
    apiKey: API_KEY,
    configuration: { baseURL: `${server().url}/v1`, fetch: watched },
    maxRetries: 0,
    temperature: 0,
    maxTokens: 100,
    modelKwargs: {
      grammar: REASONING_GRAMMAR,
      ...(format === undefined ? {} : { reasoning_format: format }),
    },
  });
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

/** A stream joined as LangChain joins it, and how many chunks carried reasoning. */
async function streamed(format?: string) {
  let all: AIMessageChunk | undefined;
  let reasoningChunks = 0;
  for await (const c of await chat(format).stream(REASONING_QUESTION)) {
    if (c.additional_kwargs.reasoning_content) reasoningChunks++;
    all = all ? all.concat(c) : c;
  }
  if (!all) throw new Error("the stream gave no chunk");
  return { all, reasoningChunks };
}

describe("reasoning_content (the prompt opened the think block)", () => {
  it("invoke: additional_kwargs.reasoning_content is the server's, content the answer after the block", async () => {
    const ref = await reference();
    expect(ref).toMatchObject({ reasoning: THOUGHT, text: ANSWER });
    const m = await chat().invoke(REASONING_QUESTION);
    expect(m.additional_kwargs.reasoning_content).toBe(ref.reasoning);
    expect(m.content).toBe(ref.text);
    expect(m.response_metadata.finish_reason).toBe("stop");
    expect(m.contentBlocks).toEqual([{ type: "text", text: ANSWER }]);
  });

  it("stream: reasoning_content in several chunks, joined to the same; content the answer", async () => {
    const ref = await reference();
    const { all, reasoningChunks } = await streamed();
    expect(reasoningChunks).toBeGreaterThan(1);
    expect(all.additional_kwargs.reasoning_content).toBe(ref.reasoning);
    expect(all.content).toBe(ref.text);
    expect(all.response_metadata.finish_reason).toBe("stop");
  });

  it("reasoning_format none (modelKwargs): the block stays in content, no reasoning_content", async () => {
    const ref = await reference("none");
    expect(ref).toEqual(expect.objectContaining({ text: RAW_REASONING, reasoning: undefined }));
    const m = await chat("none").invoke(REASONING_QUESTION);
    expect(m.content).toBe(ref.text);
    expect(m.additional_kwargs).not.toHaveProperty("reasoning_content");
    const { all, reasoningChunks } = await streamed("none");
    expect(reasoningChunks).toBe(0);
    expect(all.content).toBe(RAW_REASONING);
    expect(all.additional_kwargs).not.toHaveProperty("reasoning_content");
  });
});
