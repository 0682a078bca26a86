// The generic format's grammar: the answer shapes llama.cpp's generic handler allows (its JSON Schema:
// one call as `tool_call`, parallel calls as `tool_calls` with ids of 4 or more characters, or, under
// tool_choice auto, a `response`), each tool's arguments valid under its schema, nothing else.
import { Grammar } from "@minfer/sampler";
import { describe, expect, it } from "vitest";
import { ApiError } from "../errors.js";
import { genericSchema, genericToolGrammar } from "./generic-grammar.js";
import type { ToolChoice, ToolDef, ToolsRequest } from "./parse.js";

const TOOLS: ToolDef[] = [
  {
    name: "get_weather",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
  {
    name: "tree",
    // Its own $defs and references: they must resolve where the schema sits in the answer's.
    parameters: {
      type: "object",
      properties: { root: { $ref: "#/$defs/node" } },
      required: ["root"],
      $defs: {
        node: { type: "object", properties: { kids: { type: "array", items: { $ref: "#/$defs/node" } } } },
      },
    },
  },
];

const req = (choice: ToolChoice, tools = TOOLS): ToolsRequest => ({
  tools,
  choice,
  parallel: false,
  templateTools: [],
});

const g = (r: ToolsRequest, parallel = false, response?: { schema: unknown; param: string }) =>
  Grammar.parse(genericToolGrammar(r, { parallel, ...(response ? { response } : {}) }));

const WEATHER = '{"name": "get_weather", "arguments": {"city": "Paris"}}';
const TREE = '{"name": "tree", "arguments": {"root": {"kids": [{"kids": []}]}}}';
const withId = (call: string, id: string) => `${call.slice(0, -1)}, "id": "${id}"}`;

describe("the generic grammar", () => {
  it("auto, one call: a call of any tool as tool_call, or a string response", () => {
    const grammar = g(req("auto"));
    for (const ok of [
      `{"tool_call": ${WEATHER}}`,
      `{"tool_call": ${TREE}}`,
      '{"tool_call":{"name":"get_weather","arguments":{"city":"Rome"}}}',
      '{"response": "Hello, world!\\nWhat\'s up?"}',
      '{"response": ""}',
    ])
      expect(grammar.matches(ok), ok).toBe(true);
    for (const bad of [
      "",
      "Hello",
      '"Hello"',
      `{"tool_calls": [${withId(WEATHER, "call1")}]}`,
      `{"tool_call": ${WEATHER}, "response": "x"}`,
      '{"tool_call": {"name": "get_weather", "arguments": {}}}',
      '{"tool_call": {"name": "send_mail", "arguments": {}}}',
      '{"tool_call": {"arguments": {"city": "Paris"}, "name": "get_weather"}}',
      `{"tool_call": ${withId(WEATHER, "call1")}}`,
      '{"tool_call": {"name": "tree", "arguments": {"root": {"kids": [1]}}}}',
      '{"response": 3}',
      '{"answer": "x"}',
      `Sure: {"tool_call": ${WEATHER}}`,
    ])
      expect(grammar.matches(bad), bad).toBe(false);
  });

  it("auto, parallel: tool_calls, one or more, each with an id of at least 4 characters", () => {
    const grammar = g(req("auto"), true);
    for (const ok of [
      `{"tool_calls": [${withId(WEATHER, "call")}]}`,
      `{"tool_calls": [${withId(WEATHER, "call_1")}, ${withId(TREE, "abcd")}]}`,
      '{"response": "fine"}',
    ])
      expect(grammar.matches(ok), ok).toBe(true);
    for (const bad of [
      '{"tool_calls": []}',
      `{"tool_calls": [${WEATHER}]}`,
      `{"tool_calls": [${withId(WEATHER, "abc")}]}`,
      `{"tool_call": ${WEATHER}}`,
      `{"tool_call": ${withId(WEATHER, "call")}}`,
    ])
      expect(grammar.matches(bad), bad).toBe(false);
  });

  it("required: calls only", () => {
    const grammar = g(req("required"));
    expect(grammar.matches(`{"tool_call": ${TREE}}`)).toBe(true);
    expect(grammar.matches('{"response": "no"}')).toBe(false);
  });

  it("a named function: calls of that tool only", () => {
    const grammar = g(req({ name: "tree" }));
    expect(grammar.matches(`{"tool_call": ${TREE}}`)).toBe(true);
    expect(grammar.matches(`{"tool_call": ${WEATHER}}`)).toBe(false);
    expect(grammar.matches('{"response": "no"}')).toBe(false);
  });

  it("the response follows response_format's schema when one is given", () => {
    const schema = { type: "object", properties: { n: { type: "integer" } }, required: ["n"] };
    const grammar = g(req("auto"), false, { schema, param: "response_format.json_schema.schema" });
    expect(grammar.matches('{"response": {"n": 3}}')).toBe(true);
    expect(grammar.matches('{"response": "3"}')).toBe(false);
    expect(grammar.matches(`{"tool_call": ${WEATHER}}`)).toBe(true);
  });

  it("is the schema llama.cpp builds, one call alone and several as anyOf", () => {
    const one = [TOOLS[0]!];
    expect(genericSchema(req("required", one), { parallel: false })).toEqual({
      $defs: { "tool-args-0": TOOLS[0]!.parameters },
      type: "object",
      properties: {
        tool_call: {
          type: "object",
          properties: {
            name: { type: "string", const: "get_weather" },
            arguments: { $ref: "#/$defs/tool-args-0" },
          },
          required: ["name", "arguments"],
        },
      },
      required: ["tool_call"],
    });
    type Obj = { [k: string]: Obj } & { required: string[] };
    const auto = genericSchema(req("auto"), { parallel: true }) as unknown as { anyOf: Obj[] };
    const items = auto.anyOf[0]!.properties!.tool_calls!.items!;
    expect(items.anyOf).toHaveLength(2);
    expect(items.anyOf![1]!.properties!.id).toEqual({ type: "string", minLength: 4 });
    expect(items.anyOf![1]!.required).toEqual(["name", "arguments", "id"]);
    expect(auto.anyOf[1]).toEqual({
      type: "object",
      properties: { response: { type: "string" } },
      required: ["response"],
    });
  });

  it("lets a think block come first when the model is to think", () => {
    const grammar = Grammar.parse(
      genericToolGrammar(req("auto"), {
        parallel: false,
        reasoning: { start: "<think>", end: "</think>", open: false },
      }),
    );
    expect(grammar.matches('<think>\nhm\n</think>\n{"response": "ok"}')).toBe(true);
    expect(grammar.matches('{"response": "ok"}')).toBe(true);
    const open = Grammar.parse(
      genericToolGrammar(req("auto"), {
        parallel: false,
        reasoning: { start: "<think>", end: "</think>", open: true },
      }),
    );
    expect(open.matches('hm</think>{"response": "ok"}')).toBe(true);
    expect(open.matches('{"response": "ok"}')).toBe(false);
  });

  it("refuses a schema it cannot enforce, naming the tool", () => {
    const bad: ToolDef = {
      name: "x",
      parameters: { type: "object", properties: { a: { $ref: "http://far/away" } } },
    };
    let err: unknown;
    try {
      genericToolGrammar(req("auto", [TOOLS[0]!, bad]), { parallel: false });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).param).toBe("tools[1].function.parameters");
    expect((err as ApiError).status).toBe(400);
  });
});
