import { describe, expect, it } from "vitest";
import type { ToolDef } from "./parse.js";
import { newCallId, ToolCallParser } from "./parser.js";
import { checkCuts, parseAll } from "./test-parse.js";

const TOOLS: ToolDef[] = [
  {
    name: "get_weather",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
  { name: "get_time", parameters: { type: "object", properties: {} } },
];

const parse = (format: "hermes" | "llama3", text: string, parallel = true) =>
  parseAll(format, TOOLS, text, { parallel });

// The arguments are the model's JSON text, as written (spacing kept).
const weather = (city: string, json = `{"city": ${JSON.stringify(city)}}`) => ({
  name: "get_weather",
  arguments: json,
});

describe("ToolCallParser hermes", () => {
  it("parses a Qwen call with text before it", () => {
    const text =
      'I will look it up.\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    expect(parse("hermes", text)).toEqual({ content: "I will look it up.", calls: [weather("Paris")] });
  });

  it("parses several calls in a row, dropping the whitespace between them", () => {
    const text =
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n' +
      '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>\n' +
      '<tool_call>\n{"name": "get_weather", "arguments": {"city":"Zürich \\"Z\\" <tool_call>"}}\n</tool_call>\n';
    expect(parse("hermes", text)).toEqual({
      content: "",
      calls: [
        weather("Paris"),
        { name: "get_time", arguments: "{}" },
        weather("", '{"city":"Zürich \\"Z\\" <tool_call>"}'),
      ],
    });
  });

  it("keeps think text as content (the splitting of reasoning is not the parser's)", () => {
    const text =
      '<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>';
    expect(parse("hermes", text)).toEqual({
      content: "<think>\nThe user wants the weather.\n</think>",
      calls: [weather("Oslo")],
    });
  });

  it("releases plain text unchanged, including a lone < and trailing whitespace", () => {
    const text = "a < b and <tool is not <tool_cal a tag\n\n";
    expect(parse("hermes", text)).toEqual({ content: text, calls: [] });
  });

  it("accepts arguments given as JSON text (that text is the arguments), and parameters for arguments", () => {
    const text =
      '<tool_call>\n{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}\n</tool_call>' +
      '<tool_call>{"type": "function", "name": "get_weather", "parameters": {"city": "Bern"}}</tool_call>' +
      '<tool_call>{"name": "get_time"}</tool_call>' +
      '<tool_call>{"arguments": {"city":"Lima"}, "name": "get_weather"}</tool_call>';
    expect(parse("hermes", text).calls).toEqual([
      weather("Rome"),
      weather("Bern"),
      { name: "get_time", arguments: "{}" },
      weather("", '{"city":"Lima"}'),
    ]);
  });

  it("turns an unknown tool name into content, whitespace kept", () => {
    const text =
      'Hi\n<tool_call>\n{"name": "send_mail", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>';
    expect(parse("hermes", text)).toEqual({
      content: 'Hi\n<tool_call>\n{"name": "send_mail", "arguments": {}}\n</tool_call>',
      calls: [{ name: "get_time", arguments: "{}" }],
    });
  });

  it("turns markup that breaks before the call is known into content", () => {
    for (const body of [
      '{"name": "get_weather", "arguments": [1]}',
      '{"extra": 1, "name": "get_weather", "arguments": {}}',
      '{"name": "get_weather", "parameters": {}, "arguments": {}}'.replace('"parameters": {}, ', '"id": 1, '),
      '["get_weather"]',
      '{"name": "get_weather", "arguments": "not json"}',
      '{"name": 3, "arguments": {}}',
      "not json",
    ]) {
      const text = `x <tool_call>\n${body}\n</tool_call> y`;
      expect(parse("hermes", text), body).toEqual({ content: text, calls: [] });
    }
  });

  it("keeps a call whose markup breaks after it was reported, dropping the broken markup up to </tool_call>", () => {
    for (const [body, args] of [
      ['{"name": "get_weather", "arguments": {"city": "Paris"}', '{"city": "Paris"}'],
      ['{"name": "get_weather", "arguments": {"city": "Paris"}, "extra": 1}', '{"city": "Paris"}'],
      ['{"name": "get_weather", "arguments": {"city": "Pa" x}}', '{"city": "Pa" '],
    ] as const) {
      const text = `x <tool_call>\n${body}\n</tool_call> y`;
      expect(parse("hermes", text), body).toEqual({ content: "xy", calls: [weather("", args)] });
    }
  });

  it("keeps an unterminated call with its arguments as far as they go; text after a closed call object is content", () => {
    expect(parse("hermes", 'Sure.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa')).toEqual({
      content: "Sure.",
      calls: [weather("", '{"city": "Pa')],
    });
    expect(parse("hermes", '<tool_call>{"name": "get_time", "arguments": {}}\nDone, I think.')).toEqual({
      content: "Done, I think.",
      calls: [{ name: "get_time", arguments: "{}" }],
    });
  });

  it("at a normal end, markup that never showed its call is content; cut off, it is dropped", () => {
    const text = 'Sure.\n<tool_call>\n{"name": "get_wea';
    expect(parse("hermes", text)).toEqual({ content: text, calls: [] });
    expect(parseAll("hermes", TOOLS, text, { cut: true })).toEqual({ content: "Sure.\n", calls: [] });
    expect(parseAll("hermes", TOOLS, "Sure. <tool_ca", { cut: true })).toEqual({
      content: "Sure. ",
      calls: [],
    });
  });

  it("cut at every point: partial arguments, never markup", () => {
    checkCuts(
      "hermes",
      TOOLS,
      'Hello.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris \\"X\\""}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>',
      ["<tool_call>", "</tool_call>", '"name"'],
    );
  });

  it("keeps text after a call as content", () => {
    const text = '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>\n\nDone.\n';
    expect(parse("hermes", text)).toEqual({
      content: "Done.",
      calls: [{ name: "get_time", arguments: "{}" }],
    });
  });

  it("with parallel false, parses the first call only; the rest is content", () => {
    const second = '<tool_call>{"name": "get_weather", "arguments": {"city": "Lima"}}</tool_call>';
    const text = `<tool_call>{"name": "get_time", "arguments": {}}</tool_call>\n${second}`;
    expect(parse("hermes", text, false)).toEqual({
      content: second,
      calls: [{ name: "get_time", arguments: "{}" }],
    });
    const p = new ToolCallParser("hermes", TOOLS, { parallel: false });
    p.push('<tool_call>{"name": "get_time", "arguments": {}}</tool_call>');
    expect(p.callsComplete).toBe(true);
  });

  it("releases content as soon as it cannot start a call, and streams the arguments as they come", () => {
    const p = new ToolCallParser("hermes", TOOLS);
    expect(p.push("Hello <tool")).toEqual({ content: "Hello", deltas: [] });
    expect(p.push("s> ok")).toEqual({ content: " <tools> ok", deltas: [] });
    expect(p.push(' <tool_call>{"name": "get_weather", "argu')).toEqual({ content: "", deltas: [] });
    const r = p.push('ments": {"ci');
    expect(r.deltas).toEqual([
      { index: 0, id: expect.stringMatching(/^call_[A-Za-z0-9]{24}$/), name: "get_weather", arguments: "" },
      { index: 0, arguments: '{"ci' },
    ]);
    expect(p.push('ty": "Par')).toEqual({ content: "", deltas: [{ index: 0, arguments: 'ty": "Par' }] });
    expect(p.push('is"}}</tool_call>')).toEqual({ content: "", deltas: [{ index: 0, arguments: 'is"}' }] });
    expect(p.calls[0]!.arguments).toBe('{"city": "Paris"}');
    expect(() => {
      p.end();
      p.push("x");
    }).toThrow(/after end/);
  });
});

describe("ToolCallParser llama3", () => {
  it("parses a whole-message call, with or without <|python_tag|>", () => {
    for (const text of [
      '{"name": "get_weather", "parameters": {"city": "Paris"}}',
      '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}',
      '  \n<|python_tag|> {"name": "get_weather", "arguments": {"city": "Paris"}}\n',
      '{"type": "function", "name": "get_weather", "parameters": {"city": "Paris"}}',
    ])
      expect(parse("llama3", text), text).toEqual({ content: "", calls: [weather("Paris")] });
  });

  it("parses a built-in tool's call, <|python_tag|>name.call(k=v)", () => {
    for (const text of [
      '<|python_tag|>get_weather.call(city="Paris")',
      "<|python_tag|>get_weather.call(city='Paris')",
      '<|python_tag|> get_weather.call( city = "Paris" )',
    ])
      expect(parse("llama3", text), text).toEqual({ content: "", calls: [weather("Paris")] });
    expect(
      parse("llama3", '<|python_tag|>get_weather.call(city="a \\"b\\"\\n", n=[1, True], x=None)'),
    ).toEqual({
      content: "",
      calls: [weather("", '{"city": "a \\"b\\"\\n", "n": [1,true], "x": null}')],
    });
  });

  it("leaves text, and JSON or calls that are not a known tool's, as content", () => {
    for (const text of [
      "The weather in Paris is sunny.",
      '{"answer": 42}',
      '{"name": "send_mail", "parameters": {}}',
      '<|python_tag|>brave_search.call(query="x")',
      'Call: {"name": "get_weather", "parameters": {"city": "Paris"}}',
      "  ",
      "<|python",
    ])
      expect(parse("llama3", text), text).toEqual({ content: text, calls: [] });
  });

  it("text after the call is content; an unterminated call keeps its arguments as far as they go", () => {
    expect(parse("llama3", '{"name": "get_weather", "parameters": {"city": "Paris"}} and more')).toEqual({
      content: "and more",
      calls: [weather("Paris")],
    });
    expect(parse("llama3", '{"name": "get_weather", "parameters": {"city": "Paris"')).toEqual({
      content: "",
      calls: [weather("", '{"city": "Paris"')],
    });
  });

  it("cut at every point: partial arguments, never markup", () => {
    checkCuts("llama3", TOOLS, '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}', [
      "<|python_tag|>",
      "{",
    ]);
    checkCuts("llama3", TOOLS, '<|python_tag|>get_weather.call(city="Paris")', ["<|python_tag|>", "call("]);
  });

  it("holds JSON back until its first keys show whether it is a call", () => {
    const p = new ToolCallParser("llama3", TOOLS);
    expect(p.push('{"na')).toEqual({ content: "", deltas: [] });
    expect(p.push('me": "get_weather", "parameters": ')).toEqual({ content: "", deltas: [] });
    expect(p.push("{").deltas).toHaveLength(2);
    const q = new ToolCallParser("llama3", TOOLS);
    expect(q.push('{"answer": ')).toEqual({ content: '{"answer":', deltas: [] });
  });
});

it("newCallId is call_ and 24 letters or digits, different each time", () => {
  const a = newCallId();
  expect(a).toMatch(/^call_[A-Za-z0-9]{24}$/);
  expect(newCallId()).not.toBe(a);
});
