/**
 * Formats whose calls sit in a section of special tokens, one begin/end pair per call inside: DeepSeek R1,
 * DeepSeek V3.1 and Kimi K2. The arguments are a JSON object, streamed as written.
 */

import { argsCall, type JsonCall } from "./json-call.js";
import {
  closeAfter,
  type FormatScanner,
  literal,
  type MarkedFormat,
  MORE,
  type Region,
  type ScanCall,
  type ScanContext,
  scanMarked,
  skipWs,
  TEXT,
} from "./scan.js";

// DeepSeek's markers use U+FF5C (fullwidth vertical line) and U+2581 (lower one eighth block).
const ds = (words: string) => `<\uff5c${words.replace(/ /g, "\u2581")}\uff5c>`;
export const DEEPSEEK = {
  callsBegin: ds("tool calls begin"),
  callsEnd: ds("tool calls end"),
  callBegin: ds("tool call begin"),
  callEnd: ds("tool call end"),
  sep: ds("tool sep"),
} as const;

export const KIMI = {
  sectionBegin: "<|tool_calls_section_begin|>",
  sectionEnd: "<|tool_calls_section_end|>",
  callBegin: "<|tool_call_begin|>",
  argsBegin: "<|tool_call_argument_begin|>",
  callEnd: "<|tool_call_end|>",
} as const;

/** One call at `p`, its `end` past the call's own close marker. */
type OneCall = (s: string, p: number, ctx: ScanContext) => JsonCall;

/** After a call's arguments (at `after`): whitespace, `close`; the markup ends before other text. */
function closeCall(s: string, r: JsonCall & object, close: string, ctx: ScanContext): JsonCall {
  if (r.end === undefined) return r;
  if (r.broken) {
    // Dropped up to the call's close marker; without one by the end, the text after the break is content.
    const k = s.indexOf(close, r.end);
    if (k >= 0) return { ...r, end: k + close.length };
    return ctx.final ? r : { call: r.call, end: undefined };
  }
  const e = closeAfter(s, r.end, close, ctx);
  if (e === undefined) return { call: r.call, end: undefined };
  return e === "none" ? { ...r, broken: true } : { call: r.call, end: e };
}

/**
 * A section: calls (`one`) separated by whitespace until `end`. A call of an unknown tool, or markup
 * that is not a call, ends the section before it (content from there), or makes the section's marker
 * content when no call came before; with `parallel_tool_calls` false the section ends after one call.
 */
function sectionRegion(s: string, i: number, ctx: ScanContext, one: OneCall, end: string): Region {
  const calls: ScanCall[] = [];
  const open = (): Region => (calls.length > 0 ? { kind: "calls", calls, end: undefined } : MORE);
  let p = i;
  for (;;) {
    p = skipWs(s, p);
    if (p >= s.length) return open();
    const e = literal(s, p, end);
    if (typeof e === "number") return { kind: "calls", calls, end: e };
    const r = one(s, p, ctx);
    if (r === "more") return open();
    if (r === "no") return e === "more" ? open() : calls.length > 0 ? { kind: "calls", calls, end: p } : TEXT;
    calls.push(r.call);
    if (r.end === undefined) return open();
    if (r.broken) return { kind: "calls", calls, end: r.end };
    if (!ctx.parallel) {
      const c = closeAfter(s, r.end, end, ctx);
      return c === undefined ? open() : { kind: "calls", calls, end: c === "none" ? r.end : c };
    }
    p = r.end;
  }
}

const TYPE = /[a-z_]*/y;
const NAME = /[A-Za-z0-9_.-]*/y;

/** A run of `re` at `p` (sticky). */
function run(re: RegExp, s: string, p: number): string {
  re.lastIndex = p;
  return re.exec(s)![0];
}

