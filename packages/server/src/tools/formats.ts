/** Which tool-call format a chat template teaches its model, read from the template's source. */

/**
 * How a model writes tool calls (the model writes them; the server parses them back):
 * - `hermes` (Qwen 2.5 / QwQ / Qwen 3, Hermes 2/3, Granite 4): `<tool_call>{"name": …, "arguments": {…}}</tool_call>`,
 *   after optional content; several follow one another.
 * - `llama3` (Llama 3.1 / 3.2 / 3.3): the whole message is one `{"name": …, "parameters": {…}}`, optionally
 *   after `<|python_tag|>`; or a built-in tool as `<|python_tag|>name.call(k="v", …)`.
 * - `pythonic` (Llama 3.2 / 4 "pythonic" prompts): the message starts with `[f(a=1), g(b="x")]`.
 * - `lfm2` (Liquid LFM2): the same Python-style list inside `<|tool_call_start|>…<|tool_call_end|>`, anywhere.
 * - `mistral-nemo` (Mistral Nemo, Small 3.0/3.1): `[TOOL_CALLS][{"name": …, "arguments": {…}, "id": …}, …]`.
 * - `mistral` (Mistral Small 3.2, Magistral, Devstral, Ministral 3): `[TOOL_CALLS]name[ARGS]{…}` per call,
 *   optionally `[TOOL_CALLS]name[CALL_ID]id[ARGS]{…}`.
 * - `deepseek-r1`: `<｜tool▁calls▁begin｜>` then per call
 *   `<｜tool▁call▁begin｜>function<｜tool▁sep｜>name\n```json\n{…}\n```<｜tool▁call▁end｜>`, then `<｜tool▁calls▁end｜>`.
 * - `deepseek-v3.1`: the same section with `<｜tool▁call▁begin｜>name<｜tool▁sep｜>{…}<｜tool▁call▁end｜>` per call.
 * - `qwen3-coder` (Qwen3-Coder, Qwen3.5, Nemotron Nano 3): `<tool_call>\n<function=name>\n<parameter=k>\nvalue\n</parameter>\n</function>\n</tool_call>`.
 * - `command-r7b`: `<|START_ACTION|>[{"tool_call_id": …, "tool_name": …, "parameters": {…}}, …]<|END_ACTION|>`;
 *   its answer text sits in `<|START_RESPONSE|>…<|END_RESPONSE|>`.
 * - `granite` (Granite 3.x): `<|tool_call|>[{"name": …, "arguments": {…}}, …]`.
 * - `glm-4.5` (GLM-4.5 / 4.6 / 4.7): `<tool_call>name\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>\n</tool_call>`.
 * - `kimi-k2`: `<|tool_calls_section_begin|>` then per call
 *   `<|tool_call_begin|>functions.name:0<|tool_call_argument_begin|>{…}<|tool_call_end|>`, then `<|tool_calls_section_end|>`.
 */
export type ToolFormat =
  | "hermes"
  | "llama3"
  | "pythonic"
  | "lfm2"
  | "mistral-nemo"
  | "mistral"
  | "deepseek-r1"
  | "deepseek-v3.1"
  | "qwen3-coder"
  | "command-r7b"
  | "granite"
  | "glm-4.5"
  | "kimi-k2";

/**
 * The format a request's calls are read in: the template's own, else `generic` (llama.cpp's fallback for
 * a template with none: the whole answer is a JSON object, `{"tool_call": {"name", "arguments"}}`,
 * `{"tool_calls": [...]}` or `{"response": "…"}`, forced by a grammar; see format-generic.ts).
 */
export type CallFormat = ToolFormat | "generic";

/** Every format, in the order {@link toolFormatOf} tries them. */
export const TOOL_FORMATS: readonly ToolFormat[] = [
  "kimi-k2",
  "command-r7b",
  "mistral",
  "mistral-nemo",
  "deepseek-r1",
  "deepseek-v3.1",
  "glm-4.5",
  "qwen3-coder",
  "granite",
  "hermes",
  "lfm2",
  "pythonic",
  "llama3",
];

const has = (src: string, ...markers: string[]) => markers.every((m) => src.includes(m));

/** Markers a Llama 3.x template with JSON tool calling contains (any one is enough). */
const LLAMA3_MARKERS = [
  "<|start_header_id|>ipython<|end_header_id|>",
  "<|python_tag|>",
  '{"name": function name, "parameters"',
];

