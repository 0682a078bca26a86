/** Parsing and checking of OpenAI request bodies: every field known, typed and in range. */

import { ApiError, invalidField } from "./errors.js";
import { quote } from "./quote.js";
import { parseReasoningFormat, type ReasoningFormat } from "./reasoning/tags.js";
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
  | { type: "json_schema"; schema: unknown; name: string; param?: string };

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
  /** llama-server's sampler fields (undefined: the sampler's default). */
  sampling: LlamaSampling;
  /** llama-server's `ignore_eos`: end-of-generation tokens are never sampled. */
  ignoreEos: boolean;
  /** llama-server's `timings_per_token`: each streamed chunk carries the timings so far. */
  timingsPerToken: boolean;
  /** llama-server's `return_progress`: streamed `prompt_progress` chunks while the prompt is read. */
  returnProgress: boolean;
  /** llama-server's `verbose`: the response carries `__verbose` (the prompt as read, the settings). */
  verbose: boolean;
  /** llama-server's `id_slot`: the slot to run in (undefined, or -1 given: any). */
  idSlot: number | undefined;
  /** llama-server's `n_keep`: the tokens a context shift keeps (-1: the prompt); default 0. */
  nKeep: number | undefined;
  /** llama-server's `speculative.n_max` / `speculative.n_min`: this request's drafts (with a speculative server). */
  draftMax: number | undefined;
  draftMin: number | undefined;
  /**
   * Fields the request gave that this server does not use (unknown ones, and llama-server's that
   * have no effect here), by name: answered in a response header and logged, or a 400 under
   * `strictApi`.
   */
  ignored: string[];
}

/** llama-server's sampler fields under their names, as the sampler takes them. */
export interface LlamaSampling {
  typicalP?: number;
  xtcProbability?: number;
  xtcThreshold?: number;
  topNSigma?: number;
  repeatLastN?: number;
  dryMultiplier?: number;
  dryBase?: number;
  dryAllowedLength?: number;
  dryPenaltyLastN?: number;
  drySequenceBreakers?: string[];
  mirostat?: 0 | 1 | 2;
  mirostatTau?: number;
  mirostatEta?: number;
  dynatempRange?: number;
  dynatempExponent?: number;
}

/** How a request's fields are read. */
export interface ParseOptions {
  /** A field this server does not know (or does not use) is a 400 instead of ignored. */
  readonly strictApi?: boolean;
  /** The server shifts full contexts (ServerOptions.contextShift): n_keep acts; else it is ignored. */
  readonly contextShift?: boolean;
  /** The model's tokens of a text (no special tokens), for logit_bias keyed by text. */
  readonly tokenize?: (text: string) => number[];
  /**
   * `messages` may be empty (Anthropic's Messages API, as llama-server takes one there): the prompt is
   * then the template's generation prompt alone.
   */
  readonly emptyMessages?: boolean;
}

export interface ParsedChat extends ParsedCommon {
  /** The messages the template renders (without a final assistant message being continued). */
  messages: ParsedMessage[];
  /** Whether the template adds the assistant's turn header (`add_generation_prompt`, default true). */
  addGenerationPrompt: boolean;
  /**
   * The final assistant message's text when the request continues it (`continue_final_message`, or
   * llama-server's prefill: a last message from the assistant): the prompt is the other messages
   * with the generation prompt, then this text, and the completion goes on from it.
   */
  prefill: string | undefined;
  /** llama.cpp's `chat_template_kwargs`: extra template variables (e.g. enable_thinking). */
  templateKwargs: Record<string, unknown>;
  /** `tools` / `tool_choice` / `parallel_tool_calls`, when tools are given. */
  tools: ToolsRequest | undefined;
  /** llama-server's `reasoning_format`: how thinking is returned (undefined: the server's default). */
  reasoningFormat: ReasoningFormat | undefined;
}

export interface ParsedCompletion extends ParsedCommon {
  prompt: string;
}

type Body = Record<string, unknown>;

