// The Anthropic wire format alone, fed what the output parser releases: blocks numbered as they start,
// one open at a time, white space before a tool call no text block of its own, and the stop reasons
// Anthropic names for each way a generation ends.

import { describe, expect, it } from "vitest";
import type { ParsedOutput, WireResult } from "../completions.js";
import { AnthropicOutput } from "./output.js";

function events(sse: string): Record<string, unknown>[] {
  return sse
    .split("\n\n")
    .filter((f) => f !== "")
    .map((f) => {
      const [ev, data] = f.split("\n");
      const d = JSON.parse(data!.slice("data: ".length)) as Record<string, unknown>;
      expect(ev).toBe(`event: ${d.type}`);
      return d;
    });
}

const result = (o: Partial<WireResult>): WireResult => ({
  content: "",
  reasoning: "",
  calls: [],
  finish: "eog",
  stopWord: undefined,
  promptTokens: 9,
  cachedTokens: 4,
  completionTokens: 3,
  timings: {},
  ...o,
});

function stream(parts: ParsedOutput[], r: WireResult) {
  const w = new AnthropicOutput({ model: "m", stream: true });
  let sse = w.begin({ promptTokens: r.promptTokens, cachedTokens: r.cachedTokens });
  for (const p of parts) sse += w.delta(p, true);
  return events(sse + w.end(r));
}

const body = (r: WireResult) =>
  new AnthropicOutput({ model: "m", stream: false }).body(r) as Record<string, unknown>;

describe("AnthropicOutput", () => {
  it("thinking, text and a call are blocks 0, 1, 2, each stopped before the next starts", () => {
    const args = '{"city":"Paris"}';
    const r = result({
      reasoning: "Hm.",
      content: "Sure.",
      calls: [{ id: "call_7", name: "w", arguments: args }],
    });
    const es = stream(
      [
        { content: "", reasoning: "Hm.", deltas: [] },
        { content: "Sure.", deltas: [] },
        { content: "", deltas: [{ index: 0, id: "call_7", name: "w", arguments: "" }] },
        { content: "", deltas: [{ index: 0, arguments: args }] },
      ],
      r,
    );
    const trace = es.map((e) =>
      e.type === "content_block_start"
        ? `start ${e.index} ${(e.content_block as { type: string }).type}`
        : e.type === "content_block_delta"
          ? `${e.index} ${(e.delta as { type: string }).type}`
          : e.type === "content_block_stop"
            ? `stop ${e.index}`
            : e.type,
    );
    expect(trace).toEqual([
      "message_start",
      "ping",
      "start 0 thinking",
      "0 thinking_delta",
      "0 signature_delta",
      "stop 0",
      "start 1 text",
      "1 text_delta",
      "stop 1",
      "start 2 tool_use",
      "2 input_json_delta",
      "stop 2",
      "message_delta",
      "message_stop",
    ]);
    expect(es.find((e) => e.type === "message_delta")).toMatchObject({
      delta: { stop_reason: "tool_use", stop_sequence: null },
      usage: { input_tokens: 5, cache_read_input_tokens: 4, output_tokens: 3 },
    });
    expect(body(r)).toMatchObject({
      content: [
        { type: "thinking", thinking: "Hm.", signature: "" },
        { type: "text", text: "Sure.", citations: null },
        { type: "tool_use", id: "toolu_7", name: "w", input: { city: "Paris" } },
      ],
      stop_reason: "tool_use",
      usage: {
        input_tokens: 5,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 4,
        output_tokens: 3,
      },
    });
  });

  it("white space before a call is no text block; alone it is one", () => {
    const withCall = result({ content: "\n", calls: [{ id: "call_1", name: "w", arguments: "{}" }] });
    const es = stream(
      [
        { content: "\n", deltas: [] },
        { content: "", deltas: [{ index: 0, id: "call_1", name: "w", arguments: "{}" }] },
      ],
      withCall,
    );
    expect(
      es
        .filter((e) => e.type === "content_block_start")
        .map((e) => (e.content_block as { type: string }).type),
    ).toEqual(["tool_use"]);
    expect((body(withCall).content as { type: string }[]).map((b) => b.type)).toEqual(["tool_use"]);
    const alone = result({ content: "\n" });
    const es2 = stream([{ content: "\n", deltas: [] }], alone);
    expect(es2.filter((e) => e.type === "content_block_delta").map((e) => e.delta)).toEqual([
      { type: "text_delta", text: "\n" },
    ]);
    expect(body(alone).content).toEqual([{ type: "text", text: "\n", citations: null }]);
  });

  it.each([
    [{ finish: "eog" }, "end_turn", null],
    [{ finish: "stop", stopWord: "END" }, "stop_sequence", "END"],
    [{ finish: "length" }, "max_tokens", null],
    [{ finish: "context" }, "model_context_window_exceeded", null],
    [
      { finish: "stop", stopWord: "END", calls: [{ id: "call_1", name: "w", arguments: "{}" }] },
      "tool_use",
      null,
    ],
  ] as [Partial<WireResult>, string, string | null][])("%j → stop_reason %s", (o, reason, sequence) => {
    expect(body(result(o))).toMatchObject({ stop_reason: reason, stop_sequence: sequence });
  });

  it("a call's arguments cut short give an empty input object", () => {
    const r = result({ finish: "length", calls: [{ id: "call_1", name: "w", arguments: '{"city": "Par' }] });
    expect(body(r).content).toEqual([{ type: "tool_use", id: "toolu_1", name: "w", input: {} }]);
  });
});
