import { Grammar } from "@minfer/sampler";
import { describe, expect, it } from "vitest";
import { ApiError } from "../errors.js";
import type { ToolFormat } from "./formats.js";
import { toolCallGrammar } from "./grammar.js";
import type { ToolChoice, ToolDef, ToolsRequest } from "./parse.js";
import { ToolCallParser } from "./parser.js";

const TOOLS: ToolDef[] = [
  {
    name: "get_weather",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, unit: { enum: ["c", "f"] } },
      required: ["city"],
    },
  },
  { name: "get_time", parameters: { type: "object", properties: {} } },
  {
    name: "tree",
    // A recursive schema with $defs and a "#" reference: both must still resolve inside the combined grammar.
    parameters: {
      type: "object",
      properties: { root: { $ref: "#/$defs/node" }, again: { $ref: "#" } },
      required: ["root"],
      $defs: {
        node: { type: "object", properties: { kids: { type: "array", items: { $ref: "#/$defs/node" } } } },
      },
    },
  },
  // No type: the arguments must still be an object.
  { name: "anything", parameters: {} },
];

const req = (choice: ToolChoice, parallel = true, tools = TOOLS): ToolsRequest => ({
  tools,
  choice,
  parallel,
  templateTools: [],
});

const grammar = (r: ToolsRequest, format: ToolFormat): Grammar => {
  const text = toolCallGrammar(r, format);
  expect(text).toBeDefined();
  return Grammar.parse(text!);
};

const hermes = (...jsons: string[]) => jsons.map((j) => `<tool_call>\n${j}\n</tool_call>`).join("\n");

const WEATHER = '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}';
const TIME = '{"name":"get_time","arguments":{}}';
const TREE = '{"name": "tree", "arguments": {"root": {"kids": [{"kids": []}, {}]}, "again": {"root": {}}}}';
const ANY = '{"name": "anything", "arguments": {"x": [1, "y"]}}';

describe("toolCallGrammar", () => {
  it("is undefined for auto and none", () => {
    expect(toolCallGrammar(req("auto"), "hermes")).toBeUndefined();
    expect(toolCallGrammar(req("none"), "llama3")).toBeUndefined();
  });

  it("hermes required, parallel: one or more calls of any tool, arguments valid", () => {
    const g = grammar(req("required"), "hermes");
    for (const ok of [hermes(WEATHER), hermes(TIME), hermes(TREE), hermes(ANY), hermes(WEATHER, TIME, TREE)])
      expect(g.matches(ok), ok).toBe(true);
    for (const bad of [
      "",
      `Sure. ${hermes(WEATHER)}`,
      WEATHER,
      hermes('{"name": "get_weather", "arguments": {"unit": "c"}}'),
      hermes('{"name": "get_weather", "arguments": {"city": 3}}'),
      hermes('{"name": "get_weather", "arguments": {"city": "Paris", "unit": "k"}}'),
      hermes('{"name": "send_mail", "arguments": {}}'),
      hermes('{"name": "tree", "arguments": {"root": {"kids": [1]}}}'),
      hermes('{"name": "anything", "arguments": [1]}'),
      hermes('{"arguments": {}, "name": "get_time"}'),
      `${hermes(TIME)}\n`,
      hermes(TIME, WEATHER).replace("</tool_call>\n", "</tool_call>\n\n"),
    ])
      expect(g.matches(bad), bad).toBe(false);
  });

  it("hermes with parallel false: exactly one call", () => {
    const g = grammar(req("required", false), "hermes");
    expect(g.matches(hermes(WEATHER))).toBe(true);
    expect(g.matches(hermes(WEATHER, TIME))).toBe(false);
  });

  it("a named function: only that one", () => {
    const g = grammar(req({ name: "get_time" }), "hermes");
    expect(g.matches(hermes(TIME))).toBe(true);
    expect(g.matches(hermes(TIME, TIME))).toBe(true);
    expect(g.matches(hermes(WEATHER))).toBe(false);
    expect(g.matches(hermes(TIME, WEATHER))).toBe(false);
  });

  it("llama3: one {name, parameters} object", () => {
    const g = grammar(req("required"), "llama3");
    const call = '{"name": "get_weather", "parameters": {"city": "Paris"}}';
    expect(g.matches(call)).toBe(true);
    expect(g.matches('{"name": "tree", "parameters": {"root": {"kids": []}}}')).toBe(true);
    for (const bad of [
      WEATHER,
      hermes(call),
      `${call}\n${call}`,
      '{"name": "get_weather", "parameters": {}}',
      '{"name": "nope", "parameters": {}}',
    ])
      expect(g.matches(bad), bad).toBe(false);
    const named = grammar(req({ name: "get_weather" }, false), "llama3");
    expect(named.matches(call)).toBe(true);
    expect(named.matches('{"name": "get_time", "parameters": {}}')).toBe(false);
  });

  it("every text it accepts parses back to the calls", () => {
    const g = grammar(req("required"), "hermes");
    const text = hermes(WEATHER, TREE, ANY);
    expect(g.matches(text)).toBe(true);
    const p = new ToolCallParser("hermes", TOOLS);
    const content = p.push(text).content + p.end().content;
    expect(content).toBe("");
    expect(p.calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual(
      [WEATHER, TREE, ANY].map((j) => [JSON.parse(j).name, JSON.parse(j).arguments]),
    );
  });

  it("a tool whose schema cannot be enforced is a 400 naming it", () => {
    const tools: ToolDef[] = [
      TOOLS[1]!,
      { name: "bad", parameters: { type: "object", properties: { s: { type: "string", pattern: "^a+$" } } } },
    ];
    let err: unknown;
    try {
      toolCallGrammar(req("required", true, tools), "hermes");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).param).toBe("tools[1].function.parameters");
    expect((err as ApiError).code).toBe("unsupported_schema");
    expect((err as ApiError).status).toBe(400);
    // Not chosen: not checked.
    expect(toolCallGrammar(req({ name: "get_time" }, true, tools), "hermes")).toBeDefined();
  });
});
