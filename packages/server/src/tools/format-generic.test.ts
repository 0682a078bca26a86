// The generic format's answers parsed back whole, piece by piece at every split, and cut off at every
// prefix. The answers and what they hold are llama.cpp's (tests/test-chat.cpp's generic cases: a
// response with an escaped newline, a call of special_function, partial calls); the arguments are the
// model's JSON text as written, as in minfer's other JSON formats (llama.cpp re-serialises them).
import { describe, expect, it } from "vitest";
import type { ToolDef } from "./parse.js";
import { ToolCallParser } from "./parser.js";
import { checkCuts, parseAll, runParser } from "./test-parse.js";

const TOOLS: ToolDef[] = [
  {
    name: "special_function",
    parameters: { type: "object", properties: { arg1: { type: "integer" } }, required: ["arg1"] },
  },
  { name: "get_time", parameters: { type: "object", properties: {} } },
];

const parse = (text: string, parallel = false) => parseAll("generic", TOOLS, text, { parallel });

describe("generic answers", () => {
  it("a response is the content, its escapes decoded", () => {
    expect(parse('{\n  "response": "Hello, world!\\nWhat\'s up?"\n}')).toEqual({
      content: "Hello, world!\nWhat's up?",
      calls: [],
    });
    expect(parse('{"response": "a\\u00e9\\ud83d\\ude00 \\"q\\" \\\\ \\/ \\t."}').content).toBe(
      'aé😀 "q" \\ / \t.',
    );
    expect(parse('{"response": "Ünïcödé 😀"}').content).toBe("Ünïcödé 😀");
  });

  it("a tool_call is the call", () => {
    expect(parse('{"tool_call": {"name": "special_function", "arguments": {"arg1": 1}}}')).toEqual({
      content: "",
      calls: [{ name: "special_function", arguments: '{"arg1": 1}' }],
    });
    expect(parse('{ "tool_call" : { "name" : "get_time", "arguments" : {} } }\n').calls).toEqual([
      { name: "get_time", arguments: "{}" },
    ]);
  });

  it("tool_calls are the calls, the model's ids left out", () => {
    const text =
      '{"tool_calls": [{"name": "special_function", "arguments": {"arg1": 1}, "id": "123456789"}, ' +
      '{"name": "get_time", "arguments": {}, "id": "call_2"}]}';
    expect(parse(text, true).calls).toEqual([
      { name: "special_function", arguments: '{"arg1": 1}' },
      { name: "get_time", arguments: "{}" },
    ]);
    let n = 0;
    const p = new ToolCallParser("generic", TOOLS, { newId: () => `call_${n++}` });
    p.push(text);
    p.end();
    expect(p.calls.map((c) => c.id)).toEqual(["call_0", "call_1"]);
  });

  it("a reply that is not a string (a response_format schema's) is the content as JSON indented by 2", () => {
    expect(parse('{"response": {"n": 3, "m": [1]}}').content).toBe('{\n  "n": 3,\n  "m": [\n    1\n  ]\n}');
  });

  it("anything else is content, as written", () => {
    for (const text of [
      "Hello there",
      '{"answer": "x"}',
      '["response"]',
      '{"tool_call": {"name": "send_mail", "arguments": {}}}',
      '{"tool_call": {"name": "get_time", "arguments": 1}}',
      '{"tool_calls": "x"}',
    ])
      expect(parse(text), text).toEqual({ content: text, calls: [] });
  });

  it("streams the reply as it is decoded, an escape cut by a piece's end held back", () => {
    const p = new ToolCallParser("generic", TOOLS, {});
    const got = ['{"resp', 'onse": "Hel', "lo\\", "n\\ud83d", "\\ude00", ' x"', "}"].map(
      (piece) => p.push(piece).content,
    );
    // (the surrogate pair's first half waits for its second; trailing whitespace is held until more
    // content comes, as in every format)
    expect(got).toEqual(["", "Hel", "lo", "", "\n😀", " x", ""]);
    expect(p.end().content).toBe("");
  });

  it("drops what follows the answer", () => {
    expect(parse('{"response": "x"} trailing').content).toBe("x");
    expect(parse('{"tool_call": {"name": "get_time", "arguments": {}}} {"response": "y"}').content).toBe("");
  });
});

describe("generic answers cut off (max_tokens)", () => {
  const cut = (text: string) => runParser("generic", TOOLS, [...text], { cut: true });

  it("a call as far as it got (llama.cpp: the arguments' start), nothing before its name", () => {
    expect(cut('{ "tool_call" : { "name" : "special_function", "arguments" : { "arg').calls).toEqual([
      { name: "special_function", arguments: '{ "arg' },
    ]);
    expect(cut('{ "tool_call" : { "name" : "t')).toEqual({ content: "", calls: [] });
  });

  it("a reply as far as it got, an unfinished escape left out", () => {
    expect(cut('{"response": "Hello wor')).toEqual({ content: "Hello wor", calls: [] });
    expect(cut('{"response": "Hello\\u00')).toEqual({ content: "Hello", calls: [] });
  });

  it("an answer that had not shown its shape is dropped; at a normal end it is content", () => {
    expect(cut('{"resp')).toEqual({ content: "", calls: [] });
    expect(runParser("generic", TOOLS, ['{"resp'])).toEqual({ content: '{"resp', calls: [] });
  });

  it("never shows a call's JSON as content, at any cut", () => {
    checkCuts("generic", TOOLS, '{"tool_call": {"name": "special_function", "arguments": {"arg1": 12}}}', [
      "tool_call",
      "{",
    ]);
    checkCuts(
      "generic",
      TOOLS,
      '{"tool_calls": [{"name": "special_function", "arguments": {"arg1": 1}, "id": "abcd"}, {"name": "get_time", "arguments": {}, "id": "efgh"}]}',
      ["tool_call", "{"],
    );
    checkCuts("generic", TOOLS, '{"response": "Hi \\"you\\"\\n 😀"}', ["response", "{"]);
  });
});
