/** Parsing and checking of OpenAI request bodies: every field known, typed and in range. */

import { ApiError, invalidField } from "./errors.js";
import { quote } from "./quote.js";
import { parseMessageToolFields, parseTools, type ToolsRequest } from "./tools/index.js";

const bad = invalidField;

/** A chat message as it reaches the template (text content only in this version). */
export interface ParsedMessage {
  role: string;
  content: string | null;
  name?: string;
  /** Fields the template reads as they are (tool_calls, tool_call_id). */
  [extra: string]: unknown;
}

export type ResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | { type: "json_schema"; schema: unknown; name: string };

/** What both endpoints share. */
export interface ParsedCommon {
  stream: boolean;
  includeUsage: boolean;
  maxTokens: number | undefined;
  temperature: number | undefined;
  topP: number | undefined;
  topK: number | undefined;
  minP: number | undefined;
  seed: number | undefined;
  stop: string[];
  presencePenalty: number | undefined;
  frequencyPenalty: number | undefined;
  repeatPenalty: number | undefined;
  logitBias: Map<number, number> | undefined;
  responseFormat: ResponseFormat;
  /** Choices to generate (OpenAI `n`). */
  n: number;
  /** llama.cpp's `cache_prompt`: reuse a cached prefix (default true). */
  cachePrompt: boolean;
  /** llama.cpp's `grammar`: GBNF text. */
  grammar: string | undefined;
  /** Log-probabilities: undefined = none, else the number of alternatives per token. */
  nProbs: number | undefined;
}

export interface ParsedChat extends ParsedCommon {
  messages: ParsedMessage[];
  /** llama.cpp's `chat_template_kwargs`: extra template variables (e.g. enable_thinking). */
  templateKwargs: Record<string, unknown>;
  /** `tools` / `tool_choice` / `parallel_tool_calls`, when tools are given. */
  tools: ToolsRequest | undefined;
}

export interface ParsedCompletion extends ParsedCommon {
  prompt: string;
}

type Body = Record<string, unknown>;

const COMMON_FIELDS = [
  "model",
  "stream",
  "stream_options",
  "max_tokens",
  "temperature",
  "top_p",
  "top_k",
  "min_p",
  "seed",
  "stop",
  "presence_penalty",
  "frequency_penalty",
  "repeat_penalty",
  "logit_bias",
  "response_format",
  "n",
  "user",
  "cache_prompt",
  "grammar",
];
const CHAT_FIELDS = new Set([
  ...COMMON_FIELDS,
  "messages",
  "max_completion_tokens",
  "logprobs",
  "top_logprobs",
  "chat_template_kwargs",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
]);
const COMPLETION_FIELDS = new Set([...COMMON_FIELDS, "prompt", "echo", "logprobs"]);

/** Fields OpenAI defines that this server does not implement yet: named in the 400. */
const NOT_YET = new Set([
  "suffix",
  "best_of",
  "audio",
  "modalities",
  "prediction",
  "functions",
  "function_call",
]);

function checkObject(body: unknown): Body {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new ApiError(
      400,
      "the request body must be a JSON object",
      "invalid_request_error",
      null,
      "invalid_body",
    );
  return body as Body;
}

function checkKnown(body: Body, known: Set<string>): void {
  for (const key of Object.keys(body)) {
    if (known.has(key)) continue;
    if (NOT_YET.has(key)) throw bad(key, "is not supported by this server yet", "unsupported_parameter");
    throw bad(key, "unknown field", "unknown_parameter");
  }
}

function num(body: Body, key: string, min: number, max: number, integer = false): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v)) throw bad(key, `must be a number, got ${quote(v)}`);
  if (integer && !Number.isInteger(v)) throw bad(key, `must be an integer, got ${v}`);
  if (v < min || v > max) throw bad(key, `must be in [${min}, ${max}], got ${v}`);
  return v;
}

function bool(body: Body, key: string): boolean | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw bad(key, `must be a boolean, got ${quote(v)}`);
  return v;
}

function parseStop(v: unknown): string[] {
  if (v === undefined || v === null) return [];
  if (typeof v === "string") return v === "" ? [] : [v];
  if (!Array.isArray(v)) throw bad("stop", "must be a string or an array of strings");
  if (v.length > 16) throw bad("stop", `at most 16 stop strings, got ${v.length}`);
  return v.map((s, i) => {
    if (typeof s !== "string" || s === "") throw bad(`stop[${i}]`, "must be a non-empty string");
    return s;
  });
}

