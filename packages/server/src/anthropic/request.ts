/**
 * Reading an Anthropic Messages request (`POST /v1/messages`, `/v1/messages/count_tokens`) as the
 * chat request it asks for, as llama-server converts one: `system` becomes the system message, content
 * blocks become chat messages (tool_use → tool_calls, tool_result → tool messages), `tools` become
 * function tools, `stop_sequences` become `stop`, `thinking` turns the template's thinking on or off.
 */

import { ApiError, invalidField } from "../errors.js";
import { quote } from "../quote.js";
import { type ChatMessage, chatMessages, Reader, systemMessage } from "./content.js";

type Obj = Record<string, unknown>;

const bad = invalidField;
const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const given = (v: unknown) => v !== undefined && v !== null;

/** What a Messages request asks for. */
export interface AnthropicRequest {
  /** The chat request body it runs as (read by the chat pipeline). */
  readonly chat: Obj;
  /** Fields the request gave that the server does not use (reported, or a 400 under strictApi). */
  readonly ignored: string[];
  /** `thinking.budget_tokens`: the think block's budget in tokens. */
  readonly reasoningBudget: number | undefined;
}

/** llama-server's fields beyond Anthropic's that it reads here too (passed to chat as they are). */
const LLAMA_EXTENSIONS = [
  "seed",
  "min_p",
  "presence_penalty",
  "frequency_penalty",
  "repeat_penalty",
  "chat_template_kwargs",
  "reasoning_format",
  "cache_prompt",
  "grammar",
];

const KNOWN = new Set([
  "model",
  "max_tokens",
  "messages",
  "system",
  "metadata",
  "stop_sequences",
  "stream",
  "temperature",
  "top_p",
  "top_k",
  "tools",
  "tool_choice",
  "thinking",
  "output_config",
  "service_tier",
  ...LLAMA_EXTENSIONS,
]);

/** A chat field's path in a pipeline error → the Messages field it came from. */
export function anthropicParam(param: string): string {
  if (param.startsWith("messages")) return "messages";
  if (param === "stop" || param.startsWith("stop[")) return `stop_sequences${param.slice(4)}`;
  const tool = /^tools\[(\d+)\]\.function(\.parameters)?(\..*)?$/.exec(param);
  if (tool) return `tools[${tool[1]}]${tool[2] ? ".input_schema" : ""}${tool[3] ?? ""}`;
  if (param.startsWith("tool_choice.function")) return `tool_choice${param.slice(20)}`;
  if (param.startsWith("response_format.json_schema"))
    return `output_config.format${param.slice("response_format.json_schema".length)}`;
  if (param.startsWith("response_format")) return "output_config.format";
  return param;
}

function chatTools(v: unknown, r: Reader): Obj[] | undefined {
  if (!given(v)) return undefined;
  if (!Array.isArray(v)) throw bad("tools", "must be an array of {name, description, input_schema}");
  return v.map((t, i) => {
    const w = `tools[${i}]`;
    if (!isObject(t)) throw bad(w, "must be a tool object");
    if (given(t.type) && t.type !== "custom")
      throw bad(
        `${w}.type`,
        `server tools are not run by this server, got ${quote(t.type)}`,
        "unsupported_parameter",
      );
    r.keys(t, ["type", "name", "description", "input_schema", "cache_control", "strict"], w);
    if (t.input_schema === undefined)
      throw bad(
        `${w}.input_schema`,
        "is required (a JSON Schema of the input)",
        "missing_required_parameter",
      );
    // (in OpenAI's order: templates write the tools out as JSON)
    const fn: Obj = { name: t.name };
    if (given(t.description)) fn.description = t.description;
    fn.parameters = t.input_schema;
    if (given(t.strict)) fn.strict = t.strict;
    return { type: "function", function: fn };
  });
}

/** `tool_choice` → chat's tool_choice and parallel_tool_calls. */
function chatToolChoice(v: unknown, hasTools: boolean, r: Reader): Obj {
  if (!given(v)) return {};
  if (!isObject(v)) throw bad("tool_choice", 'must be an object {"type": "auto" | "any" | "tool" | "none"}');
  r.keys(v, ["type", "name", "disable_parallel_tool_use"], "tool_choice");
  const dp = v.disable_parallel_tool_use;
  if (given(dp) && typeof dp !== "boolean")
    throw bad("tool_choice.disable_parallel_tool_use", "must be a boolean");
  if (v.type === "none" || (v.type === "auto" && !hasTools)) return {};
  if (!hasTools)
    throw bad("tool_choice", `${quote(v.type)} asks for a tool call, but the request has no tools`);
  const parallel = given(dp) ? { parallel_tool_calls: !dp } : {};
  if (v.type === "auto") return { tool_choice: "auto", ...parallel };
  if (v.type === "any") return { tool_choice: "required", ...parallel };
  if (v.type === "tool") {
    if (typeof v.name !== "string") throw bad("tool_choice.name", "must be the name of one of the tools");
    return { tool_choice: { type: "function", function: { name: v.name } }, ...parallel };
  }
  throw bad("tool_choice.type", `must be "auto", "any", "tool" or "none", got ${quote(v.type)}`);
}

