// The model's thinking through /v1/messages, with the official `@anthropic-ai/sdk` client: a thinking
// block before the text, streamed with thinking_delta and a closing signature_delta, and the `thinking`
// field's budget ending the block. The model (DeepSeek R1's template, whose prompt opens the think block)
// is made to write RAW_REASONING by a grammar where the test needs known text.

import Anthropic from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import {
  ANSWER,
  API_KEY,
  chatByFetch,
  REASONING_GRAMMAR,
  REASONING_QUESTION,
  THOUGHT,
  useReasoningServer,
  watchIgnoredFields,
} from "../client-fixtures.js";

const server = useReasoningServer();
const watched = watchIgnoredFields();

const client = () => new Anthropic({ baseURL: server().url, apiKey: API_KEY, maxRetries: 0, fetch: watched });

type Params = Anthropic.Messages.MessageCreateParamsNonStreaming;

// (grammar and temperature: fields the server reads that this SDK's types leave out)
const ask = {
  model: "m",
  max_tokens: 100,
  temperature: 0,
  grammar: REASONING_GRAMMAR,
  thinking: { type: "enabled", budget_tokens: 1024 },
  messages: [{ role: "user", content: REASONING_QUESTION }],
} as unknown as Params;

describe("thinking", () => {
  it("the think block is a thinking block before the text, as chat's reasoning_content", async () => {
    const ref = await chatByFetch(server(), {
      messages: [{ role: "user", content: REASONING_QUESTION }],
      grammar: REASONING_GRAMMAR,
      max_tokens: 100,
      temperature: 0,
    });
    expect(ref).toMatchObject({ reasoning: THOUGHT, text: ANSWER });
    const m = await client().messages.create(ask);
    expect(m.content).toEqual([
      { type: "thinking", thinking: THOUGHT, signature: "" },
      { type: "text", text: ANSWER, citations: null },
    ]);
    expect(m.stop_reason).toBe("end_turn");
    expect(m.usage.output_tokens).toBe(ref.usage.completion_tokens);
  });

  it("streams the thinking block (thinking deltas, a signature) at index 0, the text at index 1", async () => {
    const es: Anthropic.Messages.RawMessageStreamEvent[] = [];
    const s = await client().messages.create({
      ...ask,
      stream: true,
    } as Anthropic.Messages.MessageCreateParamsStreaming);
    for await (const e of s) es.push(e);
    const blocks = es.flatMap((e) =>
      e.type === "content_block_start"
        ? [`start ${e.index} ${e.content_block.type}`]
        : e.type === "content_block_stop"
          ? [`stop ${e.index}`]
          : e.type === "content_block_delta"
            ? [`${e.index} ${e.delta.type}`]
            : [],
    );
    const folded = blocks.filter((b, i) => b !== blocks[i - 1]);
    expect(folded).toEqual([
      "start 0 thinking",
      "0 thinking_delta",
      "0 signature_delta",
      "stop 0",
      "start 1 text",
      "1 text_delta",
      "stop 1",
    ]);
    const thought = es.flatMap((e) =>
      e.type === "content_block_delta" && e.delta.type === "thinking_delta" ? [e.delta.thinking] : [],
    );
    expect(thought.length).toBeGreaterThan(1);
    expect(thought.join("")).toBe(THOUGHT);
    const final = await client().messages.stream(ask).finalMessage();
    expect(final.content).toEqual([
      { type: "thinking", thinking: THOUGHT, signature: "" },
      { type: "text", text: ANSWER, citations: null },
    ]);
  });

  it("thinking.budget_tokens ends the think block after that many tokens", async () => {
    const free = { ...ask, grammar: undefined, max_tokens: 24 } as unknown as Params;
    const unbounded = await client().messages.create(free);
    // Without a budget the random model thinks on until max_tokens.
    expect(unbounded.content.map((b) => b.type)).toEqual(["thinking"]);
    const long = (unbounded.content[0] as Anthropic.Messages.ThinkingBlock).thinking;
    // The first 3 tokens of that thinking, as chat gives them when it may write only 3.
    const first3 = await chatByFetch(server(), {
      messages: [{ role: "user", content: REASONING_QUESTION }],
      chat_template_kwargs: { enable_thinking: true },
      max_tokens: 3,
      temperature: 0,
    });
    expect(first3.reasoning).toBeDefined();
    expect(long.startsWith(first3.reasoning!)).toBe(true);
    expect(long.length).toBeGreaterThan(first3.reasoning!.length);
    const budgeted = await client().messages.create({
      ...free,
      thinking: { type: "enabled", budget_tokens: 3 },
    } as Params);
    expect(budgeted.content.map((b) => b.type)).toEqual(["thinking", "text"]);
    expect((budgeted.content[0] as Anthropic.Messages.ThinkingBlock).thinking).toBe(first3.reasoning);
  });
});