function parseLogitBias(v: unknown, nVocab: number): Map<number, number> | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object" || Array.isArray(v))
    throw bad("logit_bias", "must be an object of token id → bias");
  const map = new Map<number, number>();
  for (const [k, b] of Object.entries(v as Record<string, unknown>)) {
    const id = Number(k);
    if (!/^\d+$/.test(k) || id >= nVocab)
      throw bad("logit_bias", `key ${quote(k)} is not a token id in [0, ${nVocab})`);
    if (typeof b !== "number" || !Number.isFinite(b) || b < -100 || b > 100)
      throw bad("logit_bias", `bias of token ${quote(k)} must be a number in [-100, 100]`);
    // OpenAI: -100 bans the token, 100 forces it.
    map.set(id, b <= -100 ? Number.NEGATIVE_INFINITY : b);
  }
  return map;
}

function parseResponseFormat(v: unknown): ResponseFormat {
  if (v === undefined || v === null) return { type: "text" };
  if (typeof v !== "object" || Array.isArray(v)) throw bad("response_format", "must be an object");
  const rf = v as Body;
  if (rf.type === "text") return { type: "text" };
  if (rf.type === "json_object") return { type: "json_object" };
  if (rf.type === "json_schema") {
    const js = rf.json_schema;
    if (typeof js !== "object" || js === null || Array.isArray(js))
      throw bad("response_format.json_schema", "must be an object with a schema");
    const o = js as Body;
    if (o.name !== undefined && typeof o.name !== "string")
      throw bad("response_format.json_schema.name", "must be a string");
    const schema = o.schema ?? {};
    if (typeof schema !== "object" && typeof schema !== "boolean")
      throw bad("response_format.json_schema.schema", "must be a JSON Schema (an object)");
    return { type: "json_schema", schema, name: (o.name as string | undefined) ?? "response" };
  }
  throw bad("response_format.type", `must be "text", "json_object" or "json_schema", got ${quote(rf.type)}`);
}

function parseCommon(body: Body, nVocab: number): ParsedCommon {
  if (body.model !== undefined && typeof body.model !== "string") throw bad("model", "must be a string");
  if (body.user !== undefined && typeof body.user !== "string") throw bad("user", "must be a string");
  const n = num(body, "n", 1, MAX_N, true) ?? 1;
  if (body.grammar !== undefined && body.grammar !== null && typeof body.grammar !== "string")
    throw bad("grammar", "must be a GBNF grammar (a string)");
  const grammar = typeof body.grammar === "string" && body.grammar.trim() !== "" ? body.grammar : undefined;
  const so = body.stream_options;
  let includeUsage = false;
  if (so !== undefined && so !== null) {
    if (typeof so !== "object" || Array.isArray(so)) throw bad("stream_options", "must be an object");
    for (const k of Object.keys(so))
      if (k !== "include_usage") throw bad(`stream_options.${k}`, "unknown field");
    includeUsage = bool(so as Body, "include_usage") ?? false;
  }
  return {
    stream: bool(body, "stream") ?? false,
    includeUsage,
    maxTokens: num(body, "max_tokens", 0, 2 ** 31 - 1, true),
    temperature: num(body, "temperature", 0, 2),
    topP: num(body, "top_p", 0, 1),
    topK: num(body, "top_k", 0, 2 ** 31 - 1, true),
    minP: num(body, "min_p", 0, 1),
    seed: num(body, "seed", Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, true),
    stop: parseStop(body.stop),
    presencePenalty: num(body, "presence_penalty", -2, 2),
    frequencyPenalty: num(body, "frequency_penalty", -2, 2),
    repeatPenalty: num(body, "repeat_penalty", 0, 10),
    logitBias: parseLogitBias(body.logit_bias, nVocab),
    responseFormat: parseResponseFormat(body.response_format),
    n,
    cachePrompt: bool(body, "cache_prompt") ?? true,
    grammar,
    nProbs: undefined,
  };
}

/** Most choices one request may ask for. */
export const MAX_N = 16;
/** Most alternatives per token in log-probabilities (OpenAI's limit for chat). */
export const MAX_TOP_LOGPROBS = 20;

