/** Checking the tool fields of an OpenAI chat request: `tools`, `tool_choice`, `parallel_tool_calls`, and a message's `tool_calls` / `tool_call_id`. */

import { invalidField } from "../errors.js";
import { quote } from "../quote.js";

/** One function the model may call. */
export interface ToolDef {
  name: string;
  description?: string;
  /** JSON Schema of the arguments object. Default `{type: "object", properties: {}}`. */
  parameters: object;
  strict?: boolean;
}

/** `"none"`: never call; `"auto"`: the model decides; `"required"`: at least one call; `{name}`: a call of that function. */
export type ToolChoice = "none" | "auto" | "required" | { name: string };

export interface ToolsRequest {
  tools: ToolDef[];
  /** Default `"auto"`. */
  choice: ToolChoice;
  /** `parallel_tool_calls`: several calls in one message are allowed. Default true. */
  parallel: boolean;
  /** The raw OpenAI tools array, for the template's `tools` variable. */
  templateTools: unknown[];
}

/** A tool call as chat templates read it (transformers' shape): `arguments` an object when it was valid JSON for one. */
export interface TemplateToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: Record<string, unknown> | string };
}

type Obj = Record<string, unknown>;

const bad = invalidField;

const missing = (param: string, what: string) =>
  bad(param, `is required (${what})`, "missing_required_parameter");

const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** OpenAI's rule for function names. */
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

function checkKeys(o: Obj, known: readonly string[], path: string): void {
  for (const k of Object.keys(o))
    if (!known.includes(k))
      throw bad(`${path}.${k}`, `unknown field; known: ${known.join(", ")}`, "unknown_parameter");
}

function parseToolDef(raw: unknown, i: number): ToolDef {
  const path = `tools[${i}]`;
  if (!isObject(raw)) throw bad(path, 'must be an object {"type": "function", "function": {...}}');
  checkKeys(raw, ["type", "function"], path);
  if (raw.type === undefined) throw missing(`${path}.type`, '"function"');
  if (raw.type !== "function") throw bad(`${path}.type`, `must be "function", got ${quote(raw.type)}`);
  const fn = raw.function;
  if (fn === undefined) throw missing(`${path}.function`, "an object with name, description, parameters");
  if (!isObject(fn)) throw bad(`${path}.function`, "must be an object with name, description, parameters");
  checkKeys(fn, ["name", "description", "parameters", "strict"], `${path}.function`);
  if (fn.name === undefined) throw missing(`${path}.function.name`, "the function's name");
  if (typeof fn.name !== "string" || !NAME.test(fn.name))
    throw bad(`${path}.function.name`, `must be 1 to 64 of a-z, A-Z, 0-9, _ and -, got ${quote(fn.name)}`);
  const def: ToolDef = { name: fn.name, parameters: { type: "object", properties: {} } };
  if (fn.description !== undefined && fn.description !== null) {
    if (typeof fn.description !== "string") throw bad(`${path}.function.description`, "must be a string");
    def.description = fn.description;
  }
  if (fn.parameters !== undefined && fn.parameters !== null) {
    const p = fn.parameters;
    if (!isObject(p)) throw bad(`${path}.function.parameters`, "must be a JSON Schema object");
    if (p.type !== undefined && p.type !== "object")
      throw bad(
        `${path}.function.parameters.type`,
        `must be "object" (arguments are an object), got ${quote(p.type)}`,
      );
    def.parameters = p;
  }
  if (fn.strict !== undefined && fn.strict !== null) {
    if (typeof fn.strict !== "boolean") throw bad(`${path}.function.strict`, "must be a boolean");
    def.strict = fn.strict;
  }
  return def;
}

function parseChoice(raw: unknown, tools: readonly ToolDef[]): ToolChoice {
  if (raw === undefined || raw === null) return "auto";
  if (raw === "none" || raw === "auto" || raw === "required") return raw;
  if (typeof raw === "string")
    throw bad("tool_choice", `must be "none", "auto", "required" or an object, got ${quote(raw)}`);
  if (!isObject(raw))
    throw bad(
      "tool_choice",
      'must be "none", "auto", "required" or {"type": "function", "function": {"name": …}}',
    );
  checkKeys(raw, ["type", "function"], "tool_choice");
  if (raw.type === undefined) throw missing("tool_choice.type", '"function"');
  if (raw.type !== "function") throw bad("tool_choice.type", `must be "function", got ${quote(raw.type)}`);
  if (raw.function === undefined) throw missing("tool_choice.function", '{"name": …}');
  if (!isObject(raw.function)) throw bad("tool_choice.function", 'must be an object {"name": …}');
  checkKeys(raw.function, ["name"], "tool_choice.function");
  const name = raw.function.name;
  if (name === undefined) throw missing("tool_choice.function.name", "one of the tools' names");
  if (typeof name !== "string") throw bad("tool_choice.function.name", "must be a string");
  if (!tools.some((t) => t.name === name))
    throw bad(
      "tool_choice.function.name",
      `names no tool: ${quote(name)}; tools: ${tools.map((t) => t.name).join(", ")}`,
    );
  return { name };
}

