// The grammar of each format that tool_choice "required" / a named function forces, checked by what it
// allows: texts drawn from it at random parse back to calls of the chosen tools whose arguments fit the
// tools' schemas, the format's own way of writing the calls matches it, and other text does not.

import { type ConstraintVocab, Grammar } from "@minfer/sampler";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { DEEPSEEK, KIMI } from "./format-sections.js";
import { TOOL_FORMATS, type ToolFormat } from "./formats.js";
import { textWithout, toolCallGrammar } from "./grammar.js";
import type { ToolChoice, ToolDef, ToolsRequest } from "./parse.js";
import { ToolCallParser } from "./parser.js";

const TOOLS: ToolDef[] = [
  {
    name: "get_weather",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, unit: { enum: ["c", "f"] }, days: { type: "integer" } },
      required: ["city"],
    },
  },
  { name: "get_time", parameters: { type: "object", properties: {} } },
  {
    name: "flags",
    parameters: {
      type: "object",
      properties: {
        on: { type: "boolean" },
        tags: { type: "array", items: { type: "string" }, maxItems: 2 },
      },
      required: ["on"],
    },
  },
];
const validators = new Map(TOOLS.map((t) => [t.name, new Ajv2020().compile(t.parameters)]));

const req = (choice: ToolChoice, parallel: boolean): ToolsRequest => ({
  tools: TOOLS,
  choice,
  parallel,
  templateTools: [],
});

/** Characters the random walk may write, each one token; plus an end-of-generation token last. */
const ALPHABET = [
  ..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
  ..." \n\t!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
  "\uff5c",
  "\u2581",
  "é",
];
const bytes = ALPHABET.map((c) => new TextEncoder().encode(c));
const VOCAB: ConstraintVocab = {
  size: ALPHABET.length + 1,
  tokenBytes: (id) => bytes[id] ?? new Uint8Array(),
  isEog: (id) => id === ALPHABET.length,
};
/** What the walk prefers once a text is long: whatever closes strings, objects, lists and tags. */
const CLOSERS = ['"', "}", "]", ")", ">", "|", "\uff5c", "\n", "<", "/", "`"];

/**
 * A text `grammar` allows, drawn a character at a time at random (a seeded generator); past `soft`
 * characters it takes the first allowed closer, so that the walk ends. Undefined when it ran too long.
 */
function draw(grammar: Grammar, seed: number, soft = 160, hard = 3000): string | undefined {
  const c = grammar.constraint(VOCAB);
  let s = seed;
  const rand = () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
  let text = "";
  while (text.length < hard) {
    const allowed: number[] = [];
    for (let id = 0; id < ALPHABET.length; id++) if (c.allows(id)) allowed.push(id);
    if (c.isComplete() && (allowed.length === 0 || rand() < (text.length > soft ? 0.9 : 0.2))) return text;
    if (allowed.length === 0) throw new Error(`the walk is stuck after ${JSON.stringify(text)}`);
    let id = allowed[Math.floor(rand() * allowed.length)]!;
    if (text.length > soft) {
      const closer = CLOSERS.map((ch) => ALPHABET.indexOf(ch)).find((k) => allowed.includes(k));
      if (closer !== undefined && rand() < 0.8) id = closer;
    }
    c.accept(id);
    text += ALPHABET[id];
  }
  return undefined;
}

/** Parses `text` in `format`: it must be calls only, of the tools named, arguments valid. */
function checkCalls(format: ToolFormat, text: string, names: string[], parallel: boolean): void {
  const p = new ToolCallParser(format, TOOLS);
  const content = p.push(text).content + p.end(false).content;
  expect(content, text).toBe("");
  expect(p.calls.length, text).toBeGreaterThan(0);
  if (!parallel || format === "llama3") expect(p.calls.length, text).toBe(1);
  for (const call of p.calls) {
    expect(names, text).toContain(call.name);
    const args = JSON.parse(call.arguments);
    const valid = validators.get(call.name)!;
    expect(valid(args), `${text}\n${call.arguments}\n${JSON.stringify(valid.errors)}`).toBe(true);
  }
}