/** `thinking` → the template's enable_thinking, and the block's budget. */
function thinking(v: unknown, r: Reader): { enable?: boolean; budget?: number } {
  if (!given(v)) return {};
  if (!isObject(v)) throw bad("thinking", "must be an object with a type");
  r.keys(v, ["type", "budget_tokens", "display"], "thinking");
  if (given(v.display) && v.display !== "summarized") {
    if (v.display !== "omitted")
      throw bad("thinking.display", `must be "summarized" or "omitted", got ${quote(v.display)}`);
    r.noEffect("thinking.display"); // (the thinking comes back whole)
  }
  if (v.type === "disabled") return { enable: false };
  if (v.type === "adaptive") return { enable: true };
  if (v.type !== "enabled")
    throw bad("thinking.type", `must be "enabled", "adaptive" or "disabled", got ${quote(v.type)}`);
  const b = v.budget_tokens;
  if (!(typeof b === "number" && Number.isSafeInteger(b) && b >= 1))
    throw bad(
      "thinking.budget_tokens",
      `must be an integer >= 1, got ${quote(b)}`,
      b === undefined ? "missing_required_parameter" : "invalid_value",
    );
  return { enable: true, budget: b };
}

/** `output_config` → chat's response_format (its effort has no effect here). */
function outputFormat(v: unknown, r: Reader): unknown {
  if (!given(v)) return undefined;
  if (!isObject(v)) throw bad("output_config", "must be an object {format, effort}");
  r.keys(v, ["format", "effort"], "output_config");
  if (given(v.effort)) r.noEffect("output_config.effort");
  const f = v.format;
  if (!given(f)) return undefined;
  if (!isObject(f) || f.type !== "json_schema")
    throw bad("output_config.format", 'must be {"type": "json_schema", "schema": {...}}');
  if (!isObject(f.schema)) throw bad("output_config.format.schema", "must be a JSON Schema (an object)");
  return { type: "json_schema", json_schema: { name: "output", schema: f.schema } };
}

function checkRange(body: Obj, key: string, min: number, max: number, integer = false): void {
  const v = body[key];
  if (!given(v)) return;
  if (typeof v !== "number" || !Number.isFinite(v) || (integer && !Number.isInteger(v)) || v < min || v > max)
    throw bad(key, `must be ${integer ? "an integer" : "a number"} in [${min}, ${max}], got ${quote(v)}`);
}

/**
 * Reads a Messages request body; every field used, refused by name, or reported as ignored. `count`:
 * a count_tokens request (max_tokens not required; what only shapes the answer does not count).
 */
export function parseAnthropic(raw: unknown, strict: boolean, count = false): AnthropicRequest {
  if (!isObject(raw))
    throw new ApiError(
      400,
      "the request body must be a JSON object",
      "invalid_request_error",
      null,
      "invalid_body",
    );
  const body = raw;
  const r = new Reader(strict);
  r.keys(body, [...KNOWN], "");
  if (given(body.model) && typeof body.model !== "string") throw bad("model", "must be a string");
  const mt = body.max_tokens;
  if (!count && mt === undefined) throw bad("max_tokens", "is required", "missing_required_parameter");
  if (given(mt) && !(typeof mt === "number" && Number.isSafeInteger(mt) && mt >= 1))
    throw bad("max_tokens", `must be an integer >= 1, got ${quote(mt)}`);
  checkRange(body, "temperature", 0, 1);
  checkRange(body, "top_p", 0, 1);
  checkRange(body, "top_k", 0, 2 ** 31 - 1, true);
  if (given(body.stream) && typeof body.stream !== "boolean") throw bad("stream", "must be a boolean");
  if (given(body.metadata)) {
    if (!isObject(body.metadata)) throw bad("metadata", "must be an object {user_id}");
    r.keys(body.metadata, ["user_id"], "metadata");
  }
  const stop = body.stop_sequences;
  if (given(stop) && (!Array.isArray(stop) || stop.some((x) => typeof x !== "string" || x === "")))
    throw bad("stop_sequences", "must be an array of non-empty strings");
  // (an empty array is taken, as llama-server takes it: the prompt is the generation prompt after the system)
  if (!Array.isArray(body.messages))
    throw bad(
      "messages",
      "must be an array of messages",
      body.messages === undefined ? "missing_required_parameter" : "invalid_value",
    );
  const messages: ChatMessage[] = [];
  const sys = systemMessage(body.system, r);
  if (sys) messages.push(sys);
  body.messages.forEach((m, i) => {
    messages.push(...chatMessages(m, i, r));
  });
  const tools = chatTools(body.tools, r);
  const hasTools = tools !== undefined && tools.length > 0;
  const choice = chatToolChoice(body.tool_choice, hasTools, r);
  const think = thinking(body.thinking, r);
  const format = outputFormat(body.output_config, r);

  const chat: Obj = { messages };
  const pass = (from: string, to = from) => {
    if (given(body[from])) chat[to] = body[from];
  };
  pass("model");
  pass("temperature");
  pass("top_p");
  pass("top_k");
  pass("stop_sequences", "stop");
  for (const k of LLAMA_EXTENSIONS) pass(k);
  if (!count) {
    pass("max_tokens");
    pass("stream");
  }
  if (hasTools) Object.assign(chat, { tools, ...choice });
  if (format !== undefined) chat.response_format = format;
  if (think.enable !== undefined) {
    const kw = body.chat_template_kwargs;
    if (given(kw) && !isObject(kw))
      throw bad("chat_template_kwargs", "must be an object of template variables");
    if (isObject(kw) && given(kw.enable_thinking) && kw.enable_thinking !== think.enable)
      throw bad("thinking", "and chat_template_kwargs.enable_thinking disagree; give one of them");
    chat.chat_template_kwargs = { ...(isObject(kw) ? kw : {}), enable_thinking: think.enable };
  }
  return { chat, ignored: r.ignored, reasoningBudget: think.budget };
}