/** llama-server's sampler fields (validated, used) and the rest of its generation fields. */
const LLAMA_SAMPLER_FIELDS = [
  "typical_p",
  "xtc_probability",
  "xtc_threshold",
  "top_n_sigma",
  "repeat_last_n",
  "dry_multiplier",
  "dry_base",
  "dry_allowed_length",
  "dry_penalty_last_n",
  "dry_sequence_breakers",
  "mirostat",
  "mirostat_tau",
  "mirostat_eta",
  "dynatemp_range",
  "dynatemp_exponent",
  "ignore_eos",
  "n_probs",
  "n_predict",
  "json_schema",
  "timings_per_token",
  "return_progress",
  "verbose",
  "id_slot",
  "n_keep",
  "speculative.n_max",
  "speculative.n_min",
];
/**
 * llama-server fields checked but without effect here (slots are the batcher's, the sampler has
 * no min_keep or custom order yet, timing and progress fields shape llama-server's own responses):
 * named as ignored when set to anything but their no-op value.
 */
const LLAMA_NO_EFFECT: Record<string, (v: unknown) => boolean> = {
  min_keep: (v) => v === 0,
  return_tokens: (v) => v === false,
  post_sampling_probs: (v) => v === false,
  n_keep: (v) => v === 0,
  t_max_predict_ms: (v) => v === 0 || v === -1,
  n_indent: (v) => v === 0,
  // (the server's draft model ends drafts at its --draft-p-min)
  "speculative.p_min": () => false,
  samplers: () => false,
  // (text completions return the text as generated, thinking included, as llama-server's do)
  reasoning_format: (v) => v === "none",
};

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
  ...LLAMA_SAMPLER_FIELDS,
  "messages",
  "max_completion_tokens",
  "logprobs",
  "top_logprobs",
  "chat_template_kwargs",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "add_generation_prompt",
  "continue_final_message",
  "reasoning_format",
]);
const COMPLETION_FIELDS = new Set([...COMMON_FIELDS, ...LLAMA_SAMPLER_FIELDS, "prompt", "echo", "logprobs"]);

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

/**
 * Fields outside `known`: OpenAI's not implemented here are a 400; llama-server's without effect
 * and unknown ones are returned as ignored (a 400 under strictApi), as llama-server and vLLM
 * accept and ignore fields clients and proxies send.
 */
