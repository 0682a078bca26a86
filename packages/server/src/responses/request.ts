/**
 * Reading an OpenAI Responses request (`POST /v1/responses`) as the chat request it asks for, as
 * llama-server converts one: `instructions` and `input` become messages, flat function tools become
 * chat tools, `text.format` becomes `response_format`, `max_output_tokens` becomes `max_tokens`.
 * The server keeps no responses: `previous_response_id`, `conversation`, `store: true` and
 * `background: true` are refused by name.
 */

import { ApiError, invalidField } from "../errors.js";
import { quote } from "../quote.js";
import { type ChatMessage, inputMessages } from "./input.js";

type Obj = Record<string, unknown>;

const bad = invalidField;
const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const given = (v: unknown) => v !== undefined && v !== null;

/** What a Responses request asks for. */
export interface ResponsesRequest {
  /** The chat request body it runs as (read by the chat pipeline). */
  readonly chat: Obj;
  /** Fields the request gave that the server does not use (reported, or a 400 under strictApi). */
  readonly ignored: string[];
  /** The request's fields the response object repeats (Response's own names). */
  readonly echo: Obj;
}

/** llama-server's fields beyond OpenAI's Responses that it reads here too (passed to chat as they are). */
export const LLAMA_EXTENSIONS = [
  "seed",
  "top_k",
  "min_p",
  "stop",
  "presence_penalty",
  "frequency_penalty",
  "repeat_penalty",
  "chat_template_kwargs",
  "reasoning_format",
  "cache_prompt",
  "grammar",
  "timings_per_token",
  "return_progress",
] as const;

/** Fields read here (OpenAI's Responses fields and the extensions). */
const KNOWN = new Set([
  "model",
  "input",
  "instructions",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "text",
  "max_output_tokens",
  "temperature",
  "top_p",
  "stream",
  "stream_options",
  "store",
  "previous_response_id",
  "conversation",
  "background",
  "prompt",
  "include",
  "top_logprobs",
  "reasoning",
  "truncation",
  "max_tool_calls",
  "metadata",
  "user",
  "safety_identifier",
  "prompt_cache_key",
  "service_tier",
  ...LLAMA_EXTENSIONS,
]);

/** A chat field's path in a pipeline error → the Responses field it came from. */
export function responsesParam(param: string): string {
  if (param.startsWith("messages")) return "input";
  if (param === "max_tokens") return "max_output_tokens";
  const tool = /^tools\[(\d+)\]\.function(\..*)?$/.exec(param);
  if (tool) return `tools[${tool[1]}]${tool[2] ?? ""}`;
  if (param.startsWith("tool_choice.function")) return `tool_choice${param.slice(20)}`;
  if (param.startsWith("response_format.json_schema"))
    return `text.format${param.slice("response_format.json_schema".length)}`;
  if (param.startsWith("response_format")) return `text.format${param.slice("response_format".length)}`;
  return param;
}

/** `tools`: flat function tools → chat tools; other tool types are refused by name. */
function chatTools(tools: unknown): Obj[] | undefined {
  if (!given(tools)) return undefined;
  if (!Array.isArray(tools)) throw bad("tools", 'must be an array of {"type": "function", "name", ...}');
  return tools.map((t, i) => {
    if (!isObject(t)) throw bad(`tools[${i}]`, "must be a tool object");
    if (t.type !== "function")
      throw bad(
        `tools[${i}].type`,
        `this server runs function tools only, got ${quote(t.type)}`,
        "unsupported_parameter",
      );
    const { type: _type, ...fn } = t;
    return { type: "function", function: fn };
  });
}

/** `tool_choice`: OpenAI's Responses forms → chat's. */
function chatToolChoice(v: unknown): unknown {
  if (!given(v) || typeof v === "string") return v;
  if (!isObject(v))
    throw bad("tool_choice", 'must be "none", "auto", "required" or {"type": "function", "name"}');
  if (v.type !== "function")
    throw bad(
      "tool_choice.type",
      `this server forces function tools only, got ${quote(v.type)}`,
      "unsupported_parameter",
    );
  for (const k of Object.keys(v))
    if (k !== "type" && k !== "name") throw bad(`tool_choice.${k}`, "unknown field");
  return { type: "function", function: { name: v.name } };
}

