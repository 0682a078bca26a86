/**
 * Formats whose calls are JSON objects: hermes (`<tool_call>` blocks), Llama 3 (the message is the call),
 * Mistral (`[TOOL_CALLS]` arrays, or `[TOOL_CALLS]name[ARGS]{…}`), Granite (`<|tool_call|>` arrays) and
 * Command R7B (`<|START_ACTION|>` arrays).
 */

import { argsCall, type CallKeys, jsonCall } from "./json-call.js";
import { kwargsCall } from "./python-call.js";
import {
  closeAfter,
  type FormatScanner,
  literal,
  type MarkedFormat,
  MORE,
  type Region,
  type Scan,
  type ScanCall,
  type ScanContext,
  scanMarked,
  skipWs,
  TEXT,
} from "./scan.js";

const OPENAI_KEYS: CallKeys = { name: ["name"], args: ["arguments", "parameters"], other: [] };

/** One call object after whitespace, then whitespace and `close`. */
function blockRegion(s: string, i: number, ctx: ScanContext, keys: CallKeys, close: string): Region {
  const p = skipWs(s, i);
  const r = jsonCall(s, p, keys, ctx);
  if (r === "more") return MORE;
  if (r === "no") return TEXT;
  if (r.end === undefined) return { kind: "calls", calls: [r.call], end: undefined };
  if (r.broken) {
    // The markup broke inside the call: dropped up to its close marker; without one by the end, the text
    // after the break is content.
    const k = s.indexOf(close, r.end);
    return { kind: "calls", calls: [r.call], end: k >= 0 ? k + close.length : ctx.final ? r.end : undefined };
  }
  const end = closeAfter(s, r.end, close, ctx);
  return { kind: "calls", calls: [r.call], end: end === "none" ? r.end : end };
}

/**
 * A JSON array of call objects at `i` (after whitespace), then whitespace and `close` when given. An item
 * that is not a call ends the markup before it when calls came before (the rest is content), and makes
 * the whole marker content when it is the first; with `parallel_tool_calls` false the markup ends after
 * the first call.
 */
export function arrayRegion(s: string, i: number, ctx: ScanContext, keys: CallKeys, close?: string): Region {
  let p = skipWs(s, i);
  if (p >= s.length) return MORE;
  if (s[p] !== "[") return TEXT;
  const calls: ScanCall[] = [];
  const open = (): Region => (calls.length > 0 ? { kind: "calls", calls, end: undefined } : MORE);
  p++;
  for (;;) {
    p = skipWs(s, p);
    if (p >= s.length) return open();
    if (s[p] === "]" && calls.length === 0) return { kind: "calls", calls, end: tail(p + 1) };
    const r = jsonCall(s, p, keys, ctx);
    if (r === "more") return open();
    if (r === "no") return calls.length > 0 ? { kind: "calls", calls, end: p } : TEXT;
    calls.push(r.call);
    if (r.end === undefined) return open();
    if (r.broken || !ctx.parallel) return { kind: "calls", calls, end: r.end };
    const q = skipWs(s, r.end);
    if (q >= s.length) return open();
    if (s[q] === ",") p = q + 1;
    else if (s[q] === "]") return { kind: "calls", calls, end: tail(q + 1) };
    else return { kind: "calls", calls, end: r.end };
  }

  function tail(after: number): number | undefined {
    if (close === undefined) return after;
    const e = closeAfter(s, after, close, ctx);
    return e === "none" ? after : e;
  }
}

const HERMES: MarkedFormat = {
  opens: ["<tool_call>"],
  region: (s, i, ctx) => blockRegion(s, i, ctx, OPENAI_KEYS, "</tool_call>"),
};

const MISTRAL_NEMO: MarkedFormat = {
  opens: ["[TOOL_CALLS]"],
  region: (s, i, ctx) => arrayRegion(s, i, ctx, { name: ["name"], args: ["arguments"], other: ["id"] }),
};

const GRANITE: MarkedFormat = {
  opens: ["<|tool_call|>"],
  region: (s, i, ctx) => arrayRegion(s, i, ctx, { name: ["name"], args: ["arguments"], other: [] }),
};

