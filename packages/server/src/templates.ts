import { ChatTemplate } from "@minfer/tokenizer";
import { ServerError } from "./server-error.js";

// Chat templates the server knows by name (llama-server's `--chat-template NAME`), and the one it
// falls back to for a model without a template of its own, as llama-server does: ChatML.

/**
 * ChatML: each message as `<|im_start|>ROLE\nCONTENT<|im_end|>\n`, then the assistant's turn
 * opened when a generation prompt is asked for.
 */
const CHATML =
  "{%- for message in messages -%}" +
  "{{- '<|im_start|>' + message['role'] + '\\n' + (message['content'] if message['content'] is string else '') + '<|im_end|>' + '\\n' -}}" +
  "{%- endfor -%}" +
  "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";

const BUILTIN: Record<string, string> = { chatml: CHATML };

/** The names `builtinTemplate` knows. */
export const BUILTIN_TEMPLATES: readonly string[] = Object.keys(BUILTIN);

/** The template of a built-in name (undefined for another name). */
export function builtinTemplate(name: string): ChatTemplate | undefined {
  const source = BUILTIN[name];
  return source === undefined ? undefined : ChatTemplate.parse(source, name);
}

/**
 * llama-server's `--chat-template VALUE`: a built-in name, or a Jinja template given inline (it
 * holds `{{` or `{%`); anything else is an INVALID_ARGUMENT naming the names known.
 */
export function chatTemplateArg(value: string): ChatTemplate {
  const named = builtinTemplate(value);
  if (named) return named;
  if (value.includes("{{") || value.includes("{%")) return ChatTemplate.parse(value, "inline");
  throw new ServerError(
    "INVALID_ARGUMENT",
    `chat template ${JSON.stringify(value.slice(0, 64))} is neither a known name (${BUILTIN_TEMPLATES.join(", ")}) nor a Jinja template`,
  );
}
