// Every tool-call format, written as its models write it (llama.cpp's common/chat.cpp and tests/test-chat.cpp
// show each one's syntax), parsed back whole, piece by piece at every split, cut off at every prefix.

import { describe, expect, it } from "vitest";
import { DEEPSEEK, KIMI } from "./format-sections.js";
import type { ToolFormat } from "./formats.js";
import type { ToolDef } from "./parse.js";
import { checkCuts, parseAll } from "./test-parse.js";

const TOOLS: ToolDef[] = [
  {
    name: "get_weather",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, days: { type: "integer" } },
      required: ["city"],
    },
  },
  { name: "get_time", parameters: { type: "object", properties: {} } },
];

type Args = Record<string, string | number>;
interface Call {
  name: string;
  args: Args;
}

/** The arguments' JSON as the tests write it, and as the parser builds it: `": "` and `", "` between. */
const json = (a: Args) =>
  Object.keys(a).length === 0
    ? "{}"
    : `{${Object.entries(a)
        .map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`)
        .join(", ")}}`;

/** A Python call's keyword arguments (JSON's string literals are Python's for these values). */
const kwargs = (a: Args) =>
  Object.entries(a)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(", ");

/** An XML-style value: a string as it is, anything else as JSON. */
const raw = (v: string | number) => (typeof v === "string" ? v : JSON.stringify(v));

interface FormatCase {
  format: ToolFormat;
  /** The text of these calls in the format. */
  write(calls: Call[]): string;
  /** Whether several calls can be written (llama3: one per message). */
  many: boolean;
  /** Whether calls may follow text (llama3 and pythonic: only at the message's start). */
  textBefore: boolean;
  /** Strings of the format's markup that content must never show. */
  markers: string[];
  /** Markup that is not a call: it stays content, as written. */
  malformed: string[];
}

const CASES: FormatCase[] = [
  {
    format: "hermes",
    write: (cs) =>
      cs
        .map((c) => `<tool_call>\n{"name": "${c.name}", "arguments": ${json(c.args)}}\n</tool_call>`)
        .join("\n"),
    many: true,
    textBefore: true,
    markers: ["<tool_call>", "</tool_call>"],
    malformed: [
      "<tool_call>\nnot json\n</tool_call>",
      '<tool_call>{"name": "get_time", "arguments": 1}</tool_call>',
    ],
  },
  {
    format: "llama3",
    write: (cs) => `<|python_tag|>{"name": "${cs[0]!.name}", "parameters": ${json(cs[0]!.args)}}`,
    many: false,
    textBefore: false,
    markers: ["<|python_tag|>"],
    malformed: ['{"name": "get_time", "parameters": 1}', "<|python_tag|>print(1)"],
  },
  {
    format: "pythonic",
    write: (cs) => `[${cs.map((c) => `${c.name}(${kwargs(c.args)})`).join(", ")}]`,
    many: true,
    textBefore: false,
    markers: ["get_weather(", "get_time("],
    malformed: ["[1, 2, 3]", "[see the docs](http://example.com)"],
  },
  {
    format: "lfm2",
    write: (cs) =>
      `<|tool_call_start|>[${cs.map((c) => `${c.name}(${kwargs(c.args)})`).join(", ")}]<|tool_call_end|>`,
    many: true,
    textBefore: true,
    markers: ["<|tool_call_start|>", "<|tool_call_end|>", "get_weather("],
    malformed: ["<|tool_call_start|>get_time()<|tool_call_end|>", "<|tool_call_start|>[1]<|tool_call_end|>"],
  },
  {
    format: "mistral-nemo",
    write: (cs) =>
      `[TOOL_CALLS][${cs.map((c) => `{"name": "${c.name}", "arguments": ${json(c.args)}, "id": "a1b2c3d4e"}`).join(", ")}]`,
    many: true,
    textBefore: true,
    markers: ["[TOOL_CALLS]", '"name"'],
    malformed: ["[TOOL_CALLS] no calls", '[TOOL_CALLS][{"name": "get_time", "arguments": []}]'],
  },
  {
    format: "mistral",
    write: (cs) => cs.map((c) => `[TOOL_CALLS]${c.name}[ARGS]${json(c.args)}`).join(""),
    many: true,
    textBefore: true,
    markers: ["[TOOL_CALLS]", "[ARGS]"],
    malformed: ["[TOOL_CALLS]get_time[ARGS]nope", "[TOOL_CALLS]get_time and more"],
  },
  {
    format: "deepseek-r1",
    write: (cs) =>
      DEEPSEEK.callsBegin +
      cs
        .map(
          (c) =>
            `${DEEPSEEK.callBegin}function${DEEPSEEK.sep}${c.name}\n\`\`\`json\n${json(c.args)}\n\`\`\`${DEEPSEEK.callEnd}`,
        )
        .join("\n") +
      DEEPSEEK.callsEnd,
    many: true,
    textBefore: true,
    markers: [DEEPSEEK.callsBegin, DEEPSEEK.callBegin, "```"],
    malformed: [
      `${DEEPSEEK.callsBegin}${DEEPSEEK.callBegin}function${DEEPSEEK.sep}get_time\n{}${DEEPSEEK.callEnd}${DEEPSEEK.callsEnd}`,
      `${DEEPSEEK.callsBegin} hello`,
    ],
  },
  {
    format: "deepseek-v3.1",
    write: (cs) =>
      DEEPSEEK.callsBegin +
      cs
        .map((c) => `${DEEPSEEK.callBegin}${c.name}${DEEPSEEK.sep}${json(c.args)}${DEEPSEEK.callEnd}`)
        .join("") +
      DEEPSEEK.callsEnd,
    many: true,
    textBefore: true,
    markers: [DEEPSEEK.callsBegin, DEEPSEEK.callBegin, DEEPSEEK.sep],
    malformed: [
      `${DEEPSEEK.callsBegin}${DEEPSEEK.callBegin}get_time${DEEPSEEK.sep}[]${DEEPSEEK.callEnd}${DEEPSEEK.callsEnd}`,
    ],
  },
  {
    format: "kimi-k2",
    write: (cs) =>
      KIMI.sectionBegin +
      cs
        .map(
          (c, i) =>
            `${KIMI.callBegin}functions.${c.name}:${i}${KIMI.argsBegin}${json(c.args)}${KIMI.callEnd}`,
        )
        .join("") +
      KIMI.sectionEnd,
    many: true,
    textBefore: true,
    markers: [KIMI.sectionBegin, KIMI.callBegin, KIMI.argsBegin],
    malformed: [
      `${KIMI.sectionBegin}${KIMI.callBegin}get_time${KIMI.argsBegin}{}${KIMI.callEnd}${KIMI.sectionEnd}`,
    ],
  },
  {
    format: "qwen3-coder",
    write: (cs) =>
      cs
        .map(
          (c) =>
            `<tool_call>\n<function=${c.name}>\n` +
            Object.entries(c.args)
              .map(([k, v]) => `<parameter=${k}>\n${raw(v)}\n</parameter>\n`)
              .join("") +
            "</function>\n</tool_call>",
        )
        .join("\n"),
    many: true,
    textBefore: true,
    markers: ["<tool_call>", "<function=", "<parameter=", "</parameter>"],
    malformed: [
      '<tool_call>\n{"name": "get_time"}\n</tool_call>',
      "<tool_call>\n<function=get time>\n</tool_call>",
    ],
  },
  {
    format: "glm-4.5",
    write: (cs) =>
      cs
        .map(
          (c) =>
            `<tool_call>${c.name}\n` +
            Object.entries(c.args)
              .map(([k, v]) => `<arg_key>${k}</arg_key>\n<arg_value>${raw(v)}</arg_value>\n`)
              .join("") +
            "</tool_call>",
        )
        .join("\n"),
    many: true,
    textBefore: true,
    markers: ["<tool_call>", "<arg_key>", "<arg_value>", "</arg_value>"],
    malformed: ['<tool_call>{"name": "get_time"}</tool_call>'],
  },
  {
    format: "command-r7b",
    write: (cs) =>
      `<|START_ACTION|>[\n${cs
        .map(
          (c, i) => `    {"tool_call_id": "${i}", "tool_name": "${c.name}", "parameters": ${json(c.args)}}`,
        )
        .join(",\n")}\n]<|END_ACTION|>`,
    many: true,
    textBefore: true,
    markers: ["<|START_ACTION|>", "<|END_ACTION|>", "tool_name"],
    malformed: ['<|START_ACTION|>{"tool_name": "get_time", "parameters": {}}<|END_ACTION|>'],
  },
  {
    format: "granite",
    write: (cs) =>
      `<|tool_call|>[${cs.map((c) => `{"name": "${c.name}", "arguments": ${json(c.args)}}`).join(", ")}]`,
    many: true,
    textBefore: true,
    markers: ["<|tool_call|>", '"name"'],
    malformed: ['<|tool_call|>{"name": "get_time", "arguments": {}}'],
  },
];