function checkKnown(body: Body, known: Set<string>, o: ParseOptions): string[] {
  const ignored: string[] = [];
  for (const key of Object.keys(body)) {
    // (n_keep only acts when the server shifts full contexts)
    if (known.has(key) && !(key === "n_keep" && !o.contextShift)) continue;
    if (NOT_YET.has(key)) throw bad(key, "is not supported by this server yet", "unsupported_parameter");
    const noop = LLAMA_NO_EFFECT[key];
    if (noop) {
      const v = body[key];
      if (v === undefined || v === null || noop(v)) continue;
      if (o.strictApi) throw bad(key, "has no effect on this server (--strict-api)", "unsupported_parameter");
      ignored.push(key);
      continue;
    }
    if (o.strictApi) throw bad(key, "unknown field (--strict-api)", "unknown_parameter");
    ignored.push(key);
  }
  return ignored;
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

/** The longest text a logit_bias entry may name (its tokens all take the bias). */
const MAX_BIAS_TEXT = 1024;

/**
 * logit_bias: OpenAI's object of token id → bias (−100 bans, 100 forces), or llama-server's forms:
 * an array of [token id or text, bias] pairs, a text key (each of its tokens biased), `false` to ban.
 * Every entry is checked (a 400 naming it), where llama-server skips what it cannot read.
 */
function parseLogitBias(
  v: unknown,
  nVocab: number,
  tokenize: ParseOptions["tokenize"],
): Map<number, number> | undefined {
  if (v === undefined || v === null) return undefined;
  const map = new Map<number, number>();
  const add = (key: unknown, b: unknown, where: string) => {
    let bias: number;
    if (b === false) bias = Number.NEGATIVE_INFINITY;
    else if (typeof b === "number" && Number.isFinite(b) && b >= -100 && b <= 100)
      bias = b <= -100 ? Number.NEGATIVE_INFINITY : b; // (OpenAI: -100 bans the token, 100 forces it)
    else throw bad(where, `the bias of ${quote(key)} must be a number in [-100, 100] or false (ban)`);
    const id =
      typeof key === "number" ? key : typeof key === "string" && /^\d+$/.test(key) ? Number(key) : undefined;
    if (id !== undefined) {
      if (!Number.isInteger(id) || id < 0 || id >= nVocab)
        throw bad(where, `${quote(key)} is not a token id in [0, ${nVocab})`);
      map.set(id, bias);
      return;
    }
    if (typeof key !== "string" || key === "")
      throw bad(where, `${quote(key)} must be a token id or a non-empty text`);
    if (key.length > MAX_BIAS_TEXT)
      throw bad(where, `a text key of ${key.length} characters; at most ${MAX_BIAS_TEXT}`);
    if (!tokenize) throw bad(where, `${quote(key)} is not a token id in [0, ${nVocab})`);
    for (const t of tokenize(key)) map.set(t, bias);
  };
  if (Array.isArray(v)) {
    if (v.length > nVocab) throw bad("logit_bias", `at most ${nVocab} entries, got ${v.length}`);
    v.forEach((e, i) => {
      if (!Array.isArray(e) || e.length !== 2)
        throw bad(`logit_bias[${i}]`, "must be a [token id or text, bias] pair");
      add(e[0], e[1], `logit_bias[${i}]`);
    });
    return map;
  }
  if (typeof v !== "object")
    throw bad("logit_bias", "must be an object of token id → bias, or an array of [token, bias]");
  for (const [k, b] of Object.entries(v as Record<string, unknown>)) add(k, b, "logit_bias");
  return map;
}

function parseResponseFormat(v: unknown): ResponseFormat {
  if (v === undefined || v === null) return { type: "text" };
  if (typeof v !== "object" || Array.isArray(v)) throw bad("response_format", "must be an object");
  const rf = v as Body;
  if (rf.type === "text") return { type: "text" };
  if (rf.type === "json_object") {
    // llama-server's extension: a schema under json_object constrains the object to it
    if (rf.schema === undefined || rf.schema === null) return { type: "json_object" };
    if (typeof rf.schema !== "object" && typeof rf.schema !== "boolean")
      throw bad("response_format.schema", "must be a JSON Schema (an object)");
    return { type: "json_schema", schema: rf.schema, name: "response", param: "response_format.schema" };
  }
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

/** dry_sequence_breakers: llama-server's non-empty array of non-empty strings. */
function parseBreakers(v: unknown): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.length === 0)
    throw bad("dry_sequence_breakers", "must be a non-empty array of strings");
  if (v.length > 64) throw bad("dry_sequence_breakers", `at most 64 breakers, got ${v.length}`);
  return v.map((s, i) => {
    if (typeof s !== "string" || s === "")
      throw bad(`dry_sequence_breakers[${i}]`, "must be a non-empty string");
    if (s.length > 256) throw bad(`dry_sequence_breakers[${i}]`, `at most 256 characters, got ${s.length}`);
    return s;
  });
}

/** llama-server's sampler fields, each in the range the sampler takes. */
function parseLlamaSampling(body: Body): LlamaSampling {
  const out: LlamaSampling = {};
  const set = <K extends keyof LlamaSampling>(k: K, v: LlamaSampling[K] | undefined) => {
    if (v !== undefined) out[k] = v;
  };
  const typical = num(body, "typical_p", 0, 1);
  if (typical === 0) throw bad("typical_p", "must be in (0, 1] (1 is off), got 0");
  set("typicalP", typical);
  set("xtcProbability", num(body, "xtc_probability", 0, 1));
  set("xtcThreshold", num(body, "xtc_threshold", 0, 1));
  set("topNSigma", num(body, "top_n_sigma", -1e9, 1e9));
  set("repeatLastN", num(body, "repeat_last_n", -1, 2 ** 31 - 1, true));
  set("dryMultiplier", num(body, "dry_multiplier", 0, 1e9));
  set("dryBase", num(body, "dry_base", 1, 1e9));
  set("dryAllowedLength", num(body, "dry_allowed_length", 1, 2 ** 31 - 1, true));
  set("dryPenaltyLastN", num(body, "dry_penalty_last_n", -1, 2 ** 31 - 1, true));
  set("drySequenceBreakers", parseBreakers(body.dry_sequence_breakers));
  const m = num(body, "mirostat", 0, 2, true);
  set("mirostat", m as 0 | 1 | 2 | undefined);
  set("mirostatTau", num(body, "mirostat_tau", 0, 1e9));
  set("mirostatEta", num(body, "mirostat_eta", 0, 1e9));
  set("dynatempRange", num(body, "dynatemp_range", 0, 1e9));
  set("dynatempExponent", num(body, "dynatemp_exponent", 0, 1e9));
  return out;
}

