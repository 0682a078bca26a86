import { describe, expect, it } from "vitest";
import type { ToolFormat } from "./formats.js";
import type { ToolDef } from "./parse.js";
import { newCallId, ToolCallParser } from "./parser.js";

const TOOLS: ToolDef[] = [
  {
    name: "get_weather",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
  { name: "get_time", parameters: { type: "object", properties: {} } },
];

interface Result {
  content: string;
  calls: { name: string; arguments: string }[];
}

/** Feeds `pieces` and checks the deltas against `calls`: one header (id, name, "") then argument fragments. */
function run(format: ToolFormat, pieces: string[], parallel = true): Result {
  let n = 0;
  const p = new ToolCallParser(format, TOOLS, { parallel, newId: () => `call_${n++}` });
  let content = "";
  const streamed: { id: string; name: string; arguments: string }[] = [];
  const take = (r: {
    content: string;
    deltas: { index: number; id?: string; name?: string; arguments: string }[];
  }) => {
    content += r.content;
    for (const d of r.deltas) {
      if (d.index === streamed.length) {
        expect(d.id).toBeDefined();
        expect(d.name).toBeDefined();
        expect(d.arguments).toBe("");
        streamed.push({ id: d.id!, name: d.name!, arguments: "" });
      } else {
        expect(d.index).toBe(streamed.length - 1);
        expect(d.id).toBeUndefined();
        streamed[d.index]!.arguments += d.arguments;
      }
    }
  };
  for (const piece of pieces) take(p.push(piece));
  take(p.end());
  expect(streamed).toEqual(p.calls);
  return { content, calls: p.calls.map(({ name, arguments: a }) => ({ name, arguments: a })) };
}

/** Every way of cutting `text` once, every character alone, and random cuts into several pieces. */
function* splits(text: string): Generator<string[]> {
  const chars = [...text];
  for (let i = 0; i <= chars.length; i++) yield [chars.slice(0, i).join(""), chars.slice(i).join("")];
  yield chars;
  let seed = 12345;
  const rand = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  for (let r = 0; r < 30; r++) {
    const pieces: string[] = [];
    let cur = "";
    for (const c of chars) {
      cur += c;
      if (rand() < 0.3) {
        pieces.push(cur);
        cur = "";
      }
    }
    pieces.push(cur);
    yield pieces;
  }
}

/** The result of the whole text, after checking that every split gives the same. */
function parse(format: ToolFormat, text: string, parallel = true): Result {
  const whole = run(format, [text], parallel);
  for (const pieces of splits(text))
    expect(run(format, pieces, parallel), JSON.stringify(pieces)).toEqual(whole);
  return whole;
}

const weather = (city: string) => ({ name: "get_weather", arguments: JSON.stringify({ city }) });

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
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich \\"Z\\" <tool_call>"}}\n</tool_call>\n';
    expect(parse("hermes", text)).toEqual({
      content: "",
      calls: [weather("Paris"), { name: "get_time", arguments: "{}" }, weather('Zürich "Z" <tool_call>')],
    });
  });

  it("keeps Qwen3 think text as content", () => {
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

  it("accepts arguments given as JSON text, and parameters for arguments", () => {
    const text =
      '<tool_call>\n{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}\n</tool_call>' +
      '<tool_call>{"type": "function", "name": "get_weather", "parameters": {"city": "Bern"}}</tool_call>' +
      '<tool_call>{"name": "get_time"}</tool_call>';
    expect(parse("hermes", text).calls).toEqual([
      weather("Rome"),
      weather("Bern"),
      { name: "get_time", arguments: "{}" },
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

  it("turns malformed JSON and bad call objects into content", () => {
    for (const body of [
      '{"name": "get_weather", "arguments": {"city": "Paris"}',
      '{"name": "get_weather", "arguments": [1]}',
      '{"name": "get_weather", "arguments": {}, "extra": 1}',
      '{"name": "get_weather", "arguments": {}, "parameters": {}}',
      '["get_weather"]',
      '{"name": "get_weather", "arguments": "not json"}',
    ]) {
      const text = `x <tool_call>\n${body}\n</tool_call> y`;
      expect(parse("hermes", text), body).toEqual({ content: text, calls: [] });
    }
  });

  it("returns an unterminated call as content", () => {
    const text = 'Sure.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}';
    expect(parse("hermes", text)).toEqual({ content: text, calls: [] });
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

  it("releases content as soon as it cannot start a call", () => {
    const p = new ToolCallParser("hermes", TOOLS);
    expect(p.push("Hello <tool")).toEqual({ content: "Hello", deltas: [] });
    expect(p.push("s> ok")).toEqual({ content: " <tools> ok", deltas: [] });
    const r = p.push(' <tool_call>{"name": "get_time", "arguments": {}}</tool_call>');
    expect(r.content).toBe("");
    expect(r.deltas).toEqual([
      { index: 0, id: expect.stringMatching(/^call_[A-Za-z0-9]{24}$/), name: "get_time", arguments: "" },
      { index: 0, arguments: "{}" },
    ]);
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

  it("leaves text, and JSON that is not a call, as content", () => {
    for (const text of [
      "The weather in Paris is sunny.",
      '{"answer": 42}',
      '{"name": "send_mail", "parameters": {}}',
      '{"name": "get_weather", "parameters": {"city": "Paris"',
      '{"name": "get_weather", "parameters": {"city": "Paris"}} and more',
      '<|python_tag|>brave_search.call(query="x")',
      'Call: {"name": "get_weather", "parameters": {"city": "Paris"}}',
      "  ",
      "<|python",
    ]) {
      const r = parse("llama3", text);
      if (text.endsWith("and more")) expect(r).toEqual({ content: "and more", calls: [weather("Paris")] });
      else expect(r, text).toEqual({ content: text, calls: [] });
    }
  });

  it("releases JSON content once its first key shows it is not a call", () => {
    const p = new ToolCallParser("llama3", TOOLS);
    expect(p.push('{"na')).toEqual({ content: "", deltas: [] });
    expect(p.push('me": "get_weather", "parameters": {')).toEqual({ content: "", deltas: [] });
    const q = new ToolCallParser("llama3", TOOLS);
    expect(q.push('{"answer": ')).toEqual({ content: '{"answer":', deltas: [] });
  });
});

it("newCallId is call_ and 24 letters or digits, different each time", () => {
  const a = newCallId();
  expect(a).toMatch(/^call_[A-Za-z0-9]{24}$/);
  expect(newCallId()).not.toBe(a);
});
