// The model's thinking through /v1/responses, with the official `openai` client: a reasoning output item
// (reasoning_text content) before the message, streamed as its own item. The model (DeepSeek R1's
// template, whose prompt opens the think block) is made to write RAW_REASONING by a grammar.

import OpenAI from "openai";
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

const client = () =>
  new OpenAI({ baseURL: `${server().url}/v1`, apiKey: API_KEY, maxRetries: 0, fetch: watched });

// (grammar: llama-server's field, read by /v1/responses as by chat)
const ask = {
  model: "m",
  input: REASONING_QUESTION,
  grammar: REASONING_GRAMMAR,
  max_output_tokens: 100,
  temperature: 0,
} as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming;

type Event = OpenAI.Responses.ResponseStreamEvent;

describe("reasoning", () => {
  it("the think block is a reasoning item before the message, as chat's reasoning_content", async () => {
    const ref = await chatByFetch(server(), {
      messages: [{ role: "user", content: REASONING_QUESTION }],
      grammar: REASONING_GRAMMAR,
      max_tokens: 100,
      temperature: 0,
    });
    expect(ref).toMatchObject({ reasoning: THOUGHT, text: ANSWER });
    const r = await client().responses.create(ask);
    expect(r.status).toBe("completed");
    expect(r.output.map((o) => o.type)).toEqual(["reasoning", "message"]);
    const rs = r.output[0] as OpenAI.Responses.ResponseReasoningItem;
    expect(rs.id).toMatch(/^rs_/);
    expect(rs.summary).toEqual([]);
    expect(rs.content).toEqual([{ type: "reasoning_text", text: THOUGHT }]);
    expect(r.output_text).toBe(ANSWER);
    // Tokens that wrote thinking count as reasoning tokens, the answer's do not.
    const u = r.usage!;
    expect(u.output_tokens).toBe(ref.usage.completion_tokens);
    expect(u.output_tokens_details.reasoning_tokens).toBeGreaterThan(0);
    expect(u.output_tokens_details.reasoning_tokens).toBeLessThan(u.output_tokens);
  });

  it("streams the reasoning item (reasoning_text deltas), then the message item", async () => {
    const s = await client().responses.create({ ...ask, stream: true });
    const es: Event[] = [];
    for await (const e of s) es.push(e);
    const types: string[] = [];
    for (const e of es) {
      const t = e.type.endsWith(".delta") ? `${e.type}*` : e.type;
      if (types.at(-1) !== t) types.push(t);
    }
    expect(types).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.reasoning_text.delta*",
      "response.reasoning_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta*",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    const thought = es
      .filter((e) => e.type === "response.reasoning_text.delta")
      .map((e) => (e as OpenAI.Responses.ResponseReasoningTextDeltaEvent).delta);
    expect(thought.length).toBeGreaterThan(1);
    expect(thought.join("")).toBe(THOUGHT);
    const added = es.filter((e) => e.type === "response.output_item.added");
    expect(added.map((e) => (e as OpenAI.Responses.ResponseOutputItemAddedEvent).output_index)).toEqual([
      0, 1,
    ]);
    const final = await client()
      .responses.stream(ask as never)
      .finalResponse();
    expect(final.output.map((o) => o.type)).toEqual(["reasoning", "message"]);
    expect((final.output[0] as OpenAI.Responses.ResponseReasoningItem).content).toEqual([
      { type: "reasoning_text", text: THOUGHT },
    ]);
    expect(final.output_text).toBe(ANSWER);
  });
});