/** max_tokens, or llama-server's n_predict (-1: no limit); both given must agree. */
function parseMaxTokens(body: Body): number | undefined {
  const max = num(body, "max_tokens", 0, 2 ** 31 - 1, true);
  const np = num(body, "n_predict", -1, 2 ** 31 - 1, true);
  const predict = np === -1 ? undefined : np;
  if (np !== undefined && max !== undefined && predict !== max)
    throw bad("n_predict", "differs from max_tokens; give one of them");
  return max ?? predict;
}

/** response_format, or llama-server's top-level json_schema (not both). */
function parseFormat(body: Body): ResponseFormat {
  const js = body.json_schema;
  if (js === undefined || js === null) return parseResponseFormat(body.response_format);
  if (body.response_format !== undefined && body.response_format !== null)
    throw bad("json_schema", "and response_format both constrain the output; give one of them");
  if (typeof js !== "object" && typeof js !== "boolean")
    throw bad("json_schema", "must be a JSON Schema (an object)");
  return { type: "json_schema", schema: js, name: "response", param: "json_schema" };
}

function parseCommon(body: Body, nVocab: number, o: ParseOptions): ParsedCommon {
  if (body.model !== undefined && body.model !== null && typeof body.model !== "string")
    throw bad("model", "must be a string");
  if (body.user !== undefined && typeof body.user !== "string") throw bad("user", "must be a string");
  const n = num(body, "n", 1, MAX_N, true) ?? 1;
  const draftMax = num(body, "speculative.n_max", 0, 256, true);
  const draftMin = num(body, "speculative.n_min", 0, 256, true);
  if (draftMax !== undefined && draftMin !== undefined && draftMin > draftMax)
    throw bad("speculative.n_min", `must not exceed speculative.n_max (${draftMax}), got ${draftMin}`);
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
    maxTokens: parseMaxTokens(body),
    temperature: num(body, "temperature", 0, 2),
    topP: num(body, "top_p", 0, 1),
    topK: num(body, "top_k", 0, 2 ** 31 - 1, true),
    minP: num(body, "min_p", 0, 1),
    seed: num(body, "seed", Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, true),
    stop: parseStop(body.stop),
    presencePenalty: num(body, "presence_penalty", -2, 2),
    frequencyPenalty: num(body, "frequency_penalty", -2, 2),
    repeatPenalty: num(body, "repeat_penalty", 0, 10),
    logitBias: parseLogitBias(body.logit_bias, nVocab, o.tokenize),
    responseFormat: parseFormat(body),
    n,
    cachePrompt: bool(body, "cache_prompt") ?? true,
    grammar,
    nProbs: num(body, "n_probs", 0, MAX_TOP_LOGPROBS, true) || undefined,
    sampling: parseLlamaSampling(body),
    ignoreEos: bool(body, "ignore_eos") ?? false,
    timingsPerToken: bool(body, "timings_per_token") ?? false,
    returnProgress: bool(body, "return_progress") ?? false,
    verbose: bool(body, "verbose") ?? false,
    idSlot: idSlot(body),
    nKeep: num(body, "n_keep", -1, 2 ** 31 - 1, true),
    draftMax,
    draftMin,
    ignored: [],
  };
}

/** id_slot: -1 (any) or a slot's number (checked against the slots when the request runs). */
function idSlot(body: Body): number | undefined {
  const v = num(body, "id_slot", -1, 1e6, true);
  return v === undefined || v === -1 ? undefined : v;
}