/**
 * Validates body.tools / body.tool_choice / body.parallel_tool_calls of a chat request. Returns undefined
 * when no tools are given (absent, null or `[]`); `tool_choice` or `parallel_tool_calls` without tools is a
 * 400. Every problem is an ApiError 400 whose `param` names the field path (`tools[1].function.name`).
 */
export function parseTools(body: Record<string, unknown>): ToolsRequest | undefined {
  const raw = body.tools;
  if (raw !== undefined && raw !== null && !Array.isArray(raw))
    throw bad("tools", 'must be an array of {"type": "function", "function": {...}}');
  if (raw === undefined || raw === null || raw.length === 0) {
    for (const key of ["tool_choice", "parallel_tool_calls"])
      if (body[key] !== undefined && body[key] !== null)
        throw bad(key, "is only allowed when tools are given");
    return undefined;
  }
  const tools = raw.map(parseToolDef);
  const seen = new Map<string, number>();
  tools.forEach((t, i) => {
    const first = seen.get(t.name);
    if (first !== undefined)
      throw bad(`tools[${i}].function.name`, `${quote(t.name)} is already the name of tools[${first}]`);
    seen.set(t.name, i);
  });
  const parallel = body.parallel_tool_calls ?? true;
  if (typeof parallel !== "boolean") throw bad("parallel_tool_calls", "must be a boolean");
  return { tools, choice: parseChoice(body.tool_choice, tools), parallel, templateTools: raw };
}

/**
 * Validates an incoming message's `tool_calls` (role assistant) and `tool_call_id` (role tool), returning
 * them in the shape chat templates expect. `arguments` is parsed to an object when it is JSON for one (as
 * llama.cpp does: Llama 3 templates `tojson` it), and kept as the string otherwise. Absent fields are
 * absent from the result (templates test `'tool_calls' in message`). Throws ApiError 400 naming
 * `messages[i].tool_calls[j]...`.
 */
export function parseMessageToolFields(
  msg: Record<string, unknown>,
  i: number,
): { tool_calls?: TemplateToolCall[]; tool_call_id?: string } {
  const out: { tool_calls?: TemplateToolCall[]; tool_call_id?: string } = {};
  const path = `messages[${i}]`;
  if (msg.tool_calls !== undefined && msg.tool_calls !== null) {
    if (msg.role !== "assistant")
      throw bad(`${path}.tool_calls`, `is only allowed on assistant messages, not ${quote(msg.role)}`);
    if (!Array.isArray(msg.tool_calls)) throw bad(`${path}.tool_calls`, "must be an array of tool calls");
    const calls = msg.tool_calls.map((c, j) => parseCall(c, `${path}.tool_calls[${j}]`));
    if (calls.length > 0) out.tool_calls = calls;
  }
  if (msg.role === "tool") {
    if (msg.tool_call_id === undefined || msg.tool_call_id === null)
      throw missing(`${path}.tool_call_id`, "the id of the call this message answers");
    if (typeof msg.tool_call_id !== "string") throw bad(`${path}.tool_call_id`, "must be a string");
    out.tool_call_id = msg.tool_call_id;
  } else if (msg.tool_call_id !== undefined && msg.tool_call_id !== null) {
    throw bad(`${path}.tool_call_id`, `is only allowed on tool messages, not ${quote(msg.role)}`);
  }
  return out;
}

function parseCall(raw: unknown, path: string): TemplateToolCall {
  if (!isObject(raw)) throw bad(path, 'must be an object {"id", "type": "function", "function": {...}}');
  checkKeys(raw, ["id", "type", "function"], path);
  if (raw.id === undefined) throw missing(`${path}.id`, "the call's id");
  if (typeof raw.id !== "string") throw bad(`${path}.id`, "must be a string");
  if (raw.type !== undefined && raw.type !== "function")
    throw bad(`${path}.type`, `must be "function", got ${quote(raw.type)}`);
  const fn = raw.function;
  if (fn === undefined) throw missing(`${path}.function`, "an object with name and arguments");
  if (!isObject(fn)) throw bad(`${path}.function`, "must be an object with name and arguments");
  checkKeys(fn, ["name", "arguments"], `${path}.function`);
  if (fn.name === undefined) throw missing(`${path}.function.name`, "the called function's name");
  if (typeof fn.name !== "string" || fn.name === "")
    throw bad(`${path}.function.name`, "must be a non-empty string");
  if (fn.arguments === undefined) throw missing(`${path}.function.arguments`, "the arguments as JSON text");
  if (typeof fn.arguments !== "string")
    throw bad(`${path}.function.arguments`, "must be a string (JSON text)");
  return {
    id: raw.id,
    type: "function",
    function: { name: fn.name, arguments: argumentsValue(fn.arguments) },
  };
}

/** The arguments object when `text` is JSON for one, else `text` itself. */
function argumentsValue(text: string): Record<string, unknown> | string {
  try {
    const v: unknown = JSON.parse(text);
    return isObject(v) ? v : text;
  } catch {
    return text;
  }
}