const COMMAND_R7B: MarkedFormat = {
  opens: ["<|START_ACTION|>"],
  drop: ["<|START_RESPONSE|>", "<|END_RESPONSE|>"],
  region: (s, i, ctx) =>
    arrayRegion(
      s,
      i,
      ctx,
      { name: ["tool_name"], args: ["parameters"], other: ["tool_call_id"] },
      "<|END_ACTION|>",
    ),
};

/** A function name as Mistral writes it before `[ARGS]` / `[CALL_ID]`. */
const NAME = /[A-Za-z0-9_.-]*/y;

/** Mistral 3.2+: `name[ARGS]{…}` or `name[CALL_ID]id[ARGS]{…}` after `[TOOL_CALLS]`. */
const MISTRAL: MarkedFormat = {
  opens: ["[TOOL_CALLS]"],
  region(s, i, ctx) {
    NAME.lastIndex = i;
    const name = NAME.exec(s)![0];
    let p = i + name.length;
    if (p >= s.length) return MORE;
    if (name === "" || !ctx.tools.has(name)) return TEXT;
    const id = literal(s, p, "[CALL_ID]");
    if (id === "more") return MORE;
    if (typeof id === "number") {
      p = id;
      while (p < s.length && /[A-Za-z0-9]/.test(s[p]!)) p++;
    }
    const a = literal(s, p, "[ARGS]");
    if (a === "more") return MORE;
    if (a === "no") return TEXT;
    const r = argsCall(s, skipWs(s, a), name, ctx);
    if (r === "more") return MORE;
    if (r === "no") return TEXT;
    return { kind: "calls", calls: [r.call], end: r.end };
  },
};

const PYTHON_TAG = "<|python_tag|>";

/**
 * Llama 3: the message is a call when it starts (after whitespace and an optional `<|python_tag|>`) with
 * a `{"name", "parameters" | "arguments"}` object, or, after `<|python_tag|>`, with `name.call(k=v, …)` of
 * a known tool (a built-in tool's call); text after the call is content, and so is a message that starts
 * otherwise.
 */
const scanLlama3: FormatScanner = (s, from, ctx): Scan => {
  if (!ctx.atStart || from > 0) return { items: [], settled: 0, next: from, plain: true };
  const hold: Scan = { items: [], settled: 0, next: 0 };
  const plain: Scan = { items: [], settled: 0, next: 0, plain: true };
  // Undecided at the end: dropped when cut off, else content.
  const undecided = (): Scan =>
    !ctx.final ? hold : ctx.cut ? { items: [], settled: 0, next: s.length } : plain;
  let p = skipWs(s, 0);
  let tagged = false;
  const t = literal(s, p, PYTHON_TAG);
  if (t === "more") return p >= s.length ? (ctx.final ? plain : hold) : undecided();
  if (typeof t === "number") {
    tagged = true;
    p = skipWs(s, t);
  }
  if (p >= s.length) return undecided();
  let r: ReturnType<typeof jsonCall>;
  if (s[p] === "{") r = jsonCall(s, p, OPENAI_KEYS, ctx);
  else if (tagged) r = kwargsCall(s, p, ctx, ".call(");
  else return plain;
  if (r === "more") return undecided();
  if (r === "no") return plain;
  if (r.end === undefined) return { items: [r.call], settled: 0, next: 0 };
  return { items: [r.call], settled: 1, next: r.end, plain: true };
};

/** The scanners of the JSON formats. */
export const JSON_SCANNERS = {
  hermes: (s: string, from: number, ctx: ScanContext) => scanMarked(HERMES, s, from, ctx),
  "mistral-nemo": (s: string, from: number, ctx: ScanContext) => scanMarked(MISTRAL_NEMO, s, from, ctx),
  mistral: (s: string, from: number, ctx: ScanContext) => scanMarked(MISTRAL, s, from, ctx),
  granite: (s: string, from: number, ctx: ScanContext) => scanMarked(GRANITE, s, from, ctx),
  "command-r7b": (s: string, from: number, ctx: ScanContext) => scanMarked(COMMAND_R7B, s, from, ctx),
  llama3: scanLlama3,
} satisfies Record<string, FormatScanner>;