/** Most choices one request may ask for. */
export const MAX_N = 16;
/** Most alternatives per token in log-probabilities (OpenAI's limit for chat). */
export const MAX_TOP_LOGPROBS = 20;

function messageText(content: unknown, i: number, joiner = "\n"): string {
  if (content === undefined || content === null) return "";
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw bad(`messages[${i}].content`, "must be a string or an array of parts");
  // (text parts joined by a newline, as llama-server gives them to the template; a continued
  // assistant message's by a blank line, as it renders that)
  return content
    .map((p, j) => {
      const part = p as Body;
      if (typeof p !== "object" || p === null || part.type !== "text" || typeof part.text !== "string")
        throw bad(`messages[${i}].content[${j}]`, 'only {"type": "text", "text": …} parts are supported');
      return part.text;
    })
    .join(joiner);
}

const ROLES = new Set(["system", "developer", "user", "assistant", "tool"]);

/**
 * Whether the request continues its last (assistant) message, as llama-server decides it:
 * `continue_final_message` (true, "content"), else a last assistant message when the one before is
 * not one too; never together with `add_generation_prompt: true` or on a message with tool calls.
 */
function continuation(
  body: Body,
  messages: ParsedMessage[],
): { prefill: string | undefined; addGenerationPrompt: boolean } {
  const lastText = () => messageText((body.messages as Body[]).at(-1)!.content, messages.length - 1, "\n\n");
  const add = bool(body, "add_generation_prompt");
  const cfm = body.continue_final_message;
  if (cfm !== undefined && cfm !== null && typeof cfm !== "boolean" && cfm !== "content")
    throw bad("continue_final_message", `must be a boolean or "content", got ${quote(cfm)}`);
  const last = messages.at(-1);
  const cont = cfm === true || cfm === "content";
  const addGen = add ?? true;
  if (last === undefined) {
    // (no messages: ParseOptions.emptyMessages)
    if (cont) throw bad("continue_final_message", "continues the last message, but there are none");
    return { prefill: undefined, addGenerationPrompt: addGen };
  }
  // (the template renders a message's thinking; a continued one's text alone would lose it)
  if ((cont || last.role === "assistant") && last.reasoning_content !== undefined)
    throw bad(
      "messages",
      "ends with an assistant message with reasoning (reasoning_content), which cannot be continued: " +
        "the continued text would lose it; leave the reasoning out",
    );
  if (!cont && last.role === "assistant") {
    if (messages.at(-2)?.role === "assistant")
      throw bad("messages", "ends with two assistant messages; at most the last one may be continued");
    if (last.tool_calls !== undefined)
      throw bad("messages", "ends with an assistant message with tool calls, which cannot be continued");
    // (llama-server's prefill: the assistant's text is continued, whatever add_generation_prompt says)
    return { prefill: lastText(), addGenerationPrompt: true };
  }
  if (!cont) return { prefill: undefined, addGenerationPrompt: addGen };
  if (add === true) throw bad("continue_final_message", "and add_generation_prompt cannot both be true");
  if (last.role !== "assistant")
    throw bad(
      "continue_final_message",
      `continues the last message, which must be from the assistant, not ${last.role}`,
    );
  if (last.tool_calls !== undefined)
    throw bad("continue_final_message", "cannot continue an assistant message with tool calls");
  return { prefill: lastText(), addGenerationPrompt: true };
}

