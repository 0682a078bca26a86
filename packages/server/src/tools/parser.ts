/** Tool calls parsed from generated text as it streams, in the model's own format. */

import { randomInt } from "node:crypto";
import { ServerError } from "../server-error.js";
import { scanGeneric } from "./format-generic.js";
import { JSON_SCANNERS } from "./format-json.js";
import { PYTHON_SCANNERS } from "./format-python.js";
import { SECTION_SCANNERS } from "./format-sections.js";
import { XML_SCANNERS } from "./format-xml.js";
import { type CallFormat, type CallIdStyle, callIdStyle } from "./formats.js";
import type { ToolDef } from "./parse.js";
import type { FormatScanner, ScanCall, ScanContext } from "./scan.js";

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
  /** The JSON text of the arguments: the concatenation of the call's streamed argument fragments. */
  arguments: string;
}

export interface ToolCallParserOptions {
  /** `parallel_tool_calls`: look for further calls after the first. Default true. */
  parallel?: boolean;
  /** Makes the id of each call. Default: by the format (`call_` and 24 letters and digits; 9 for Mistral). */
  newId?: () => string;
}

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

const randomAlnum = (n: number) => {
  let s = "";
  for (let i = 0; i < n; i++) s += ALNUM[randomInt(ALNUM.length)];
  return s;
};

/** `call_` and 24 random letters and digits. */
export function newCallId(): string {
  return `call_${randomAlnum(24)}`;
}

const SCANNERS: Record<CallFormat, FormatScanner> = {
  generic: scanGeneric,
  ...JSON_SCANNERS,
  ...PYTHON_SCANNERS,
  ...SECTION_SCANNERS,
  ...XML_SCANNERS,
};

const internal = (what: string) => new ServerError("INTERNAL", `ToolCallParser: ${what}`);

/**
 * Incremental parser of generated text into content and tool calls, in the format of the chat template
 * (formats.ts), or llama.cpp's generic JSON answer for a template without one (format-generic.ts). `push(piece)` returns the content that can be released now and the deltas of the calls:
 * for each call a first delta with index, id, name and `arguments: ""`, then fragments of its arguments'
 * JSON text as the model writes them; `end()` flushes what was held back.
 *
 * **When a call is reported.** Text that might still become call markup is held back (like a stop
 * string's start). A call is reported once its name is known, is one of `tools`, and its arguments have
 * begun (for JSON formats, their `{`): from then on it stands whatever follows. Markup that is not a call
 * before that point (not the format's syntax, a name not among `tools`, arguments that are not an object)
 * is content, as written. With `parallel` false, the text after the first call is content.
 *
 * **The arguments' text**, the rule that makes streaming possible: the fragments of a call, concatenated,
 * are its `arguments`, and nothing sent is ever taken back, only appended to. So the arguments are
 * - in JSON formats, the model's JSON text of the arguments object exactly as written (its spacing and key
 *   order kept), from its `{` to its `}` (arguments given as a JSON string: that string's text, sent once
 *   whole);
 * - in XML- and Python-style formats, the JSON the markup spells, `{"k": v, "k2": v2}` with `": "` and
 *   `", "` between, built as it arrives: a key once whole, a string value character by character (escaped
 *   one UTF-16 unit at a time, so each fragment extends the last), another value once whole, the `}` when
 *   the call's markup closes.
 * A call that is cut off (max_tokens; `end(true)`), or whose markup breaks after it was reported, keeps
 * its arguments as far as they got: a prefix of valid JSON (the client sees it truncated, as OpenAI sends
 * a call cut by max_tokens) — never changed afterwards, since clients have concatenated them already.
 * A cut call's markup that had not yet shown its name is dropped, not made content; at a normal end it is
 * content (it never became a call).
 *
 * Whitespace between and around calls is dropped; so is content's trailing whitespace when calls follow.
 */
export class ToolCallParser {
  readonly #scan: FormatScanner;
  readonly #tools: Map<string, ToolDef>;
  readonly #parallel: boolean;
  readonly #newId: () => string;
  readonly #calls: ParsedToolCall[] = [];
  /** The text from where the next scan starts. */
  #buf = "";
  /** Characters consumed before #buf. */
  #consumed = 0;
  /** Calls found before #buf. */
  #settledCalls = 0;
  /** No call can come any more: the rest is content. */
  #plain = false;
  /** Trailing whitespace of the content, released only if content follows. */
  #heldWs = "";
  /** Right after a call: leading whitespace is dropped. */
  #afterCall = false;
  #ended = false;
  /** Scans that go on where they stopped, valid while #buf only grows (ScanContext.memo). */
  readonly #memo = new Map<string, unknown>();
  /** What the scanner keeps for the whole message (ScanContext.state). */
  readonly #state = new Map<string, unknown>();

