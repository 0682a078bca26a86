/**
 * The content of a Messages request as chat messages: `system` (a text or text blocks) and each
 * message's blocks (text, tool_use → the assistant's tool_calls, tool_result → tool messages, the
 * model's past thinking → the assistant's reasoning_content, as llama-server passes it to the
 * template; images, documents and server tools refused by name).
 */

import { invalidField } from "../errors.js";
import { quote } from "../quote.js";

type Obj = Record<string, unknown>;

const bad = invalidField;
const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const given = (v: unknown) => v !== undefined && v !== null;

/**
 * Claude Code's system prompt opens with a billing line whose `cch=` stamp changes every request,
 * which would end the reuse of the cached prompt right there: the stamp is blanked, as llama-server
 * does (the line means nothing to a local model).
 */
function steadyBillingLine(text: string): string {
  if (!text.startsWith("x-anthropic-billing-header:")) return text;
  return text.replace(/\bcch=[0-9a-zA-Z]{5};/, "cch=fffff;");
}

export interface ChatMessage {
  role: string;
  content: string | { type: "text"; text: string }[];
  tool_calls?: Obj[];
  tool_call_id?: string;
  /** The assistant's thinking blocks, joined (the template renders it where it shows thinking). */
  reasoning_content?: string;
}

/** Reads a request's fields, noting those without effect (a 400 under strictApi). */
export class Reader {
  readonly ignored: string[] = [];
  constructor(readonly strict: boolean) {}

  /** Keys outside `known`: reported as ignored, or a 400 under strictApi. */
  keys(o: Obj, known: readonly string[], where: string): void {
    for (const k of Object.keys(o))
      if (!known.includes(k)) this.noEffect(where === "" ? k : `${where}.${k}`, "unknown field");
  }

  noEffect(param: string, why = "has no effect on this server"): void {
    if (this.strict) throw bad(param, `${why} (--strict-api)`, "unknown_parameter");
    this.ignored.push(param);
  }
}

const TEXT_KEYS = ["type", "text", "cache_control", "citations"];

/** A text block's text (`system` and message content). */
function textOf(block: Obj, where: string, r: Reader): string {
  r.keys(block, TEXT_KEYS, where);
  if (typeof block.text !== "string") throw bad(`${where}.text`, "must be a string");
  return block.text;
}

const unsupported = (where: string, type: unknown) =>
  bad(
    `${where}.type`,
    `${quote(type)} blocks are not supported: this server reads text only (no images or documents) and runs no server tools`,
    "unsupported_content",
  );

/** tool_result content: a text, or text blocks (joined by a newline). */
function toolResultText(v: unknown, where: string, r: Reader): string {
  if (!given(v)) return "";
  if (typeof v === "string") return v;
  if (!Array.isArray(v)) throw bad(where, "must be a text or an array of text blocks");
  return v
    .map((b, k) => {
      const w = `${where}[${k}]`;
      if (!isObject(b)) throw bad(w, "must be a content block");
      if (b.type !== "text") throw unsupported(w, b.type);
      return textOf(b, w, r);
    })
    .join("\n");
}

/** One Messages message as chat messages (a user's tool results are tool messages of their own). */
export function chatMessages(m: unknown, i: number, r: Reader): ChatMessage[] {
  const where = `messages[${i}]`;
  if (!isObject(m)) throw bad(where, "must be a message object {role, content}");
  r.keys(m, ["role", "content"], where);
  const role = m.role;
  if (role !== "user" && role !== "assistant")
    throw bad(`${where}.role`, `must be "user" or "assistant", got ${quote(role)}`);
  if (typeof m.content === "string") return [{ role, content: m.content }];
  if (!Array.isArray(m.content))
    throw bad(`${where}.content`, "must be a text or an array of content blocks");
  const out: ChatMessage[] = [];
  let text: { type: "text"; text: string }[] = [];
  const calls: Obj[] = [];
  let reasoning = "";
  const flush = () => {
    if (text.length > 0) out.push({ role, content: text });
    text = [];
  };
  m.content.forEach((b, j) => {
    const w = `${where}.content[${j}]`;
    if (!isObject(b)) throw bad(w, "must be a content block object");
    switch (b.type) {
      case "text":
        text.push({ type: "text", text: textOf(b, w, r) });
        return;
      case "tool_use": {
        if (role !== "assistant") throw bad(`${w}.type`, "tool_use blocks belong to assistant messages");
        r.keys(b, ["type", "id", "name", "input", "cache_control", "caller"], w);
        if (typeof b.id !== "string" || b.id === "") throw bad(`${w}.id`, "must be a non-empty string");
        if (typeof b.name !== "string" || b.name === "") throw bad(`${w}.name`, "must be a non-empty string");
        if (!isObject(b.input)) throw bad(`${w}.input`, "must be an object (the tool's arguments)");
        calls.push({
          id: b.id,
          type: "function",
          function: { name: b.name, arguments: JSON.stringify(b.input) },
        });
        return;
      }
      case "tool_result": {
        if (role !== "user") throw bad(`${w}.type`, "tool_result blocks belong to user messages");
        r.keys(b, ["type", "tool_use_id", "content", "is_error", "cache_control"], w);
        if (typeof b.tool_use_id !== "string" || b.tool_use_id === "")
          throw bad(`${w}.tool_use_id`, "must be a non-empty string");
        if (given(b.is_error) && typeof b.is_error !== "boolean")
          throw bad(`${w}.is_error`, "must be a boolean");
        flush(); // (the text before a result stays before it)
        out.push({
          role: "tool",
          content: toolResultText(b.content, `${w}.content`, r),
          tool_call_id: b.tool_use_id,
        });
        return;
      }
      // Earlier turns' thinking, for the template (which decides which turns show it). Blocks join
      // with nothing between, as llama-server joins them.
      case "thinking":
        if (role !== "assistant") throw bad(`${w}.type`, "thinking blocks belong to assistant messages");
        r.keys(b, ["type", "thinking", "signature", "cache_control"], w);
        if (typeof b.thinking !== "string") throw bad(`${w}.thinking`, "must be a string");
        reasoning += b.thinking;
        return;
      // (encrypted thinking: nothing a local model can read, as llama-server skips it)
      case "redacted_thinking":
        if (role !== "assistant")
          throw bad(`${w}.type`, "redacted_thinking blocks belong to assistant messages");
        r.keys(b, ["type", "data", "cache_control"], w);
        return;
      default:
        throw unsupported(w, b.type);
    }
  });
  if (role === "assistant") {
    const msg: ChatMessage = { role, content: text.length > 0 ? text : "" };
    if (calls.length > 0) msg.tool_calls = calls;
    if (reasoning !== "") msg.reasoning_content = reasoning;
    return [msg];
  }
  flush();
  return out;
}

export function systemMessage(v: unknown, r: Reader): ChatMessage | undefined {
  if (!given(v)) return undefined;
  if (typeof v === "string") return { role: "system", content: steadyBillingLine(v) };
  if (!Array.isArray(v)) throw bad("system", "must be a text or an array of text blocks");
  const parts = v.map((b, k) => {
    if (!isObject(b) || b.type !== "text")
      throw bad(`system[${k}]`, 'must be a {"type": "text", "text"} block');
    return { type: "text" as const, text: steadyBillingLine(textOf(b, `system[${k}]`, r)) };
  });
  return parts.length > 0 ? { role: "system", content: parts } : undefined;
}