/** `text`: its format → chat's response_format. */
function responseFormat(text: unknown, strict: boolean, ignored: string[]): { format: Obj; chat: unknown } {
  if (!given(text)) return { format: { type: "text" }, chat: undefined };
  if (!isObject(text)) throw bad("text", "must be an object {format, verbosity}");
  for (const k of Object.keys(text)) {
    if (k === "format") continue;
    // (verbosity: how long the answer should be, which only a model trained for it can follow)
    if (k === "verbosity" && (text.verbosity === null || text.verbosity === undefined)) continue;
    if (k !== "verbosity") throw bad(`text.${k}`, "unknown field; known: format, verbosity");
    if (strict)
      throw bad("text.verbosity", "has no effect on this server (--strict-api)", "unsupported_parameter");
    ignored.push("text.verbosity");
  }
  const f = text.format;
  if (!given(f)) return { format: { type: "text" }, chat: undefined };
  if (!isObject(f)) throw bad("text.format", "must be an object with a type");
  if (f.type === "text" || f.type === "json_object") return { format: f, chat: { type: f.type } };
  if (f.type !== "json_schema")
    throw bad("text.format.type", `must be "text", "json_object" or "json_schema", got ${quote(f.type)}`);
  for (const k of Object.keys(f))
    if (!["type", "name", "schema", "strict", "description"].includes(k))
      throw bad(`text.format.${k}`, "unknown field; known: type, name, schema, strict, description");
  if (!isObject(f.schema))
    throw bad(
      "text.format.schema",
      "must be a JSON Schema (an object)",
      f.schema === undefined ? "missing_required_parameter" : "invalid_value",
    );
  if (f.name !== undefined && typeof f.name !== "string") throw bad("text.format.name", "must be a string");
  return {
    format: f,
    chat: { type: "json_schema", json_schema: { name: f.name ?? "response", schema: f.schema } },
  };
}