export function parseChat(raw: unknown, nVocab: number, o: ParseOptions = {}): ParsedChat {
  const body = checkObject(raw);
  const ignored = checkKnown(body, CHAT_FIELDS, o);
  const logprobs = bool(body, "logprobs") ?? false;
  if (body.logprobs === false && typeof body.n_probs === "number" && body.n_probs > 0)
    throw bad("n_probs", "asks for log-probabilities that logprobs: false turns off; give one of them");
  const top = num(body, "top_logprobs", 0, MAX_TOP_LOGPROBS, true);
  if (top !== undefined && !logprobs) throw bad("top_logprobs", "needs logprobs: true");
  const kw = body.chat_template_kwargs;
  if (kw !== undefined && kw !== null && (typeof kw !== "object" || Array.isArray(kw)))
    throw bad("chat_template_kwargs", "must be an object of template variables");
  const templateKwargs = { ...((kw ?? {}) as Record<string, unknown>) };
  for (const k of Object.keys(templateKwargs))
    if (["messages", "tools", "add_generation_prompt", "bos_token", "eos_token"].includes(k))
      throw bad(`chat_template_kwargs.${k}`, "is set by the server; it cannot be a template kwarg");
  if (!Array.isArray(body.messages) || (body.messages.length === 0 && !o.emptyMessages))
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
      if (!["role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content"].includes(k)) {
        if (o.strictApi)
          throw bad(`messages[${i}].${k}`, "unknown field (--strict-api)", "unknown_parameter");
        ignored.push(`messages[${i}].${k}`);
      }
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
    // An earlier turn's thinking, for the template to render as llama-server passes it (empty: none).
    const rc = msg.reasoning_content;
    if (rc !== undefined && rc !== null && typeof rc !== "string")
      throw bad(`messages[${i}].reasoning_content`, `must be a string, got ${quote(rc)}`);
    if (typeof rc === "string" && rc !== "") {
      if (out.role !== "assistant")
        throw bad(`messages[${i}].reasoning_content`, "only an assistant message carries reasoning");
      out.reasoning_content = rc;
    }
    return out;
  });
  const { prefill, addGenerationPrompt } = continuation(body, messages);
  const common = parseCommon(body, nVocab, o);
  const mct = num(body, "max_completion_tokens", 0, 2 ** 31 - 1, true);
  if (mct !== undefined && common.maxTokens !== undefined && mct !== common.maxTokens)
    throw bad("max_completion_tokens", "differs from max_tokens; give one of them");
  return {
    ...common,
    maxTokens: mct ?? common.maxTokens,
    messages: prefill === undefined ? messages : messages.slice(0, -1),
    addGenerationPrompt,
    prefill,
    templateKwargs,
    tools: parseTools(body),
    reasoningFormat: parseReasoningFormat(body.reasoning_format),
    // logprobs, or llama-server's n_probs (alternatives per token) without it
    nProbs: logprobs ? (top ?? 0) : body.logprobs === undefined ? common.nProbs : undefined,
    ignored,
  };
}

export function parseCompletion(raw: unknown, nVocab: number, o: ParseOptions = {}): ParsedCompletion {
  const body = checkObject(raw);
  parseReasoningFormat(body.reasoning_format); // a bad value is a 400 here too, as in llama-server
  const ignored = checkKnown(body, COMPLETION_FIELDS, o);
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
  const common = parseCommon(body, nVocab, o);
  if (nProbs !== undefined && common.nProbs !== undefined && nProbs !== common.nProbs)
    throw bad("n_probs", "differs from logprobs; give one of them");
  return { ...common, prompt, nProbs: nProbs ?? common.nProbs, ignored };
}

/** One prompt of a native request: its text, or token ids mixed with texts (each tokenized as it is). */
export type NativePrompt = { text: string } | { parts: (number | string)[] };

/** llama-server's native `/completion` request. */
export interface ParsedNative extends ParsedCommon {
  /** The prompts: one, or several (an array of prompts), each answered in order. */
  prompts: NativePrompt[];
  /** `return_tokens`: the generated token ids in the response (and each streamed chunk has its own). */
  returnTokens: boolean;
  /** `response_fields`: only these fields (paths such as `generation_settings/n_predict`) in the response. */
  responseFields: string[] | undefined;
  /** `post_sampling_probs`: n_probs' alternatives as probabilities after truncation and temperature. */
  postSampling: boolean;
}

const NATIVE_FIELDS = new Set([
  ...COMMON_FIELDS,
  ...LLAMA_SAMPLER_FIELDS,
  "prompt",
  "return_tokens",
  "response_fields",
  "post_sampling_probs",
]);

/** Most token ids a native prompt may give (a slot's context is smaller in practice). */
const MAX_PROMPT_IDS = 1 << 20;
/** Most prompts one native request may give. */
export const MAX_NATIVE_PROMPTS = 16;

