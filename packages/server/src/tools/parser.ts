/** Tool calls parsed from generated text as it streams, in the model's own format. */

import { randomInt } from "node:crypto";
import { ServerError } from "../server-error.js";
import type { ToolFormat } from "./formats.js";
import type { ToolDef } from "./parse.js";

/** One piece of a streamed tool call (OpenAI's `delta.tool_calls[k]`): the first has id and name. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  name?: string;
  arguments: string;
}

export interface ParsedToolCall {
  id: string;
  name: string;
  /** JSON text of the arguments object (JSON.stringify of it). */
  arguments: string;
}

export interface ToolCallParserOptions {
  /** `parallel_tool_calls`: look for further calls after the first (hermes). Default true. */
  parallel?: boolean;
  /** Makes the id of each call. Default `call_` and 24 random letters and digits. */
  newId?: () => string;
}

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** `call_` and 24 random letters and digits. */
export function newCallId(): string {
  let id = "call_";
  for (let i = 0; i < 24; i++) id += ALNUM[randomInt(ALNUM.length)];
  return id;
}

const OPEN = "<tool_call>";
const CLOSE = "</tool_call>";
const PYTHON_TAG = "<|python_tag|>";
/** Keys a call object may have; a llama3 message whose first key is another one is text. */
const CALL_KEYS = new Set(["name", "type", "arguments", "parameters"]);

const isSpace = (c: string | undefined) => c !== undefined && /\s/.test(c);

/** The length of the longest suffix of `text` that is a proper prefix of `tag`. */
function partialTagLength(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--)
    if (text.endsWith(tag.slice(0, n))) return n;
  return 0;
}

/** Where the top-level JSON value starting at `text[from]` (a `{`) ends, scanning on from a saved state. */
class JsonEndScanner {
  pos: number;
  private depth = 0;
  private inString = false;
  private escaped = false;

  constructor(from: number) {
    this.pos = from;
  }

  /** The index just past the value's closing brace, or -1 while it is still open. */
  scan(text: string): number {
    for (; this.pos < text.length; this.pos++) {
      const c = text[this.pos];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === "\\") this.escaped = true;
        else if (c === '"') this.inString = false;
      } else if (c === '"') this.inString = true;
      else if (c === "{" || c === "[") this.depth++;
      else if (c === "}" || c === "]") {
        this.depth--;
        if (this.depth === 0) return ++this.pos;
      }
    }
    return -1;
  }
}

type State =
  /** hermes: text, watching for `<tool_call>`. */
  | "text"
  /** hermes: inside `<tool_call>`, waiting for `</tool_call>`. */
  | "call"
  /** llama3: at the start of the message, not yet known to be text or a call. */
  | "start"
  /** llama3: inside the JSON of what may be a call. */
  | "json"
  /** Text where no call can start any more (after a call that ends the message, or a message that is text). */
  | "plain";

/**
 * Incremental parser of generated text into content and tool calls. `push(piece)` returns the content that
 * can be released now (text that might still become a call is held back, like stop strings; so is trailing
 * whitespace, dropped when a call follows) and the deltas of the calls completed so far: for each call a
 * first delta with index, id, name and `arguments: ""`, then one with the arguments' JSON text. `end()`
 * flushes: held-back text that never became a call is content, and so is an unterminated or malformed call,
 * or a call of a function not among `tools` (never dropped). Whitespace between and around calls is dropped.
 *
 * - hermes: `<tool_call>` JSON `</tool_call>` anywhere, several in a row unless `parallel` is false (then
 *   text after the first call, calls included, is content).
 * - llama3: the message is a call only if it starts (after whitespace and an optional `<|python_tag|>`)
 *   with `{` and that JSON value is `{"name", "parameters" | "arguments"}`; text after it is content.
 *   It is held back from the `{` until the value closes, or until its first key shows it is not a call.
 *
 * A call object is `{"name": <a tool's name>, "arguments" | "parameters": <object, or JSON text of one>}`,
 * optionally with `"type": "function"`; missing arguments are `{}`.
 */