/** How each format writes a get_time call and a get_weather call (as its templates do). */
const WRITTEN: Record<ToolFormat, string> = {
  hermes:
    '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
  llama3: '{"name": "get_weather", "parameters": {"city": "Paris"}}',
  pythonic: '[get_time(), get_weather(city="Paris", days=2)]',
  lfm2: '<|tool_call_start|>[get_time(), get_weather(city="Paris")]<|tool_call_end|>',
  "mistral-nemo":
    '[TOOL_CALLS][{"name": "get_time", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Paris"}}]',
  mistral: '[TOOL_CALLS]get_time[ARGS]{}[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
  "deepseek-r1": `${DEEPSEEK.callsBegin}${DEEPSEEK.callBegin}function${DEEPSEEK.sep}get_time\n\`\`\`json\n{}\n\`\`\`${DEEPSEEK.callEnd}\n${DEEPSEEK.callBegin}function${DEEPSEEK.sep}get_weather\n\`\`\`json\n{"city": "Paris"}\n\`\`\`${DEEPSEEK.callEnd}${DEEPSEEK.callsEnd}`,
  "deepseek-v3.1": `${DEEPSEEK.callsBegin}${DEEPSEEK.callBegin}get_time${DEEPSEEK.sep}{}${DEEPSEEK.callEnd}${DEEPSEEK.callBegin}get_weather${DEEPSEEK.sep}{"city": "Paris"}${DEEPSEEK.callEnd}${DEEPSEEK.callsEnd}`,
  "kimi-k2": `${KIMI.sectionBegin}${KIMI.callBegin}functions.get_time:0${KIMI.argsBegin}{}${KIMI.callEnd}${KIMI.callBegin}functions.get_weather:1${KIMI.argsBegin}{"city": "Paris"}${KIMI.callEnd}${KIMI.sectionEnd}`,
  "qwen3-coder":
    "<tool_call>\n<function=get_time>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
  "glm-4.5":
    "<tool_call>get_time\n</tool_call>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
  "command-r7b":
    '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_time", "parameters": {}},\n    {"tool_call_id": "1", "tool_name": "get_weather", "parameters": {"city": "Paris"}}\n]<|END_ACTION|>',
  granite:
    '<|tool_call|>[{"name": "get_time", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Paris"}}]',
};

describe.each(TOOL_FORMATS.map((format) => ({ format })))("toolCallGrammar $format", ({ format }) => {
  it("what it allows parses back to calls of the tools, arguments valid; the format's own writing matches", () => {
    const g = Grammar.parse(toolCallGrammar(req("required", true), format)!);
    let drawn = 0;
    for (let seed = 1; drawn < 12 && seed < 60; seed++) {
      const text = draw(g, seed);
      if (text === undefined) continue;
      drawn++;
      checkCalls(format, text, ["get_weather", "get_time", "flags"], true);
    }
    expect(drawn).toBe(12);
    expect(g.matches(WRITTEN[format]), WRITTEN[format]).toBe(true);
    expect(g.matches(`Sure. ${WRITTEN[format]}`)).toBe(false);
    expect(g.matches(WRITTEN[format].replace(/get_weather/g, "send_mail"))).toBe(false);
  });

  it("a named function: only that one; parallel false: exactly one call", () => {
    const named = Grammar.parse(toolCallGrammar(req({ name: "flags" }, false), format)!);
    for (let seed = 1; seed <= 6; seed++) {
      const text = draw(named, seed);
      if (text !== undefined) checkCalls(format, text, ["flags"], false);
    }
    expect(named.matches(WRITTEN[format])).toBe(false);
  });
});

describe("toolCallGrammar with a think block first", () => {
  const tags = { start: "<think>", end: "</think>" };

  it("an open block must close before the calls; a closed one may come first", () => {
    const open = Grammar.parse(toolCallGrammar(req("required", true), "hermes", { ...tags, open: true })!);
    const call = '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>';
    expect(open.matches(`I should call get_time. <b>x</b></think>\n\n${call}`)).toBe(true);
    expect(open.matches(call)).toBe(false);
    expect(open.matches(`a</think>b</think>\n${call}`)).toBe(false);
    const optional = Grammar.parse(
      toolCallGrammar(req("required", true), "hermes", { ...tags, open: false })!,
    );
    expect(optional.matches(call)).toBe(true);
    expect(optional.matches(`<think>\nhmm\n</think>\n\n${call}`)).toBe(true);
    expect(optional.matches(`hmm</think>${call}`)).toBe(false);
  });

  it("textWithout(tag): any text in which tag does not occur, and that does not end with its start", () => {
    for (const tag of ["</think>", "\n</parameter>", "[/THINK]", "<|END_THINKING|>"]) {
      const g = Grammar.parse(`root ::= ${textWithout(tag)} "${tag.replace(/\n/g, "\\n")}"`);
      for (const body of ["", "plain", "a < b", `${tag[0]}${tag[0]}x`, `${tag.slice(0, -1)}x`, "x\n\ny"])
        expect(g.matches(body + tag), JSON.stringify(body)).toBe(true);
      for (const body of [tag, `a${tag}b`, tag.slice(0, 3)])
        expect(g.matches(body + tag), JSON.stringify(body)).toBe(false);
    }
  });
});