function messageText(content: unknown, i: number): string {
  if (content === undefined || content === null) return "";
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw bad(`messages[${i}].content`, "must be a string or an array of parts");
  return content
    .map((p, j) => {
      const part = p as Body;
      if (typeof p !== "object" || p === null || part.type !== "text" || typeof part.text !== "string")
        throw bad(`messages[${i}].content[${j}]`, 'only {"type": "text", "text": …} parts are supported');
      return part.text;
    })
    .join("");
}

const ROLES = new Set(["system", "developer", "user", "assistant", "tool"]);

export function parseChat(raw: unknown, nVocab: number): ParsedChat {
  const body = checkObject(raw);
  checkKnown(body, CHAT_FIELDS);
  const logprobs = bool(body, "logprobs") ?? false;
  const top = num(body, "top_logprobs", 0, MAX_TOP_LOGPROBS, true);
  if (top !== undefined && !logprobs) throw bad("top_logprobs", "needs logprobs: true");
  const kw = body.chat_template_kwargs;
  if (kw !== undefined && kw !== null && (typeof kw !== "object" || Array.isArray(kw)))
    throw bad("chat_template_kwargs", "must be an object of template variables");
  const templateKwargs = { ...((kw ?? {}) as Record<string, unknown>) };
  for (const k of Object.keys(templateKwargs))
    if (["messages", "tools", "add_generation_prompt", "bos_token", "eos_token"].includes(k))
      throw bad(`chat_template_kwargs.${k}`, "is set by the server; it cannot be a template kwarg");
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    throw bad(
      "messages",
      "must be a non-empty array of messages",
      body.messages === undefined ? "missing_required_parameter" : "invalid_value",
    );
  const messages = body.messages.map((m, i): ParsedMessage => {
    if (typeof m !== "object" || m === null || Array.isArray(m))
      throw bad(`messages[${i}]`, "must be an object");
    const msg = m as Body;
    for (const k of Object.keys(msg))
      if (!["role", "content", "name", "tool_calls", "tool_call_id"].includes(k))
        throw bad(`messages[${i}].${k}`, "unknown field");
    if (typeof msg.role !== "string" || !ROLES.has(msg.role))
      throw bad(`messages[${i}].role`, `must be one of ${[...ROLES].join(", ")}, got ${quote(msg.role)}`);
    if (msg.name !== undefined && typeof msg.name !== "string")
      throw bad(`messages[${i}].name`, "must be a string");
    const out: ParsedMessage = {
      role: msg.role === "developer" ? "system" : msg.role,
      content: messageText(msg.content, i),
    };
    if (msg.name !== undefined) out.name = msg.name as string;
    const tf = parseMessageToolFields(msg, i);
    if (tf.tool_calls) out.tool_calls = tf.tool_calls;
    if (tf.tool_call_id !== undefined) out.tool_call_id = tf.tool_call_id;
    return out;
  });
  const common = parseCommon(body, nVocab);
  const mct = num(body, "max_completion_tokens", 0, 2 ** 31 - 1, true);
  if (mct !== undefined && common.maxTokens !== undefined && mct !== common.maxTokens)
    throw bad("max_completion_tokens", "differs from max_tokens; give one of them");
  return {
    ...common,
    maxTokens: mct ?? common.maxTokens,
    messages,
    templateKwargs,
    tools: parseTools(body),
    nProbs: logprobs ? (top ?? 0) : undefined,
  };
}

export function parseCompletion(raw: unknown, nVocab: number): ParsedCompletion {
  const body = checkObject(raw);
  checkKnown(body, COMPLETION_FIELDS);
  if (body.echo === true) throw bad("echo", "is not supported by this server yet", "unsupported_parameter");
  bool(body, "echo");
  // Legacy completions: logprobs is the number of alternatives per token (OpenAI allows 0–5).
  const nProbs = num(body, "logprobs", 0, MAX_TOP_LOGPROBS, true);
  let prompt: string;
  if (typeof body.prompt === "string") prompt = body.prompt;
  else if (Array.isArray(body.prompt) && body.prompt.length === 1 && typeof body.prompt[0] === "string")
    prompt = body.prompt[0];
  else if (body.prompt === undefined) throw bad("prompt", "is required", "missing_required_parameter");
  else throw bad("prompt", "must be a string (or an array of one string)");
  return { ...parseCommon(body, nVocab), prompt, nProbs };
}