export class ToolCallParser {
  readonly #names: Set<string>;
  readonly #parallel: boolean;
  readonly #newId: () => string;
  readonly #calls: ParsedToolCall[] = [];
  #state: State;
  /** Received text not yet released or decided. */
  #buf = "";
  /** hermes: whitespace before a `<tool_call>`, released only if the call turns out to be text. */
  #gap = "";
  /** hermes "call": where in #buf the search for `</tool_call>` resumes (what was searched cannot hold it). */
  #closeFrom = 0;
  /** Whether leading whitespace is being dropped (right after a call). */
  #afterCall = false;
  /** llama3 "json": where the `{` is in #buf, and the scan for its end. */
  #jsonStart = 0;
  #scanner: JsonEndScanner | undefined;
  #ended = false;

  constructor(format: ToolFormat, tools: readonly ToolDef[], options: ToolCallParserOptions = {}) {
    this.#names = new Set(tools.map((t) => t.name));
    this.#parallel = options.parallel ?? true;
    this.#newId = options.newId ?? newCallId;
    this.#state = format === "hermes" ? "text" : "start";
  }

  /** The whole calls parsed so far (all of them after end()). */
  get calls(): readonly ParsedToolCall[] {
    return this.#calls;
  }

  /** Whether no further call can be parsed (the server may stop generating). */
  get callsComplete(): boolean {
    return this.#calls.length > 0 && this.#state === "plain";
  }

