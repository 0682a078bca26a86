/**
 * The `input` of a Responses request as chat messages: message items (input_text, output_text and
 * refusal parts), function_call items (joined to the assistant message before them, as llama-server
 * does), function_call_output items, and the model's past reasoning items (their text the assistant
 * message's reasoning_content, as llama-server passes it to the template).
 */

import { invalidField } from "../errors.js";
import { quote } from "../quote.js";

type Obj = Record<string, unknown>;

const bad = invalidField;
const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** A chat message in the making (content parts joined by the chat reader). */
export interface ChatMessage {
  role: string;
  content: { type: "text"; text: string }[] | string;
  tool_calls?: Obj[];
  tool_call_id?: string;
  /** The turn's reasoning items' text (the template renders it where it shows thinking). */
  reasoning_content?: string;
}

function str(v: unknown, where: string): string {
  if (typeof v !== "string") throw bad(where, `must be a string, got ${quote(v)}`);
  return v;
}

/** Content parts a role may send, each to its text. */
function partText(part: unknown, role: string, where: string): string {
  if (!isObject(part)) throw bad(where, "must be a content part object");
  const t = part.type;
  if (t === "input_image" || t === "input_file" || t === "input_audio")
    throw bad(
      `${where}.type`,
      `${quote(t)}: this server reads text only (no images, files or audio)`,
      "unsupported_content",
    );
  if (role === "assistant") {
    if (t === "output_text" || t === "input_text") return str(part.text, `${where}.text`);
    if (t === "refusal") return str(part.refusal, `${where}.refusal`);
    throw bad(`${where}.type`, `must be "output_text" or "refusal" in an assistant message, got ${quote(t)}`);
  }
  if (t === "input_text") return str(part.text, `${where}.text`);
  throw bad(`${where}.type`, `must be "input_text" here, got ${quote(t)}`);
}

const MESSAGE_KEYS = ["type", "role", "content", "id", "status", "phase"];
const CALL_KEYS = ["type", "id", "call_id", "name", "arguments", "status"];
const OUTPUT_KEYS = ["type", "id", "call_id", "output", "status"];
const REASONING_KEYS = ["type", "id", "summary", "content", "encrypted_content", "status"];
const ROLES = ["user", "system", "developer", "assistant"];

/** Keys of an object outside `known`, by path: ignored (reported) or a 400 under strictApi. */
function unknownKeys(o: Obj, known: readonly string[], where: string, strict: boolean, ignored: string[]) {
  for (const k of Object.keys(o))
    if (!known.includes(k)) {
      if (strict) throw bad(`${where}.${k}`, "unknown field (--strict-api)", "unknown_parameter");
      ignored.push(`${where}.${k}`);
    }
}

/**
 * A reasoning item's text: its reasoning_text parts joined. Its summary and encrypted_content are no
 * thinking the model wrote here (nothing this server can read back): reported as ignored when given.
 */
function reasoningText(item: Obj, where: string, strict: boolean, ignored: string[]): string {
  const parts = item.content ?? [];
  if (!Array.isArray(parts)) throw bad(`${where}.content`, "must be an array of reasoning_text parts");
  const text = parts
    .map((p, j) => {
      const w = `${where}.content[${j}]`;
      if (!isObject(p) || p.type !== "reasoning_text")
        throw bad(w, `must be a {"type": "reasoning_text", "text"} part, got ${quote(p)}`);
      return str(p.text, `${w}.text`);
    })
    .join("");
  const summary = item.summary ?? [];
  if (!Array.isArray(summary)) throw bad(`${where}.summary`, "must be an array of summary_text parts");
  const unread = [
    ...(summary.length > 0 ? ["summary"] : []),
    ...(typeof item.encrypted_content === "string" && item.encrypted_content !== ""
      ? ["encrypted_content"]
      : []),
  ];
  for (const k of unread) {
    if (strict)
      throw bad(`${where}.${k}`, "has no effect on this server (--strict-api)", "unsupported_parameter");
    ignored.push(`${where}.${k}`);
  }
  return text;
}

