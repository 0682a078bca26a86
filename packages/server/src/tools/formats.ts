/** Which tool-call format a chat template teaches its model, read from the template's source. */

/**
 * - `hermes` (Qwen 2.5 / QwQ / Qwen 3, Hermes 2 Pro): each call is `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`,
 *   after optional content; several calls follow one another.
 * - `llama3` (Llama 3.1 / 3.2 JSON tool calling): the whole message is one `{"name": …, "parameters": {…}}`,
 *   optionally after `<|python_tag|>`. The templates render a single call per message (they raise on more).
 */
export type ToolFormat = "hermes" | "llama3";

/** Markers a Llama 3.x template with JSON tool calling contains (any one is enough). */
const LLAMA3_MARKERS = [
  "<|start_header_id|>ipython<|end_header_id|>",
  "<|python_tag|>",
  '{"name": function name, "parameters"',
];

/**
 * The format a chat template uses, from its source; undefined when the template has no tool support that
 * this module knows (the server then refuses `tools` with a 400 naming the template). Like llama.cpp's
 * detection, it looks for the format's own markers: `<tool_call>` → hermes; the ipython header,
 * `<|python_tag|>` or Llama's instruction `{"name": function name, "parameters"` → llama3. A template
 * must also read the `tools` variable, or the model would never see the tools.
 */
export function toolFormatOf(templateSource: string): ToolFormat | undefined {
  if (!/\btools\b/.test(templateSource)) return undefined;
  if (templateSource.includes("<tool_call>")) return "hermes";
  if (LLAMA3_MARKERS.some((m) => templateSource.includes(m))) return "llama3";
  return undefined;
}