/** Whether a template's source is one of `format`'s (its markers; see {@link toolFormatOf}). */
const DETECT: Record<ToolFormat, (src: string) => boolean> = {
  "kimi-k2": (s) => has(s, "<|tool_calls_section_begin|>"),
  "command-r7b": (s) => has(s, "<|START_ACTION|>"),
  mistral: (s) => has(s, "[TOOL_CALLS]", "[ARGS]"),
  "mistral-nemo": (s) => has(s, "[TOOL_CALLS]"),
  // R1 fences each call's arguments in ```json; V3.1 writes them bare after <｜tool▁sep｜>.
  "deepseek-r1": (s) => has(s, "<｜tool▁calls▁begin｜>", "```json"),
  "deepseek-v3.1": (s) => has(s, "<｜tool▁calls▁begin｜>"),
  "glm-4.5": (s) => has(s, "<arg_key>", "<arg_value>"),
  "qwen3-coder": (s) => has(s, "<tool_call>", "<function=", "<parameter="),
  granite: (s) => has(s, "<|tool_call|>"),
  hermes: (s) => has(s, "<tool_call>"),
  lfm2: (s) => has(s, "<|tool_call_start|>") || has(s, "List of tools: ["),
  pythonic: (s) => has(s, "[func_name1(params_name1=params_value1"),
  llama3: (s) => LLAMA3_MARKERS.some((m) => s.includes(m)),
};

/**
 * The format a chat template uses, from its source; undefined when the template has no tool support that
 * this module knows (the server then uses the generic format). Like llama.cpp's
 * detection, it looks for each format's own markers, the more specific first (GLM and Qwen3-Coder write
 * `<tool_call>` too, so they are tried before hermes; see {@link TOOL_FORMATS} for the order). A template
 * must also read the `tools` variable, or the model would never see the tools.
 */
export function toolFormatOf(templateSource: string): ToolFormat | undefined {
  if (!/\btools\b/.test(templateSource)) return undefined;
  return TOOL_FORMATS.find((f) => DETECT[f](templateSource));
}

/** How the ids of a format's calls are made. */
export type CallIdStyle =
  /** `call_` and 24 letters and digits (OpenAI's shape). */
  | "openai"
  /** 9 letters and digits: Mistral's templates refuse other ids when the call is sent back. */
  | "mistral"
  /** The id the model wrote (Kimi's `functions.name:0`, which its template writes back as it was). */
  | "model";

/** The id style of `format`'s calls. */
export function callIdStyle(format: CallFormat): CallIdStyle {
  if (format === "mistral" || format === "mistral-nemo") return "mistral";
  if (format === "kimi-k2") return "model";
  return "openai";
}

/**
 * Markers that end a think block the model left open, beside its end tag: these models may start their
 * calls straight from thinking (llama.cpp ends the reasoning at them too). The marker stays in the text,
 * where the call parser finds it.
 */
export function reasoningEndMarkers(format: CallFormat | undefined): readonly string[] {
  if (format === "kimi-k2") return ["<|tool_calls_section_begin|>"];
  if (format === "deepseek-r1" || format === "deepseek-v3.1") return ["<｜tool▁calls▁begin｜>"];
  if (format === "qwen3-coder") return ["<tool_call>"];
  return [];
}

const DEEPSEEK_MARKERS = [
  "<｜tool▁calls▁begin｜>",
  "<｜tool▁calls▁end｜>",
  "<｜tool▁call▁begin｜>",
  "<｜tool▁call▁end｜>",
  "<｜tool▁sep｜>",
];

/**
 * The marker texts of `format`'s calls. Where a model's vocabulary has one as a single control token,
 * the generated text must show it (llama.cpp's preserved tokens), or the parser never sees the call.
 */
export const TOOL_MARKERS: Record<ToolFormat, readonly string[]> = {
  hermes: ["<tool_call>", "</tool_call>"],
  llama3: ["<|python_tag|>"],
  pythonic: [],
  lfm2: ["<|tool_call_start|>", "<|tool_call_end|>"],
  "mistral-nemo": ["[TOOL_CALLS]"],
  mistral: ["[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"],
  "deepseek-r1": DEEPSEEK_MARKERS,
  "deepseek-v3.1": DEEPSEEK_MARKERS,
  "qwen3-coder": ["<tool_call>", "</tool_call>"],
  "command-r7b": ["<|START_ACTION|>", "<|END_ACTION|>", "<|START_RESPONSE|>", "<|END_RESPONSE|>"],
  granite: ["<|tool_call|>"],
  "glm-4.5": ["<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"],
  "kimi-k2": [
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
  ],
};