  push(text: string): { content: string; deltas: ToolCallDelta[] } {
    if (this.#ended) throw new ServerError("INTERNAL", "ToolCallParser.push after end()");
    this.#buf += text;
    return this.#step(false);
  }

  end(): { content: string; deltas: ToolCallDelta[] } {
    if (this.#ended) throw new ServerError("INTERNAL", "ToolCallParser.end called twice");
    const out = this.#step(true);
    this.#ended = true;
    return out;
  }

  #step(final: boolean): { content: string; deltas: ToolCallDelta[] } {
    const out = { content: "", deltas: [] as ToolCallDelta[] };
    for (;;) {
      if (this.#afterCall) {
        let i = 0;
        while (isSpace(this.#buf[i])) i++;
        this.#buf = this.#buf.slice(i);
        if (this.#buf === "") break;
        this.#afterCall = false;
      }
      const go =
        this.#state === "call"
          ? this.#inCall(final, out)
          : this.#state === "start"
            ? this.#atStart(final, out)
            : this.#state === "json"
              ? this.#inJson(final, out)
              : this.#inText(final, out);
      if (!go) break;
    }
    return out;
  }

  /** "text" / "plain": release what cannot start a call; true when a `<tool_call>` was entered. */
  #inText(final: boolean, out: { content: string }): boolean {
    const buf = this.#buf;
    if (this.#state === "text") {
      const k = buf.indexOf(OPEN);
      if (k >= 0) {
        let j = k;
        while (j > 0 && isSpace(buf[j - 1])) j--;
        out.content += buf.slice(0, j);
        this.#gap = buf.slice(j, k);
        this.#buf = buf.slice(k + OPEN.length);
        this.#state = "call";
        return true;
      }
    }
    if (final) {
      out.content += this.#calls.length > 0 ? buf.trimEnd() : buf;
      this.#buf = "";
      return false;
    }
    let j = buf.length - (this.#state === "text" ? partialTagLength(buf, OPEN) : 0);
    while (j > 0 && isSpace(buf[j - 1])) j--;
    out.content += buf.slice(0, j);
    this.#buf = buf.slice(j);
    return false;
  }

  /** hermes "call": a whole `<tool_call>…</tool_call>` becomes a call, or text. */
  #inCall(final: boolean, out: { content: string; deltas: ToolCallDelta[] }): boolean {
    const k = this.#buf.indexOf(CLOSE, this.#closeFrom);
    if (k < 0) {
      this.#closeFrom = Math.max(0, this.#buf.length - CLOSE.length + 1);
      if (final) {
        out.content += this.#gap + OPEN + this.#buf;
        this.#buf = "";
      }
      return false;
    }
    this.#closeFrom = 0;
    const body = this.#buf.slice(0, k);
    this.#buf = this.#buf.slice(k + CLOSE.length);
    if (this.#accept(body, out)) {
      this.#state = this.#parallel ? "text" : "plain";
    } else {
      out.content += this.#gap + OPEN + body + CLOSE;
      this.#state = "text";
    }
    this.#gap = "";
    return true;
  }

  /** llama3 "start": whitespace and `<|python_tag|>` are held until a `{` (a possible call) or other text. */
  #atStart(final: boolean, out: { content: string }): boolean {
    const buf = this.#buf;
    let i = 0;
    while (isSpace(buf[i])) i++;
    if (buf.startsWith(PYTHON_TAG, i)) {
      i += PYTHON_TAG.length;
      while (isSpace(buf[i])) i++;
    } else if (i < buf.length && PYTHON_TAG.startsWith(buf.slice(i))) {
      i = buf.length; // a partial tag: undecided
    }
    if (i >= buf.length) {
      if (final) {
        out.content += buf;
        this.#buf = "";
      }
      return false;
    }
    if (buf[i] === "{") {
      this.#jsonStart = i;
      this.#scanner = new JsonEndScanner(i);
      this.#state = "json";
    } else {
      this.#state = "plain";
    }
    return true;
  }

  /** llama3 "json": wait for the value to close, or for its start to show it is not a call. */
  #inJson(final: boolean, out: { content: string; deltas: ToolCallDelta[] }): boolean {
    const end = this.#scanner!.scan(this.#buf);
    if (end < 0) {
      if (final || !this.#mayBeCall(this.#buf.slice(this.#jsonStart))) this.#state = "plain";
      return this.#state === "plain";
    }
    if (this.#accept(this.#buf.slice(this.#jsonStart, end), out)) {
      this.#buf = this.#buf.slice(end);
    }
    this.#state = "plain";
    return true;
  }

  /** Whether the start of an unfinished JSON object can still be a call (its first key is a call's key). */
  #mayBeCall(json: string): boolean {
    const m = /^\{\s*/.exec(json)!;
    const rest = json.slice(m[0].length);
    if (rest === "") return true;
    if (rest[0] !== '"') return false;
    const key = /^"((?:[^"\\]|\\.)*)"/.exec(rest);
    if (key === null) return true;
    try {
      return CALL_KEYS.has(JSON.parse(`"${key[1]}"`));
    } catch {
      return false;
    }
  }

  /** If `json` is a call of a known tool: record it, emit its deltas, drop the whitespace after it; true. */
  #accept(json: string, out: { deltas: ToolCallDelta[] }): boolean {
    const args = this.#callArguments(json);
    if (args === undefined) return false;
    const call: ParsedToolCall = { id: this.#newId(), name: args.name, arguments: args.arguments };
    const index = this.#calls.length;
    this.#calls.push(call);
    out.deltas.push(
      { index, id: call.id, name: call.name, arguments: "" },
      { index, arguments: call.arguments },
    );
    this.#afterCall = true;
    return true;
  }

  /** The name and arguments' JSON text of a call object, or undefined when `json` is not a call of a known tool. */
  #callArguments(json: string): { name: string; arguments: string } | undefined {
    let v: unknown;
    try {
      v = JSON.parse(json);
    } catch {
      return undefined;
    }
    if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
    const o = v as Record<string, unknown>;
    if (Object.keys(o).some((k) => !CALL_KEYS.has(k))) return undefined;
    if (o.type !== undefined && o.type !== "function") return undefined;
    if (typeof o.name !== "string" || !this.#names.has(o.name)) return undefined;
    if (o.arguments !== undefined && o.parameters !== undefined) return undefined;
    let args = o.arguments ?? o.parameters ?? {};
    if (typeof args === "string") {
      try {
        args = JSON.parse(args);
      } catch {
        return undefined;
      }
    }
    if (typeof args !== "object" || args === null || Array.isArray(args)) return undefined;
    return { name: o.name, arguments: JSON.stringify(args) };
  }
}