const WEATHER: Call = { name: "get_weather", args: { city: 'Zürich "Z"\n<b>', days: 3 } };
const TIME: Call = { name: "get_time", args: {} };
const expected = (...cs: Call[]) => cs.map((c) => ({ name: c.name, arguments: json(c.args) }));

describe.each(CASES)("$format", (f) => {
  const parse = (text: string, parallel = true) => parseAll(f.format, TOOLS, text, { parallel });

  it("parses a call, with text before (where the format allows) and after", () => {
    expect(parse(f.write([WEATHER]))).toEqual({ content: "", calls: expected(WEATHER) });
    if (f.textBefore)
      expect(parse(`Let me check.\n\n${f.write([WEATHER])}\n\nOne moment.`)).toEqual({
        content: "Let me check.One moment.",
        calls: expected(WEATHER),
      });
    else
      expect(parse(`${f.write([WEATHER])}\nOne moment.`)).toEqual({
        content: "One moment.",
        calls: expected(WEATHER),
      });
  });

  // (formats whose message holds one call, such as Llama 3's JSON, have no such cases)
  if (f.many) {
    it("parses several calls", () => {
      expect(parse(f.write([WEATHER, TIME, WEATHER]))).toEqual({
        content: "",
        calls: expected(WEATHER, TIME, WEATHER),
      });
    });

    it("with parallel_tool_calls false, the first call only", () => {
      const r = parse(f.write([TIME, WEATHER]), false);
      expect(r.calls).toEqual(expected(TIME));
      expect(r.content).not.toBe("");
    });
  }

  it("leaves plain text, a call of an unknown tool and malformed markup as content", () => {
    for (const text of [
      "Plain text, [brackets], <tags> and {braces}.",
      f.write([{ name: "send_mail", args: { to: "x" } }]),
      ...f.malformed,
    ])
      expect(parse(text), text).toEqual({ content: text, calls: [] });
  });

  it("cut off at every point: the calls so far with partial arguments, never markup", () => {
    const text = f.textBefore
      ? `Checking.${f.write([WEATHER, TIME])}`
      : f.write(f.many ? [WEATHER, TIME] : [WEATHER]);
    checkCuts(f.format, TOOLS, text, f.markers);
  });
});

