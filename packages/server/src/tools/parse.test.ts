import { describe, expect, it } from "vitest";
import { ApiError } from "../errors.js";
import { parseMessageToolFields, parseTools } from "./parse.js";

const fn = (name: string, extra: Record<string, unknown> = {}) => ({
  type: "function",
  function: { name, ...extra },
});

/** The ApiError `f` throws: its status, param and code. */
function refusal(f: () => unknown): { status: number; param: string | null; code: string | null } {
  try {
    f();
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    return { status: e.status, param: e.param, code: e.code };
  }
  throw new Error("did not throw");
}

const invalid = (param: string) => ({ status: 400, param, code: "invalid_value" });
const missing = (param: string) => ({ status: 400, param, code: "missing_required_parameter" });

describe("parseTools", () => {
  it("returns undefined without tools", () => {
    expect(parseTools({})).toBeUndefined();
    expect(parseTools({ tools: null })).toBeUndefined();
    expect(parseTools({ tools: [] })).toBeUndefined();
  });

  it("reads tools with defaults", () => {
    const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    const tools = [
      fn("get_weather", { description: "Weather", parameters: schema, strict: true }),
      fn("now"),
    ];
    expect(parseTools({ tools })).toEqual({
      tools: [
        { name: "get_weather", description: "Weather", parameters: schema, strict: true },
        { name: "now", parameters: { type: "object", properties: {} } },
      ],
      choice: "auto",
      parallel: true,
      templateTools: tools,
    });
  });

  it("reads tool_choice and parallel_tool_calls", () => {
    const tools = [fn("a"), fn("b")];
    for (const c of ["none", "auto", "required"] as const)
      expect(parseTools({ tools, tool_choice: c })?.choice).toBe(c);
    expect(parseTools({ tools, tool_choice: { type: "function", function: { name: "b" } } })?.choice).toEqual(
      {
        name: "b",
      },
    );
    expect(parseTools({ tools, parallel_tool_calls: false })?.parallel).toBe(false);
  });

  it("refuses bad tools naming the field", () => {
    const cases: [unknown, ReturnType<typeof invalid>][] = [
      [{ tools: {} }, invalid("tools")],
      [{ tools: [fn("a"), 3] }, invalid("tools[1]")],
      [{ tools: [{ function: { name: "a" } }] }, missing("tools[0].type")],
      [{ tools: [{ type: "retrieval", function: { name: "a" } }] }, invalid("tools[0].type")],
      [{ tools: [{ type: "function" }] }, missing("tools[0].function")],
      [{ tools: [fn("a"), { type: "function", function: {} }] }, missing("tools[1].function.name")],
      [{ tools: [fn("a"), fn("b c")] }, invalid("tools[1].function.name")],
      [{ tools: [fn("x".repeat(65))] }, invalid("tools[0].function.name")],
      [{ tools: [fn("a", { description: 1 })] }, invalid("tools[0].function.description")],
      [{ tools: [fn("a", { parameters: "{}" })] }, invalid("tools[0].function.parameters")],
      [
        { tools: [fn("a", { parameters: { type: "string" } })] },
        invalid("tools[0].function.parameters.type"),
      ],
      [{ tools: [fn("a", { strict: "yes" })] }, invalid("tools[0].function.strict")],
      [{ tools: [fn("a"), fn("b"), fn("a")] }, invalid("tools[2].function.name")],
      [{ tools: [fn("a")], parallel_tool_calls: "no" }, invalid("parallel_tool_calls")],
    ];
    for (const [body, want] of cases)
      expect(
        refusal(() => parseTools(body as never)),
        JSON.stringify(body),
      ).toEqual(want);
    expect(refusal(() => parseTools({ tools: [fn("a", { parameter: {} })] }))).toEqual({
      status: 400,
      param: "tools[0].function.parameter",
      code: "unknown_parameter",
    });
  });

  it("refuses bad tool_choice naming the field", () => {
    const tools = [fn("a")];
    const cases: [unknown, ReturnType<typeof invalid>][] = [
      [{ tool_choice: "auto" }, invalid("tool_choice")],
      [{ tools: [], tool_choice: "none" }, invalid("tool_choice")],
      [{ parallel_tool_calls: false }, invalid("parallel_tool_calls")],
      [{ tools, tool_choice: "any" }, invalid("tool_choice")],
      [{ tools, tool_choice: 1 }, invalid("tool_choice")],
      [{ tools, tool_choice: { function: { name: "a" } } }, missing("tool_choice.type")],
      [{ tools, tool_choice: { type: "function" } }, missing("tool_choice.function")],
      [{ tools, tool_choice: { type: "function", function: {} } }, missing("tool_choice.function.name")],
      [
        { tools, tool_choice: { type: "function", function: { name: "b" } } },
        invalid("tool_choice.function.name"),
      ],
    ];
    for (const [body, want] of cases)
      expect(
        refusal(() => parseTools(body as never)),
        JSON.stringify(body),
      ).toEqual(want);
  });
});

