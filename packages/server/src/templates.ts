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

/**
 * Llama 3: `<|start_header_id|>ROLE<|end_header_id|>\n\n` + the trimmed content + `<|eot_id|>` per
 * message (the tokenizer adds the BOS), then the assistant's header.
 */
const LLAMA3 =
  "{%- for message in messages -%}" +
  "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + ((message['content'] if message['content'] is string else '') | trim) + '<|eot_id|>' -}}" +
  "{%- endfor -%}" +
  "{%- if add_generation_prompt -%}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}{%- endif -%}";

/**
 * Command R: `<|START_OF_TURN_TOKEN|>` + the role's token (system, user, chatbot for the assistant)
 * + the trimmed content + `<|END_OF_TURN_TOKEN|>` per message, then the chatbot's turn.
 */
const COMMAND_R =
  "{%- for message in messages -%}" +
  "{%- set role = {'system': '<|SYSTEM_TOKEN|>', 'user': '<|USER_TOKEN|>', 'assistant': '<|CHATBOT_TOKEN|>'}.get(message['role'], '<|USER_TOKEN|>') -%}" +
  "{{- '<|START_OF_TURN_TOKEN|>' + role + ((message['content'] if message['content'] is string else '') | trim) + '<|END_OF_TURN_TOKEN|>' -}}" +
  "{%- endfor -%}" +
  "{%- if add_generation_prompt -%}{{- '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' -}}{%- endif -%}";

const BUILTIN: Record<string, string> = { chatml: CHATML, llama3: LLAMA3, "command-r": COMMAND_R };

/** The names `builtinTemplate` knows. */
export const BUILTIN_TEMPLATES: readonly string[] = Object.keys(BUILTIN);

/** The template of a built-in name (undefined for another name). */
export function builtinTemplate(name: string): ChatTemplate | undefined {
  const source = BUILTIN[name];
  return source === undefined ? undefined : ChatTemplate.parse(source, name);
}

/**
 * llama-server's `--chat-template VALUE`: a built-in name, or a Jinja template given inline (any
 * other text, as llama-server takes it, even without `{{` or `{%`); a single word that is no known
 * name is an INVALID_ARGUMENT naming the names known (a misspelt name, not a template).
 */
export function chatTemplateArg(value: string): ChatTemplate {
  const named = builtinTemplate(value);
  if (named) return named;
  if (value !== "" && !/^[\w.-]+$/.test(value)) return ChatTemplate.parse(value, "inline");
  throw new ServerError(
    "INVALID_ARGUMENT",
    `chat template ${JSON.stringify(value.slice(0, 64))} is neither a known name (${BUILTIN_TEMPLATES.join(", ")}) nor a Jinja template`,
  );
}
