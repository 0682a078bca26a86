/**
 * Reading the generic format's answer (llama.cpp's fallback for templates with no tool format): one JSON
 * object, `{"tool_call": {"name": …, "arguments": {…}}}`, `{"tool_calls": [{…}, …]}` or
 * `{"response": "…"}`. The reply's string is the message's content, streamed as it is decoded; calls
 * are read as in the other JSON formats.
 */

import { arrayRegion } from "./format-json.js";
import { type CallKeys, jsonCall } from "./json-call.js";
import { scanJson, scanString, skipJsonWs } from "./json-scan.js";
import type { FormatScanner, Scan, ScanContext, ScanItem } from "./scan.js";

/** The keys of a generic call object (`id`: the model's own, written when calls are parallel). */
const CALL_KEYS: CallKeys = { name: ["name"], args: ["arguments"], other: ["id"] };

/** ScanContext.state's key: where the scan stands once it has left the answer's start. */
const MODE = "generic";
/** Inside the reply's string: the text goes on with its characters. */
const IN_REPLY = "reply";
/** The answer is read: what follows (its closing brace) is dropped. */
const DONE = "done";

const ESCAPED: Record<string, string> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
};

const HEX4 = /^[0-9a-fA-F]{4}$/;
const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;

/**
 * The reply string's characters from `s[i]` (just inside it) on, decoded: up to its closing quote (the
 * answer is then read), else as far as they can be decoded now. An escape cut by the text's end, and a
 * surrogate whose pair may follow, wait for more text (at the end, the unfinished escape is dropped). An
 * escape JSON does not have gives the character after the backslash.
 */
function replyText(s: string, i: number, ctx: ScanContext): Scan {
  let out = "";
  let p = i;
  let closed = false;
  while (p < s.length) {
    const c = s[p]!;
    if (c === '"') {
      closed = true;
      p++;
      break;
    }
    if (c !== "\\") {
      if (isHigh(s.charCodeAt(p)) && p + 1 >= s.length && !ctx.final) break;
      out += c;
      p++;
      continue;
    }
    const e = s[p + 1];
    if (e === undefined) break;
    if (e !== "u") {
      out += ESCAPED[e] ?? e;
      p += 2;
      continue;
    }
    const hex = s.slice(p + 2, p + 6);
    if (hex.length < 4) break;
    if (!HEX4.test(hex)) {
      out += e;
      p += 2;
      continue;
    }
    const code = Number.parseInt(hex, 16);
    // (the first half of a surrogate pair waits for room for the second, so that a piece never ends
    // between the two)
    if (isHigh(code) && p + 12 > s.length && !ctx.final) break;
    out += String.fromCharCode(code);
    p += 6;
  }
  ctx.state.set(MODE, closed ? DONE : IN_REPLY);
  const items: ScanItem[] = out === "" ? [] : [out];
  return { items, settled: items.length, next: ctx.final && !closed ? s.length : p };
}

/** The answer's first key and where its value starts, "more" before they are known, "no" when not JSON of an object. */
function head(s: string): { key: string; value: number } | "more" | "no" {
  let p = skipJsonWs(s, 0);
  if (p >= s.length) return "more";
  if (s[p] !== "{") return "no";
  p = skipJsonWs(s, p + 1);
  if (p >= s.length) return "more";
  const e = scanString(s, p);
  if (typeof e !== "number") return e;
  const key = JSON.parse(s.slice(p, e)) as string;
  p = skipJsonWs(s, e);
  if (p >= s.length) return "more";
  if (s[p] !== ":") return "no";
  const value = skipJsonWs(s, p + 1);
  return value >= s.length ? "more" : { key, value };
}

/**
 * The generic format's scanner. Until the answer shows what it is, the text is held; an answer that is not
 * one of the three shapes (not JSON, another key, a call of a tool not in the request) is content, as
 * written. Calls are reported as in the other JSON formats (once the name is known and the arguments'
 * `{` has come; their text streamed as written); a reply that is not a string (a response_format schema's
 * value) is content once whole, as JSON indented by 2 (llama.cpp's dump). Text after the answer is dropped.
 * At a cut end (max_tokens), an answer that has not shown its shape is dropped; at a normal end it is
 * content.
 */
export const scanGeneric: FormatScanner = (s, from, ctx): Scan => {
  const mode = ctx.state.get(MODE);
  if (mode === DONE) return { items: [], settled: 0, next: s.length };
  if (mode === IN_REPLY) return replyText(s, from, ctx);
  // Before that, the text is held whole and read from the message's start.
  const hold: Scan = { items: [], settled: 0, next: 0 };
  const plain: Scan = { items: [], settled: 0, next: 0, plain: true };
  const undecided = (): Scan =>
    !ctx.final ? hold : ctx.cut ? { items: [], settled: 0, next: s.length } : plain;
  const done = (items: ScanItem[], next: number): Scan => {
    ctx.state.set(MODE, DONE);
    return { items, settled: items.length, next };
  };
  const h = head(s);
  if (h === "more") return undecided();
  if (h === "no") return plain;
  const v = h.value;
  if (h.key === "response") {
    if (s[v] === '"') return replyText(s, v + 1, ctx);
    const e = scanJson(s, v, ctx.memo);
    if (typeof e === "number") return done([JSON.stringify(JSON.parse(s.slice(v, e)), null, 2)], e);
    if (e === "no") return plain;
    return ctx.final ? done([s.slice(v)], s.length) : hold;
  }
  if (h.key === "tool_call") {
    const r = jsonCall(s, v, CALL_KEYS, ctx);
    if (r === "more") return undecided();
    if (r === "no") return plain;
    return r.end === undefined ? { items: [r.call], settled: 0, next: 0 } : done([r.call], r.end);
  }
  if (h.key === "tool_calls") {
    const r = arrayRegion(s, v, ctx, CALL_KEYS);
    if (r.kind === "more") return undecided();
    if (r.kind === "text") return plain;
    return r.end === undefined ? { items: r.calls, settled: 0, next: 0 } : done(r.calls, r.end);
  }
  return plain;
};