describe("format details", () => {
  it("mistral: [CALL_ID] between name and arguments", () => {
    const text =
      '[TOOL_CALLS]get_time[CALL_ID]a1b2c3d4e[ARGS]{}[TOOL_CALLS]get_weather[CALL_ID]x9[ARGS]{"city": "Oslo"}';
    expect(parseAll("mistral", TOOLS, text).calls).toEqual([
      { name: "get_time", arguments: "{}" },
      { name: "get_weather", arguments: '{"city": "Oslo"}' },
    ]);
  });

  it("deepseek-r1: the closing fence right after the JSON, as R1 also writes it", () => {
    const text = `${DEEPSEEK.callsBegin}${DEEPSEEK.callBegin}function${DEEPSEEK.sep}get_time\n\`\`\`json\n{}\`\`\`${DEEPSEEK.callEnd}${DEEPSEEK.callsEnd}`;
    expect(parseAll("deepseek-r1", TOOLS, text).calls).toEqual([{ name: "get_time", arguments: "{}" }]);
  });

  it("kimi-k2: the call's id is the model's", async () => {
    const { ToolCallParser } = await import("./parser.js");
    const p = new ToolCallParser("kimi-k2", TOOLS);
    p.push(
      `${KIMI.sectionBegin}${KIMI.callBegin}functions.get_time:0${KIMI.argsBegin}{}${KIMI.callEnd}${KIMI.sectionEnd}`,
    );
    p.end();
    expect(p.calls[0]!.id).toBe("functions.get_time:0");
  });

  it("mistral ids are 9 letters and digits (its templates refuse others)", async () => {
    const { ToolCallParser } = await import("./parser.js");
    const p = new ToolCallParser("mistral-nemo", TOOLS);
    p.push('[TOOL_CALLS][{"name": "get_time", "arguments": {}}]');
    p.end();
    expect(p.calls[0]!.id).toMatch(/^[A-Za-z0-9]{9}$/);
  });

  it("qwen3-coder and glm-4.5: a parameter not declared a string is JSON when it is JSON, else a string", () => {
    const q =
      "<tool_call>\n<function=get_weather>\n<parameter=city>\n42\n</parameter>\n<parameter=days>\nsoon\n</parameter>\n<parameter=extra>\n[1, 2]\n</parameter>\n</function>\n</tool_call>";
    expect(parseAll("qwen3-coder", TOOLS, q).calls).toEqual([
      { name: "get_weather", arguments: '{"city": "42", "days": "soon", "extra": [1, 2]}' },
    ]);
    const g =
      "<tool_call>get_weather<arg_key>city</arg_key><arg_value>\n a \n</arg_value><arg_key>days</arg_key><arg_value>7</arg_value></tool_call>";
    expect(parseAll("glm-4.5", TOOLS, g).calls).toEqual([
      { name: "get_weather", arguments: '{"city": "\\n a \\n", "days": 7}' },
    ]);
  });

  it("pythonic: Python's literals become JSON's", () => {
    const text = "[get_weather(city='Rome', days=None, flags=[True, False], opts={'a': (1, 2)})]";
    expect(parseAll("pythonic", TOOLS, text).calls).toEqual([
      {
        name: "get_weather",
        arguments: '{"city": "Rome", "days": null, "flags": [true,false], "opts": {"a":[1,2]}}',
      },
    ]);
  });

  it("command-r7b: its response markers are dropped from the content", () => {
    expect(parseAll("command-r7b", TOOLS, "<|START_RESPONSE|>Hello, world!<|END_RESPONSE|>")).toEqual({
      content: "Hello, world!",
      calls: [],
    });
  });
});