/** `input` (a text, or items) as chat messages, after `instructions`. */
export function inputMessages(input: unknown, strict: boolean, ignored: string[]): ChatMessage[] {
  if (input === undefined || input === null) throw bad("input", "is required", "missing_required_parameter");
  if (typeof input === "string") return [{ role: "user", content: input }];
  if (!Array.isArray(input)) throw bad("input", "must be a text or an array of input items");
  if (input.length === 0) throw bad("input", "must not be empty");
  const out: ChatMessage[] = [];
  const lastAssistant = () => {
    const m = out.at(-1);
    return m?.role === "assistant" ? m : undefined;
  };
  input.forEach((raw, i) => {
    const where = `input[${i}]`;
    if (!isObject(raw)) throw bad(where, "must be an input item object");
    const type = raw.type ?? (raw.role !== undefined ? "message" : undefined);
    if (type === "message") {
      unknownKeys(raw, MESSAGE_KEYS, where, strict, ignored);
      const role = raw.role;
      if (typeof role !== "string" || !ROLES.includes(role))
        throw bad(`${where}.role`, `must be one of ${ROLES.join(", ")}, got ${quote(role)}`);
      let parts: string[];
      if (typeof raw.content === "string") parts = [raw.content];
      else if (Array.isArray(raw.content))
        parts = raw.content.map((p, j) => partText(p, role, `${where}.content[${j}]`));
      else throw bad(`${where}.content`, "must be a text or an array of content parts");
      const content = parts.map((text) => ({ type: "text" as const, text }));
      // (an assistant's items of one turn are one chat message, as llama-server joins them)
      const prev = lastAssistant();
      if (role === "assistant" && prev && prev.tool_calls === undefined && Array.isArray(prev.content))
        prev.content.push(...content);
      else out.push({ role, content });
      return;
    }
    if (type === "function_call") {
      unknownKeys(raw, CALL_KEYS, where, strict, ignored);
      const callId = str(raw.call_id, `${where}.call_id`);
      const name = str(raw.name, `${where}.name`);
      if (name === "") throw bad(`${where}.name`, "must not be empty");
      const call = {
        id: callId,
        type: "function",
        function: { name, arguments: str(raw.arguments, `${where}.arguments`) },
      };
      const prev = lastAssistant();
      if (prev) prev.tool_calls = [...(prev.tool_calls ?? []), call];
      else out.push({ role: "assistant", content: "", tool_calls: [call] });
      return;
    }
    if (type === "function_call_output") {
      unknownKeys(raw, OUTPUT_KEYS, where, strict, ignored);
      const callId = str(raw.call_id, `${where}.call_id`);
      let text: string;
      if (typeof raw.output === "string") text = raw.output;
      else if (Array.isArray(raw.output))
        text = raw.output.map((p, j) => partText(p, "tool", `${where}.output[${j}]`)).join("\n");
      else throw bad(`${where}.output`, "must be a text or an array of input_text parts");
      out.push({ role: "tool", content: text, tool_call_id: callId });
      return;
    }
    if (type === "reasoning") {
      unknownKeys(raw, REASONING_KEYS, where, strict, ignored);
      const text = reasoningText(raw, where, strict, ignored);
      if (text === "") return;
      // (a turn's reasoning, like its message and calls, goes to the assistant message being built)
      const prev = lastAssistant();
      if (!prev) out.push({ role: "assistant", content: [], reasoning_content: text });
      else prev.reasoning_content = prev.reasoning_content ? `${prev.reasoning_content}\n${text}` : text;
      return;
    }
    if (type === "item_reference")
      throw bad(
        `${where}.type`,
        "item_reference needs stored responses, which this server does not keep; send the item itself",
        "unsupported_parameter",
      );
    throw bad(
      `${where}.type`,
      `must be "message", "function_call", "function_call_output" or "reasoning", got ${quote(type)}`,
    );
  });
  return out;
}
