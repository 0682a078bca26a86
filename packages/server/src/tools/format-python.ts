/**
 * Python-style call lists, `[f(a=1), g(b="x")]`: at the start of the message (Llama's "pythonic" prompts),
 * or inside `<|tool_call_start|>…<|tool_call_end|>` anywhere (LFM2).
 */

import { kwargsCall } from "./python-call.js";
import {
  closeAfter,
  type FormatScanner,
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

/**
 * A list of calls at `i` (after whitespace), then whitespace and `close` when given. As the JSON arrays of
 * format-json.ts: an item that is not a call ends the list before it (content from there), or makes the
 * whole list content when it is the first; with `parallel_tool_calls` false the list ends after one call.
 */
function listRegion(s: string, i: number, ctx: ScanContext, close?: string): Region {
  let p = skipWs(s, i);
  if (p >= s.length) return MORE;
  if (s[p] !== "[") return TEXT;
  const calls: ScanCall[] = [];
  const open = (): Region => (calls.length > 0 ? { kind: "calls", calls, end: undefined } : MORE);
  const tail = (after: number): number | undefined => {
    if (close === undefined) return after;
    const e = closeAfter(s, after, close, ctx);
    return e === "none" ? after : e;
  };
  p++;
  for (;;) {
    p = skipWs(s, p);
    if (p >= s.length) return open();
    const r = kwargsCall(s, p, ctx, "(");
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
}

const LFM2: MarkedFormat = {
  opens: ["<|tool_call_start|>"],
  region: (s, i, ctx) => listRegion(s, i, ctx, "<|tool_call_end|>"),
};

/** The message's start is a call list, or the message is content; text after the list is content. */
const scanPythonic: FormatScanner = (s, from, ctx): Scan => {
  if (!ctx.atStart || from > 0) return { items: [], settled: 0, next: from, plain: true };
  const plain: Scan = { items: [], settled: 0, next: 0, plain: true };
  const p = skipWs(s, 0);
  if (p >= s.length) return ctx.final ? plain : { items: [], settled: 0, next: 0 };
  const r = listRegion(s, p, ctx);
  if (r.kind === "text") return plain;
  if (r.kind === "more") {
    if (!ctx.final) return { items: [], settled: 0, next: 0 };
    return ctx.cut ? { items: [], settled: 0, next: s.length } : plain;
  }
  if (r.end === undefined) return { items: r.calls, settled: 0, next: 0 };
  return { items: r.calls, settled: r.calls.length, next: r.end, plain: true };
};

export const PYTHON_SCANNERS = {
  pythonic: scanPythonic,
  lfm2: (s: string, from: number, ctx: ScanContext) => scanMarked(LFM2, s, from, ctx),
} satisfies Record<string, FormatScanner>;