describe("parseMessageToolFields", () => {
  const call = (args: string, id = "call_1") => ({
    id,
    type: "function",
    function: { name: "f", arguments: args },
  });

  it("returns the template shape, arguments parsed when they are a JSON object", () => {
    expect(
      parseMessageToolFields(
        { role: "assistant", content: null, tool_calls: [call('{"x": 1}'), call("[1]", "c2")] },
        3,
      ),
    ).toEqual({
      tool_calls: [
        { id: "call_1", type: "function", function: { name: "f", arguments: { x: 1 } } },
        { id: "c2", type: "function", function: { name: "f", arguments: "[1]" } },
      ],
    });
    expect(parseMessageToolFields({ role: "tool", content: "22 C", tool_call_id: "call_1" }, 4)).toEqual({
      tool_call_id: "call_1",
    });
    const none = parseMessageToolFields({ role: "assistant", content: "hi", tool_calls: [] }, 0);
    expect("tool_calls" in none).toBe(false);
    expect(parseMessageToolFields({ role: "user", content: "hi" }, 0)).toEqual({});
  });

  it("refuses bad fields naming messages[i]…", () => {
    const cases: [Record<string, unknown>, ReturnType<typeof invalid>][] = [
      [{ role: "user", tool_calls: [call("{}")] }, invalid("messages[2].tool_calls")],
      [{ role: "assistant", tool_calls: {} }, invalid("messages[2].tool_calls")],
      [{ role: "assistant", tool_calls: [call("{}"), 1] }, invalid("messages[2].tool_calls[1]")],
      [
        { role: "assistant", tool_calls: [{ type: "function", function: { name: "f", arguments: "{}" } }] },
        missing("messages[2].tool_calls[0].id"),
      ],
      [
        { role: "assistant", tool_calls: [{ ...call("{}"), id: 5 }] },
        invalid("messages[2].tool_calls[0].id"),
      ],
      [
        { role: "assistant", tool_calls: [{ ...call("{}"), type: "x" }] },
        invalid("messages[2].tool_calls[0].type"),
      ],
      [
        { role: "assistant", tool_calls: [{ id: "a", type: "function" }] },
        missing("messages[2].tool_calls[0].function"),
      ],
      [
        { role: "assistant", tool_calls: [{ id: "a", function: { arguments: "{}" } }] },
        missing("messages[2].tool_calls[0].function.name"),
      ],
      [
        { role: "assistant", tool_calls: [{ id: "a", function: { name: "f" } }] },
        missing("messages[2].tool_calls[0].function.arguments"),
      ],
      [
        { role: "assistant", tool_calls: [{ id: "a", function: { name: "f", arguments: { x: 1 } } }] },
        invalid("messages[2].tool_calls[0].function.arguments"),
      ],
      [{ role: "tool", content: "x" }, missing("messages[2].tool_call_id")],
      [{ role: "tool", content: "x", tool_call_id: 7 }, invalid("messages[2].tool_call_id")],
      [{ role: "user", content: "x", tool_call_id: "a" }, invalid("messages[2].tool_call_id")],
    ];
    for (const [msg, want] of cases)
      expect(
        refusal(() => parseMessageToolFields(msg, 2)),
        JSON.stringify(msg),
      ).toEqual(want);
  });
});