/** `<｜tool▁call▁begin｜>function<｜tool▁sep｜>name\n```json\n{…}\n```<｜tool▁call▁end｜>` */
const r1Call: OneCall = (s, p, ctx) => {
  const a = literal(s, p, DEEPSEEK.callBegin);
  if (typeof a !== "number") return a;
  const t = a + run(TYPE, s, a).length;
  if (t >= s.length) return "more";
  const b = literal(s, t, DEEPSEEK.sep);
  if (typeof b !== "number") return b;
  const name = run(NAME, s, b);
  const q = skipWs(s, b + name.length);
  if (q >= s.length) return "more";
  if (!ctx.tools.has(name)) return "no";
  const f = literal(s, q, "```json");
  if (typeof f !== "number") return f;
  const r = argsCall(s, skipWs(s, f), name, ctx);
  if (typeof r === "string") return r;
  if (r.end === undefined || r.broken) return closeCall(s, r, DEEPSEEK.callEnd, ctx);
  const fence = skipWs(s, r.end);
  const g = literal(s, fence, "```");
  if (g === "more") return { call: r.call, end: ctx.final ? s.length : undefined };
  if (g === "no") return { ...r, broken: true };
  return closeCall(s, { call: r.call, end: g }, DEEPSEEK.callEnd, ctx);
};

/** `<｜tool▁call▁begin｜>name<｜tool▁sep｜>{…}<｜tool▁call▁end｜>` */
const v31Call: OneCall = (s, p, ctx) => {
  const a = literal(s, p, DEEPSEEK.callBegin);
  if (typeof a !== "number") return a;
  const name = run(NAME, s, a);
  const q = a + name.length;
  if (q >= s.length) return "more";
  if (!ctx.tools.has(name)) return "no";
  const b = literal(s, q, DEEPSEEK.sep);
  if (typeof b !== "number") return b;
  const r = argsCall(s, skipWs(s, b), name, ctx);
  return typeof r === "string" ? r : closeCall(s, r, DEEPSEEK.callEnd, ctx);
};

const KIMI_ID = /[^\s<]*/y;

/** `<|tool_call_begin|>functions.name:0<|tool_call_argument_begin|>{…}<|tool_call_end|>`; the id is the model's. */
const kimiCall: OneCall = (s, p, ctx) => {
  const a = literal(s, p, KIMI.callBegin);
  if (typeof a !== "number") return a;
  const i = skipWs(s, a);
  const id = run(KIMI_ID, s, i);
  const q = skipWs(s, i + id.length);
  if (q >= s.length) return "more";
  const m = /^(?:functions\.)?([A-Za-z0-9_-]+):[0-9]+$/.exec(id);
  if (m === null || !ctx.tools.has(m[1]!)) return "no";
  const b = literal(s, q, KIMI.argsBegin);
  if (typeof b !== "number") return b;
  const r = argsCall(s, skipWs(s, b), m[1]!, ctx);
  if (typeof r === "string") return r;
  const withId = { ...r, call: { ...r.call, id } };
  return closeCall(s, withId, KIMI.callEnd, ctx);
};

const format = (begin: string, end: string, one: OneCall): MarkedFormat => ({
  opens: [begin],
  region: (s, i, ctx) => sectionRegion(s, i, ctx, one, end),
});

const R1 = format(DEEPSEEK.callsBegin, DEEPSEEK.callsEnd, r1Call);
const V31 = format(DEEPSEEK.callsBegin, DEEPSEEK.callsEnd, v31Call);
const K2 = format(KIMI.sectionBegin, KIMI.sectionEnd, kimiCall);

export const SECTION_SCANNERS = {
  "deepseek-r1": (s: string, from: number, ctx: ScanContext) => scanMarked(R1, s, from, ctx),
  "deepseek-v3.1": (s: string, from: number, ctx: ScanContext) => scanMarked(V31, s, from, ctx),
  "kimi-k2": (s: string, from: number, ctx: ScanContext) => scanMarked(K2, s, from, ctx),
} satisfies Record<string, FormatScanner>;
