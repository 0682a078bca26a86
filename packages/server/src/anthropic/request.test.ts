// Reading Messages requests as chat requests (llama-server's mapping): blocks to messages in order,
// tool_use to tool_calls, tool_result to tool messages, thinking to reasoning_content, the field names
// of errors.

import { describe, expect, it } from "vitest";
import { ApiError } from "../errors.js";
import { anthropicParam, parseAnthropic } from "./request.js";

const read = (body: Record<string, unknown>) =>
  parseAnthropic({ model: "m", max_tokens: 10, ...body }, false).chat;

const refusal = (body: Record<string, unknown>, strict = false): ApiError => {
  try {
    parseAnthropic({ model: "m", max_tokens: 10, ...body }, strict);
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error("no error");
};

describe("parseAnthropic", () => {
  it("maps a tool round trip: tool_use → tool_calls (input as JSON text), tool_result → a tool message", () => {
    const chat = read({
      system: "S",
      messages: [
        { role: "user", content: "Q" },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "hm", signature: "" },
            { type: "text", text: "Let me look." },
            { type: "redacted_thinking", data: "opaque" },
            { type: "thinking", thinking: ", then", signature: "" },
            { type: "tool_use", id: "toolu_1", name: "w", input: { city: "Paris" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "Sunny" }] },
            { type: "text", text: "And tomorrow?" },
          ],
        },
      ],
      tools: [{ name: "w", description: "Weather", input_schema: { type: "object" } }],
      tool_choice: { type: "any", disable_parallel_tool_use: true },
      stop_sequences: ["END"],
      top_k: 3,
    });
    expect(chat).toEqual({
      model: "m",
      max_tokens: 10,
      top_k: 3,
      stop: ["END"],
      messages: [
        { role: "system", content: "S" },
        { role: "user", content: "Q" },
        {
          role: "assistant",
          content: [{ type: "text", text: "Let me look." }],
          tool_calls: [
            { id: "toolu_1", type: "function", function: { name: "w", arguments: '{"city":"Paris"}' } },
          ],
          // (the thinking blocks joined with nothing between, as llama-server joins them; the
          // redacted one has nothing to read)
          reasoning_content: "hm, then",
        },
        { role: "tool", content: "Sunny", tool_call_id: "toolu_1" },
        { role: "user", content: [{ type: "text", text: "And tomorrow?" }] },
      ],
      tools: [
        { type: "function", function: { name: "w", description: "Weather", parameters: { type: "object" } } },
      ],
      tool_choice: "required",
      parallel_tool_calls: false,
    });
  });

  it("text before a tool_result stays before it", () => {
    const chat = read({
      messages: [
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "w", input: {} }] },
        {
          role: "user",
          content: [
            { type: "text", text: "Note." },
            { type: "tool_result", tool_use_id: "t1", content: "R", is_error: true },
          ],
        },
      ],
    });
    expect((chat.messages as { role: string }[]).map((m) => m.role)).toEqual(["assistant", "user", "tool"]);
  });

  it.each([
    [{ type: "auto" }, { tool_choice: "auto" }],
    [{ type: "tool", name: "w" }, { tool_choice: { type: "function", function: { name: "w" } } }],
    [{ type: "none" }, {}],
  ])("tool_choice %j → %j", (choice, want) => {
    const chat = read({
      messages: [{ role: "user", content: "Q" }],
      tools: [{ name: "w", input_schema: { type: "object" } }],
      tool_choice: choice,
    });
    const { tools: _t, messages: _m, model: _o, max_tokens: _x, ...rest } = chat;
    expect(rest).toEqual(want);
  });

  it("blanks the changing stamp of Claude Code's billing line (the cache then reaches past it)", () => {
    const chat = read({
      system: [{ type: "text", text: "x-anthropic-billing-header: cc_version=2.1; cch=a5145; rest" }],
      messages: [{ role: "user", content: "Q" }],
    });
    expect((chat.messages as { content: unknown }[])[0]!.content).toEqual([
      { type: "text", text: "x-anthropic-billing-header: cc_version=2.1; cch=fffff; rest" },
    ]);
  });

  it("thinking sets the template's enable_thinking, and gives the budget", () => {
    const r = parseAnthropic(
      {
        max_tokens: 9,
        thinking: { type: "enabled", budget_tokens: 64 },
        messages: [{ role: "user", content: "Q" }],
      },
      false,
    );
    expect(r.chat.chat_template_kwargs).toEqual({ enable_thinking: true });
    expect(r.reasoningBudget).toBe(64);
  });

  it("count_tokens needs no max_tokens and leaves out what only shapes the answer", () => {
    const r = parseAnthropic({ stream: true, messages: [{ role: "user", content: "Q" }] }, false, true);
    expect(r.chat).toEqual({ messages: [{ role: "user", content: "Q" }] });
  });

  it.each([
    [
      "messages[1].content[0].type",
      {
        messages: [
          { role: "user", content: "Q" },
          { role: "user", content: [{ type: "document" }] },
        ],
      },
    ],
    [
      "messages[0].content[0].type",
      { messages: [{ role: "user", content: [{ type: "tool_use", id: "a", name: "w", input: {} }] }] },
    ],
    [
      "messages[0].content[0].input",
      { messages: [{ role: "assistant", content: [{ type: "tool_use", id: "a", name: "w", input: "x" }] }] },
    ],
    ["tools[0].input_schema", { messages: [{ role: "user", content: "Q" }], tools: [{ name: "w" }] }],
    ["thinking.budget_tokens", { messages: [{ role: "user", content: "Q" }], thinking: { type: "enabled" } }],
    ["tool_choice", { messages: [{ role: "user", content: "Q" }], tool_choice: { type: "any" } }],
    ["messages", { messages: {} }],
    [
      "messages[0].content[0].thinking",
      { messages: [{ role: "assistant", content: [{ type: "thinking" }] }] },
    ],
    [
      "messages[0].content[0].type",
      { messages: [{ role: "user", content: [{ type: "thinking", thinking: "t", signature: "" }] }] },
    ],
  ])("%s: a 400 naming it", (param, body) => {
    const e = refusal(body);
    expect(e.status).toBe(400);
    expect(e.param).toBe(param);
  });

  it("takes an empty messages array, as llama-server does: only the system message is left", () => {
    expect(read({ messages: [] }).messages).toEqual([]);
    expect(read({ system: "S", messages: [] }).messages).toEqual([{ role: "system", content: "S" }]);
  });

  it("an unknown field is reported as ignored, or a 400 under strictApi", () => {
    const body = { messages: [{ role: "user", content: "Q" }], container: "c" };
    expect(parseAnthropic({ max_tokens: 1, ...body }, false).ignored).toEqual(["container"]);
    expect(refusal(body, true).param).toBe("container");
  });

  it.each([
    ["messages[3].content", "messages"],
    ["stop[2]", "stop_sequences[2]"],
    ["tools[1].function.parameters.type", "tools[1].input_schema.type"],
    ["tools[1].function.name", "tools[1].name"],
    ["tool_choice.function.name", "tool_choice.name"],
    ["response_format.json_schema.schema", "output_config.format.schema"],
    ["max_tokens", "max_tokens"],
  ])("a chat error about %s names %s", (chat, want) => {
    expect(anthropicParam(chat)).toBe(want);
  });
});