/** A prompt text in llama-server's forms: a string, or an object with `prompt_string`. */
function promptText(v: unknown, where: string): string | undefined {
  if (typeof v === "string") return v;
  if (typeof v === "object" && v !== null && !Array.isArray(v)) {
    const o = v as Body;
    if (o.multimodal_data !== undefined)
      throw bad(`${where}.multimodal_data`, "this server reads no images or audio", "unsupported_parameter");
    for (const k of Object.keys(o))
      if (k !== "prompt_string") throw bad(`${where}.${k}`, "unknown field of a prompt object");
    if (typeof o.prompt_string !== "string") throw bad(`${where}.prompt_string`, "must be a string");
    return o.prompt_string;
  }
  return undefined;
}

/** Token ids mixed with texts, as one prompt. */
function promptParts(v: unknown[], where: string, nVocab: number): (number | string)[] {
  if (v.length === 0) throw bad(where, "must not be empty");
  if (v.length > MAX_PROMPT_IDS) throw bad(where, `at most ${MAX_PROMPT_IDS} token ids, got ${v.length}`);
  return v.map((t, i) => {
    if (typeof t === "string") return t;
    if (typeof t !== "number" || !Number.isInteger(t) || t < 0 || t >= nVocab)
      throw bad(`${where}[${i}]`, `must be a token id in [0, ${nVocab}) or a text, got ${quote(t)}`);
    return t;
  });
}

/**
 * llama-server's prompt forms: a text, a `{prompt_string}` object, token ids (mixed with texts:
 * one prompt), or an array of those (several prompts).
 */
function parsePrompts(pr: unknown, nVocab: number): NativePrompt[] {
  if (pr === undefined || pr === null) throw bad("prompt", "is required", "missing_required_parameter");
  const one = promptText(pr, "prompt");
  if (one !== undefined) return [{ text: one }];
  if (!Array.isArray(pr) || pr.length === 0)
    throw bad("prompt", "must be a text, token ids, or an array of prompts");
  if (pr.some((x) => typeof x === "number")) return [{ parts: promptParts(pr, "prompt", nVocab) }];
  if (pr.length > MAX_NATIVE_PROMPTS)
    throw bad("prompt", `at most ${MAX_NATIVE_PROMPTS} prompts, got ${pr.length}`);
  return pr.map((x, i) => {
    const t = promptText(x, `prompt[${i}]`);
    if (t !== undefined) return { text: t };
    if (Array.isArray(x)) return { parts: promptParts(x, `prompt[${i}]`, nVocab) };
    throw bad(`prompt[${i}]`, "must be a text, token ids or a {prompt_string} object");
  });
}

/**
 * llama-server's `/completion` fields: its prompts (see parsePrompts), `n_predict`,
 * `return_tokens`, `response_fields`, the sampler fields; one completion a prompt (no `n`).
 */
export function parseNative(raw: unknown, nVocab: number, o: ParseOptions = {}): ParsedNative {
  const body = checkObject(raw);
  parseReasoningFormat(body.reasoning_format); // a bad value is a 400 here too, as in llama-server
  const ignored = checkKnown(body, NATIVE_FIELDS, o);
  const common = parseCommon(body, nVocab, o);
  if (common.n !== 1)
    throw bad("n", "the native completion returns one completion; use /v1/completions for n > 1");
  const returnTokens = bool(body, "return_tokens") ?? false;
  const rf = body.response_fields;
  let responseFields: string[] | undefined;
  if (rf !== undefined && rf !== null) {
    if (
      !Array.isArray(rf) ||
      rf.length > 64 ||
      rf.some((f) => typeof f !== "string" || f === "" || f.length > 256)
    )
      throw bad(
        "response_fields",
        "must be an array of at most 64 field names (paths such as generation_settings/n_predict)",
      );
    responseFields = rf.length > 0 ? (rf as string[]) : undefined;
  }
  const prompts = parsePrompts(body.prompt, nVocab);
  if (prompts.length > 1 && common.stream)
    throw bad(
      "prompt",
      "several prompts are answered whole, not streamed; send them one a request to stream",
    );
  return {
    ...common,
    prompts,
    returnTokens,
    responseFields,
    postSampling: bool(body, "post_sampling_probs") ?? false,
    ignored,
  };
}