  constructor(format: CallFormat, tools: readonly ToolDef[], options: ToolCallParserOptions = {}) {
    this.#scan = SCANNERS[format];
    this.#tools = new Map(tools.map((t) => [t.name, t]));
    this.#parallel = options.parallel ?? true;
    this.#newId = options.newId ?? idMaker(callIdStyle(format));
  }

  /** The calls parsed so far (all of them after end()), with their arguments as far as they go. */
  get calls(): readonly ParsedToolCall[] {
    return this.#calls;
  }

  /** Whether no further call can be parsed (the server may stop generating). */
  get callsComplete(): boolean {
    return this.#calls.length > 0 && this.#plain;
  }

  push(text: string): { content: string; deltas: ToolCallDelta[] } {
    if (this.#ended) throw new ServerError("INTERNAL", "ToolCallParser.push after end()");
    this.#buf += text;
    return this.#step(false, false);
  }

  /** The rest; `cut`: the text was cut off (finish "length"), so unfinished markup is not content. */
  end(cut = false): { content: string; deltas: ToolCallDelta[] } {
    if (this.#ended) throw new ServerError("INTERNAL", "ToolCallParser.end called twice");
    const out = this.#step(true, cut);
    this.#ended = true;
    return out;
  }

  #step(final: boolean, cut: boolean): { content: string; deltas: ToolCallDelta[] } {
    const out = { content: "", deltas: [] as ToolCallDelta[] };
    if (!this.#plain) {
      const ctx: ScanContext = {
        final,
        cut,
        tools: this.#tools,
        parallel: this.#parallel,
        callsBefore: this.#settledCalls,
        atStart: this.#consumed === 0,
        memo: this.#memo,
        state: this.#state,
      };
      const sc = this.#scan(this.#buf, 0, ctx);
      let index = this.#settledCalls;
      let settledCalls = 0;
      sc.items.forEach((item, k) => {
        if (typeof item === "string") {
          if (k >= sc.settled) throw internal("content after an open call");
          this.#content(item, out);
        } else {
          if (k < sc.settled) settledCalls++;
          this.#call(index++, item, out);
        }
      });
      if (index < this.#calls.length) throw internal(`call ${index} was reported, then not found again`);
      this.#settledCalls += settledCalls;
      this.#buf = this.#buf.slice(sc.next);
      if (sc.next > 0) this.#memo.clear(); // (positions moved)
      this.#consumed += sc.next;
      if (sc.plain) this.#plain = true;
    }
    if (this.#plain) {
      this.#content(this.#buf, out);
      this.#consumed += this.#buf.length;
      this.#buf = "";
    }
    if (final) {
      if (this.#calls.length === 0) out.content += this.#heldWs;
      this.#heldWs = "";
      this.#buf = "";
    }
    return out;
  }

  #content(text: string, out: { content: string }): void {
    if (text === "") return;
    if (this.#afterCall) {
      text = text.replace(/^\s+/, "");
      if (text === "") return;
      this.#afterCall = false;
    }
    text = this.#heldWs + text;
    const ws = /\s+$/.exec(text);
    this.#heldWs = ws ? ws[0] : "";
    out.content += text.slice(0, text.length - this.#heldWs.length);
  }

  #call(index: number, c: ScanCall, out: { deltas: ToolCallDelta[] }): void {
    const known = this.#calls[index];
    if (known === undefined) {
      if (index !== this.#calls.length)
        throw internal(`call ${index} found before call ${this.#calls.length}`);
      const call: ParsedToolCall = { id: c.id ?? this.#newId(), name: c.name, arguments: c.args };
      this.#calls.push(call);
      out.deltas.push({ index, id: call.id, name: call.name, arguments: "" });
      if (c.args !== "") out.deltas.push({ index, arguments: c.args });
      this.#heldWs = "";
      this.#afterCall = true;
      return;
    }
    if (known.name !== c.name || !c.args.startsWith(known.arguments))
      throw internal(`call ${index} changed: ${known.name}(${known.arguments}) then ${c.name}(${c.args})`);
    if (c.args.length > known.arguments.length) {
      out.deltas.push({ index, arguments: c.args.slice(known.arguments.length) });
      known.arguments = c.args;
    }
  }
}

function idMaker(style: CallIdStyle): () => string {
  // ("model": the scanner gives the model's id; this one is only used if a call comes without one)
  return style === "mistral" ? () => randomAlnum(9) : newCallId;
}