/** Reads a Responses request body; every field used, refused by name, or reported as ignored. */
export function parseResponses(raw: unknown, strict: boolean): ResponsesRequest {
  if (!isObject(raw))
    throw new ApiError(
      400,
      "the request body must be a JSON object",
      "invalid_request_error",
      null,
      "invalid_body",
    );
  const body = raw;
  const ignored: string[] = [];
  const noEffect = (key: string) => {
    if (strict) throw bad(key, "has no effect on this server (--strict-api)", "unsupported_parameter");
    ignored.push(key);
  };
  for (const key of Object.keys(body)) {
    if (KNOWN.has(key)) continue;
    if (strict) throw bad(key, "unknown field (--strict-api)", "unknown_parameter");
    ignored.push(key);
  }
  // The server is stateless: what needs a stored response is refused.
  if (given(body.previous_response_id))
    throw bad(
      "previous_response_id",
      "this server keeps no responses; send the whole conversation in input (and store: false)",
      "unsupported_parameter",
    );
  if (given(body.conversation))
    throw bad(
      "conversation",
      "this server keeps no conversations; send the whole conversation in input",
      "unsupported_parameter",
    );
  if (body.store !== undefined && body.store !== null && typeof body.store !== "boolean")
    throw bad("store", "must be a boolean");
  if (body.store === true)
    throw bad(
      "store",
      "this server keeps no responses; send store: false (or leave it out)",
      "unsupported_parameter",
    );
  if (body.background === true)
    throw bad("background", "this server answers in the foreground only", "unsupported_parameter");
  if (given(body.prompt))
    throw bad(
      "prompt",
      "stored prompt templates are not supported; send instructions and input",
      "unsupported_parameter",
    );
  if (given(body.top_logprobs) && body.top_logprobs !== 0)
    throw bad(
      "top_logprobs",
      "log-probabilities are not supported on /v1/responses yet",
      "unsupported_parameter",
    );
  if (given(body.include)) {
    if (!Array.isArray(body.include) || body.include.some((x) => typeof x !== "string"))
      throw bad("include", "must be an array of strings");
    if (body.include.includes("message.output_text.logprobs"))
      throw bad(
        "include",
        "message.output_text.logprobs: log-probabilities are not supported on /v1/responses yet",
        "unsupported_parameter",
      );
    // (the thinking comes back as plain reasoning text: nothing is encrypted or held back)
    if (body.include.length > 0) noEffect("include");
  }
  if (given(body.reasoning)) {
    if (!isObject(body.reasoning)) throw bad("reasoning", "must be an object");
    if (Object.values(body.reasoning).some(given)) noEffect("reasoning");
  }
  if (given(body.truncation) && body.truncation !== "disabled") {
    if (body.truncation !== "auto")
      throw bad("truncation", `must be "auto" or "disabled", got ${quote(body.truncation)}`);
    noEffect("truncation");
  }
  if (given(body.max_tool_calls)) noEffect("max_tool_calls");
  if (given(body.service_tier) && body.service_tier !== "auto" && body.service_tier !== "default")
    noEffect("service_tier");
  for (const k of ["user", "safety_identifier", "prompt_cache_key", "instructions"])
    if (given(body[k]) && typeof body[k] !== "string") throw bad(k, "must be a string");
  if (given(body.metadata) && !isObject(body.metadata)) throw bad("metadata", "must be an object of strings");
  if (given(body.stream_options)) {
    if (!isObject(body.stream_options)) throw bad("stream_options", "must be an object");
    // (include_obfuscation: there are no obfuscation fields to leave out)
    for (const k of Object.keys(body.stream_options))
      if (k !== "include_obfuscation")
        throw bad(`stream_options.${k}`, "unknown field; known: include_obfuscation");
  }
  const mot = body.max_output_tokens;
  if (given(mot) && !(typeof mot === "number" && Number.isInteger(mot) && mot >= 1))
    throw bad("max_output_tokens", `must be an integer >= 1, got ${quote(mot)}`);

  const messages: ChatMessage[] = [];
  if (typeof body.instructions === "string") messages.push({ role: "system", content: body.instructions });
  messages.push(...inputMessages(body.input, strict, ignored));
  const { format, chat: responseFmt } = responseFormat(body.text, strict, ignored);
  const tools = chatTools(body.tools);
  const chat: Obj = { messages };
  const pass = (from: string, to = from) => {
    if (given(body[from])) chat[to] = body[from];
  };
  pass("model");
  pass("stream");
  pass("temperature");
  pass("top_p");
  pass("max_output_tokens", "max_tokens");
  for (const k of LLAMA_EXTENSIONS) pass(k);
  const choice = chatToolChoice(body.tool_choice);
  if (tools && tools.length > 0) {
    chat.tools = tools;
    if (given(choice)) chat.tool_choice = choice;
    pass("parallel_tool_calls");
  } else if (given(choice) && choice !== "auto" && choice !== "none")
    // (without tools, "auto" and "none" mean the same as leaving tool_choice out, as OpenAI takes them)
    throw bad("tool_choice", "asks for a tool call, but the request has no tools");
  else if (given(body.parallel_tool_calls) && typeof body.parallel_tool_calls !== "boolean")
    throw bad("parallel_tool_calls", "must be a boolean");
  if (responseFmt !== undefined) chat.response_format = responseFmt;
  return {
    chat,
    ignored,
    echo: {
      instructions: body.instructions ?? null,
      max_output_tokens: mot ?? null,
      metadata: body.metadata ?? {},
      parallel_tool_calls: body.parallel_tool_calls ?? true,
      temperature: body.temperature ?? null,
      text: { format },
      tool_choice: body.tool_choice ?? "auto",
      tools: Array.isArray(body.tools) ? body.tools : [],
      top_p: body.top_p ?? null,
      user: body.user ?? null,
    },
  };
}
