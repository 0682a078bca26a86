/**
 * The prompt side of the generic tool-call format, llama.cpp's fallback for a chat template with no tool
 * format of its own: the conversation rewritten so that such a template shows the model the tools, its
 * earlier calls and their results (llama.cpp's chat-template "polyfills"), and told to answer in JSON.
 */

import type { ParsedMessage } from "../request.js";
import type { TemplateCaps } from "./template-caps.js";

/** Added to the system message (llama.cpp's generic handler): what the model is to answer with. */
export const GENERIC_SYSTEM_PROMPT =
  "Respond in JSON format, either with `tool_call` (a request to call tools) or with `response` reply to the user's request";

/** Starts the tools' description in the system message, when the template does not show the tools itself. */
export const TOOLS_PROMPT_PREFIX = "You can call any of the following tools to satisfy the user's requests: ";

/** Put around the template's own rendering of a call, after the tools' description. */
export const EXAMPLE_HEADER = "\n\nExample tool call syntax:\n\n";
export const EXAMPLE_FOOTER = "\n\n";

/**
 * JSON text indented by 2 as llama.cpp's template engine (minja) prints a value for a template: as
 * JSON.stringify(v, null, 2) does, except that an empty array or object still gets its line breaks
 * (`[` newline, the inner indent, newline, the outer indent, `]`).
 */
export function templateJson(value: unknown, level = 0): string {
  const pad = (l: number) => `\n${" ".repeat(2 * l)}`;
  if (value === null || value === undefined) return "null";
  if (Array.isArray(value))
    return `[${pad(level + 1)}${value.map((v) => templateJson(v, level + 1)).join(`,${pad(level + 1)}`)}${pad(level)}]`;
  if (typeof value === "object") {
    const members = Object.entries(value as Record<string, unknown>).map(
      ([k, v]) => `${JSON.stringify(k)}: ${templateJson(v, level + 1)}`,
    );
    return `{${pad(level + 1)}${members.join(`,${pad(level + 1)}`)}${pad(level)}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** JSON indented by 2, as llama.cpp writes the polyfilled calls and results (nlohmann's dump(2)). */
const dump2 = (value: unknown) => JSON.stringify(value, null, 2);

/**
 * The tools as llama.cpp hands them to a template: `{type, function: {name, description, parameters}}`
 * each, the description `""` and the parameters `{}` when the request left them out.
 */
export function normalizedTools(templateTools: readonly unknown[]): unknown[] {
  return templateTools.map((raw) => {
    const fn = ((raw as { function?: unknown }).function ?? {}) as Record<string, unknown>;
    return {
      type: "function",
      function: {
        name: fn.name,
        description: typeof fn.description === "string" ? fn.description : "",
        parameters: fn.parameters === undefined ? {} : fn.parameters,
      },
    };
  });
}

/**
 * `text` as the system message: after the first message's text and a blank line when that message is
 * the system's, else as a new first message.
 */
export function addSystem(messages: readonly ParsedMessage[], text: string): ParsedMessage[] {
  const first = messages[0];
  if (first?.role === "system")
    return [{ role: "system", content: `${first.content ?? ""}\n\n${text}` }, ...messages.slice(1)];
  return [{ role: "system", content: text }, ...messages];
}

/**
 * The system text that describes `tools` to a model whose template does not: the tools as JSON, then
 * the template's own rendering of a call (its `example`, when it has one).
 */
export function toolsPrompt(tools: readonly unknown[], example: string | undefined): string {
  return (
    TOOLS_PROMPT_PREFIX + templateJson(tools) + (example ? EXAMPLE_HEADER + example + EXAMPLE_FOOTER : "")
  );
}

/** Arguments given as JSON text, parsed (kept as the text when it is not JSON). */
function argumentsValue(args: unknown): unknown {
  if (typeof args !== "string") return args;
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}

/** A call of an earlier assistant message as the template would see it. */
interface MessageCall {
  id?: string;
  function: { name: string; arguments: unknown };
}

/**
 * The messages with what the template cannot show written as text it can (llama.cpp's polyfills):
 * - the tools (`tools`, when given and the template does not read them): a system text describing them;
 * - an assistant message's calls (template without calls): its content becomes the JSON
 *   `{"tool_calls": [{"name", "arguments", "id"}], "content"}` (content only when not empty);
 * - a tool result (template without them): a user message whose content is the JSON
 *   `{"tool_response": {"tool", "content", "tool_call_id"}}` (tool only when the message names it);
 * - system messages (template without a system role): their text joined into the next user message (a
 *   new user message when another role comes first, or at the end).
 */
export function polyfillMessages(
  messages: readonly ParsedMessage[],
  caps: TemplateCaps,
  tools?: readonly unknown[],
): ParsedMessage[] {
  const source =
    tools && tools.length > 0 && !caps.tools
      ? addSystem(messages, toolsPrompt(tools, caps.example))
      : messages;
  const out: ParsedMessage[] = [];
  let pendingSystem = "";
  const flushSystem = () => {
    if (pendingSystem === "") return;
    out.push({ role: "user", content: pendingSystem });
    pendingSystem = "";
  };
  for (const original of source) {
    let m: ParsedMessage = { ...original };
    const calls = m.tool_calls as MessageCall[] | undefined;
    if (calls !== undefined && !caps.toolCalls) {
      const obj: Record<string, unknown> = {
        tool_calls: calls.map((c) => ({
          name: c.function.name,
          arguments: argumentsValue(c.function.arguments),
          ...(c.id ? { id: c.id } : {}),
        })),
      };
      if (m.content !== null && m.content !== "") obj.content = m.content;
      const { tool_calls: _calls, ...rest } = m;
      m = { ...rest, content: dump2(obj) };
    }
    if (m.role === "tool" && !caps.toolResponses) {
      const response: Record<string, unknown> = {};
      if (m.name !== undefined) response.tool = m.name;
      response.content = m.content;
      if (m.tool_call_id !== undefined) response.tool_call_id = m.tool_call_id;
      const { name: _name, ...rest } = m;
      m = { ...rest, role: "user", content: dump2({ tool_response: response }) };
    }
    // (by the role the message came with: a tool result made a user message is not merged into)
    const role = original.role;
    if (m.content !== null && !caps.systemRole) {
      if (role === "system") {
        pendingSystem += (pendingSystem === "" ? "" : "\n") + m.content;
        continue;
      }
      if (role === "user") {
        if (pendingSystem !== "") {
          m = { ...m, content: pendingSystem + (m.content === "" ? "" : `\n${m.content}`) };
          pendingSystem = "";
        }
      } else flushSystem();
    }
    out.push(m);
  }
  flushSystem();
  return out;
}

/**
 * The conversation of a request answered in the generic format: the answer format's instruction merged
 * into the system message, then the template's missing parts filled in (see {@link polyfillMessages}),
 * the request's tools (`templateTools`, as given) described as llama.cpp hands them to templates.
 */
export function genericMessages(
  messages: readonly ParsedMessage[],
  caps: TemplateCaps,
  templateTools: readonly unknown[],
): ParsedMessage[] {
  return polyfillMessages(addSystem(messages, GENERIC_SYSTEM_PROMPT), caps, normalizedTools(templateTools));
}
