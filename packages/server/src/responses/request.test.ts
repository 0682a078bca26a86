// Reading Responses requests as chat requests (llama-server's mapping): input items to messages, an
// assistant's function calls joined to its message, reasoning items to its reasoning_content, flat tools
// to chat tools.

import { describe, expect, it } from "vitest";
import { ApiError } from "../errors.js";
import { parseResponses, responsesParam } from "./request.js";

const refusal = (body: Record<string, unknown>): ApiError => {
  try {
    parseResponses({ input: "Q", ...body }, false);
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error("no error");
};

describe("parseResponses", () => {
  it("maps input items: a turn's message and calls are one assistant message, outputs tool messages", () => {
    const r = parseResponses(
      {
        instructions: "I",
        input: [
          { role: "user", content: "Q" },
          { type: "reasoning", id: "rs_1", summary: [], content: [{ type: "reasoning_text", text: "hm" }] },
          { type: "message", role: "assistant", content: [{ type: "output_text", text: "Looking." }] },
          { type: "function_call", call_id: "call_1", name: "w", arguments: '{"a":1}' },
          { type: "function_call", call_id: "call_2", name: "w", arguments: '{"a":2}' },
          { type: "function_call_output", call_id: "call_1", output: "one" },
          { type: "function_call_output", call_id: "call_2", output: [{ type: "input_text", text: "two" }] },
        ],
        tools: [{ type: "function", name: "w", parameters: { type: "object" } }],
        tool_choice: { type: "function", name: "w" },
        text: { format: { type: "json_object" } },
        max_output_tokens: 7,
      },
      false,
    );
    expect(r.chat).toEqual({
      messages: [
        { role: "system", content: "I" },
        { role: "user", content: [{ type: "text", text: "Q" }] },
        {
          role: "assistant",
          content: [{ type: "text", text: "Looking." }],
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "w", arguments: '{"a":1}' } },
            { id: "call_2", type: "function", function: { name: "w", arguments: '{"a":2}' } },
          ],
          reasoning_content: "hm",
        },
        { role: "tool", content: "one", tool_call_id: "call_1" },
        { role: "tool", content: "two", tool_call_id: "call_2" },
      ],
      max_tokens: 7,
      tools: [{ type: "function", function: { name: "w", parameters: { type: "object" } } }],
      tool_choice: { type: "function", function: { name: "w" } },
      response_format: { type: "json_object" },
    });
    expect(r.ignored).toEqual([]);
  });

  it("an assistant's message items in a row are one chat message", () => {
    const r = parseResponses(
      {
        input: [
          { role: "user", content: "Q" },
          { type: "message", role: "assistant", content: [{ type: "output_text", text: "A" }] },
          { type: "message", role: "assistant", content: [{ type: "refusal", refusal: "B" }] },
        ],
      },
      false,
    );
    expect((r.chat.messages as unknown[])[1]).toEqual({
      role: "assistant",
      content: [
        { type: "text", text: "A" },
        { type: "text", text: "B" },
      ],
    });
    expect(r.chat.messages).toHaveLength(2);
  });

  it("reasoning items go to their turn's assistant message: each tool step its own", () => {
    const rs = (text: string, more: Record<string, unknown> = {}) => ({
      type: "reasoning",
      summary: [],
      content: [{ type: "reasoning_text", text }],
      ...more,
    });
    const r = parseResponses(
      {
        input: [
          { role: "user", content: "Q" },
          rs("first"),
          { type: "function_call", call_id: "c1", name: "w", arguments: "{}" },
          { type: "function_call_output", call_id: "c1", output: "one" },
          rs("second", { summary: [{ type: "summary_text", text: "S" }], encrypted_content: "E" }),
          rs("third"),
          { type: "message", role: "assistant", content: [{ type: "output_text", text: "A" }] },
          { role: "user", content: "Q2" },
          { type: "reasoning", summary: [] },
        ],
      },
      false,
    );
    const call = { id: "c1", type: "function", function: { name: "w", arguments: "{}" } };
    expect(r.chat.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Q" }] },
      { role: "assistant", content: [], reasoning_content: "first", tool_calls: [call] },
      { role: "tool", content: "one", tool_call_id: "c1" },
      // (two items of one step joined by a line; the summary and encrypted text are not the thinking)
      { role: "assistant", content: [{ type: "text", text: "A" }], reasoning_content: "second\nthird" },
      { role: "user", content: [{ type: "text", text: "Q2" }] },
    ]);
    expect(r.ignored).toEqual(["input[4].summary", "input[4].encrypted_content"]);
    const strict = () =>
      parseResponses({ input: [{ role: "user", content: "Q" }, rs("x", { encrypted_content: "E" })] }, true);
    expect(strict).toThrow(/input\[1\]\.encrypted_content/);
  });

  it("tool_choice auto and parallel_tool_calls without tools are no error (as OpenAI takes them)", () => {
    const r = parseResponses({ input: "Q", tool_choice: "auto", parallel_tool_calls: false }, false);
    expect(r.chat).toEqual({ messages: [{ role: "user", content: "Q" }] });
  });

  it.each([
    ["input[0].content[0].text", { input: [{ role: "user", content: [{ type: "input_text" }] }] }],
    ["input[0].call_id", { input: [{ type: "function_call", name: "w", arguments: "{}" }] }],
    ["input[0].role", { input: [{ role: "tool", content: "x" }] }],
    [
      "input[0].content[0].type",
      { input: [{ role: "user", content: [{ type: "output_text", text: "x" }] }] },
    ],
    ["input", { input: [] }],
    [
      "input[0].content[0]",
      { input: [{ type: "reasoning", summary: [], content: [{ type: "text", text: "x" }] }] },
    ],
    ["input[0].content", { input: [{ type: "reasoning", summary: [], content: "x" }] }],
    ["tool_choice", { tool_choice: "required" }],
    ["text.format.schema", { text: { format: { type: "json_schema", name: "x" } } }],
    ["include", { include: ["message.output_text.logprobs"] }],
    ["top_logprobs", { top_logprobs: 3 }],
  ])("%s: a 400 naming it", (param, body) => {
    const e = refusal(body);
    expect(e.status).toBe(400);
    expect(e.param).toBe(param);
  });

  it.each([
    ["messages[2].content", "input"],
    ["max_tokens", "max_output_tokens"],
    ["tools[0].function.parameters.type", "tools[0].parameters.type"],
    ["tool_choice.function.name", "tool_choice.name"],
    ["response_format.json_schema.schema", "text.format.schema"],
    ["temperature", "temperature"],
  ])("a chat error about %s names %s", (chat, want) => {
    expect(responsesParam(chat)).toBe(want);
  });
});
