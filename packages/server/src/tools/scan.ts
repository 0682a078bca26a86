/**
 * The shared shape of the per-format scanners: what a scan of generated text reports (content and
 * calls), and the scanner of formats whose calls sit in markup opened by a marker anywhere in the text.
 */

import type { ToolDef } from "./parse.js";

/** A call found in the text. */
export interface ScanCall {
  readonly name: string;
  /**
   * The JSON text of the arguments as far as the text goes. A later scan of a longer text reports the
   * same call with this text extended (never changed), so it can be streamed as it grows.
   */
  readonly args: string;
  /** No more text will be appended to `args`. */
  readonly done: boolean;
  /** The call's id as the model wrote it (Kimi), when the format has one. */
  readonly id?: string;
}

/** Content (a string) or a call. */
export type ScanItem = string | ScanCall;

/** What one scan found from its start on. */
export interface Scan {
  /** Content and calls in the order of the text. */
  readonly items: ScanItem[];
  /**
   * How many of `items` are settled: they lie before `next` and are never reported again. The rest can
   * only be calls of markup still open at the text's end; the next scan (from `next`) reports them again.
   */
  readonly settled: number;
  /** Where the next scan starts (the text before it is done with). */
  readonly next: number;
  /** From `next` on no call can start: the rest of the message is content. */
  readonly plain?: boolean;
}

export interface ScanContext {
  /** No more text will come. */
  readonly final: boolean;
  /** (With `final`) the text was cut off (max_tokens): the unfinished markup of a call is dropped. */
  readonly cut: boolean;
  /** The request's tools by name: a call of another name is content. */
  readonly tools: ReadonlyMap<string, ToolDef>;
  /** `parallel_tool_calls`: after the first call, the rest of the message is content when false. */
  readonly parallel: boolean;
  /** Calls found before the scan's start. */
  readonly callsBefore: number;
  /** The scan starts at the beginning of the message (formats whose calls only come first need it). */
  readonly atStart: boolean;
  /**
   * The stream's memo of scans that can go on where they stopped (keyed by kind and position): valid
   * while the text only grows, cleared by the parser when it drops text from the start.
   */
  readonly memo: Map<string, unknown>;
  /**
   * What a scanner keeps about the message for its whole stream (unlike `memo`, never cleared): the
   * generic format remembers there that the text now continues inside its answer's reply string.
   */
  readonly state: Map<string, unknown>;
}

/** Scans `s` from `from` (a point where earlier scans left off). */
export type FormatScanner = (s: string, from: number, ctx: ScanContext) => Scan;

/** What the markup after an opening marker holds. */
export type Region =
  /** Not decided yet (the text ends first, and nothing of a call can be reported yet). */
  | { readonly kind: "more" }
  /** Not a call: the marker is text, and the scan goes on after it. */
  | { readonly kind: "text" }
  /** Calls (the last may be open); `end`: where the markup ends, undefined while it is still open. */
  | { readonly kind: "calls"; readonly calls: ScanCall[]; readonly end: number | undefined };

export const MORE: Region = { kind: "more" };
export const TEXT: Region = { kind: "text" };

/** A format whose calls sit in markup that a marker opens, anywhere in the text. */
export interface MarkedFormat {
  /** The markers that open call markup. */
  readonly opens: readonly string[];
  /** The calls in the markup starting at `i`, just after the marker `marker`. */
  region(s: string, i: number, ctx: ScanContext, marker: string): Region;
  /** Markers that are dropped from the content (a format's wrappers of its answer text). */
  readonly drop?: readonly string[];
}

/** The earliest of `markers` at or after `from` (the longest of those starting at the same place). */
function firstMarker(
  s: string,
  from: number,
  markers: readonly string[],
): { at: number; marker: string } | undefined {
  let best: { at: number; marker: string } | undefined;
  for (const m of markers) {
    const at = s.indexOf(m, from);
    if (at < 0) continue;
    if (!best || at < best.at || (at === best.at && m.length > best.marker.length)) best = { at, marker: m };
  }
  return best;
}

/** The length of the longest end of `s` (from `from` on) that is the start of one of `markers`. */
export function partialMarkerLength(s: string, from: number, markers: readonly string[]): number {
  let best = 0;
  for (const m of markers)
    for (let n = Math.min(m.length - 1, s.length - from); n > best; n--)
      if (s.endsWith(m.slice(0, n))) {
        best = n;
        break;
      }
  return best;
}

/**
 * Scans a format whose calls sit in markup opened by a marker: text before a marker is content (a possible
 * marker's start at the text's end is held back), each marker's markup is read by `f.region`. Markup not
 * yet decided holds the scan at its marker; at the end it is dropped when the text was cut off (so is a
 * marker's start), and content otherwise (it never became a call).
 */
export function scanMarked(f: MarkedFormat, s: string, from: number, ctx: ScanContext): Scan {
  const items: ScanItem[] = [];
  const markers = [...f.opens, ...(f.drop ?? [])];
  let calls = ctx.callsBefore;
  let pos = from;
  for (;;) {
    if (!ctx.parallel && calls > 0) return { items, settled: items.length, next: pos, plain: true };
    const hit = firstMarker(s, pos, markers);
    if (!hit) {
      // (a marker's start at the end is held back; at a cut end it is dropped, at a normal end it is text)
      const end = s.length - (ctx.final && !ctx.cut ? 0 : partialMarkerLength(s, pos, markers));
      if (end > pos) items.push(s.slice(pos, end));
      return { items, settled: items.length, next: Math.max(pos, end) };
    }
    if (hit.at > pos) items.push(s.slice(pos, hit.at));
    const after = hit.at + hit.marker.length;
    if (f.drop?.includes(hit.marker)) {
      pos = after;
      continue;
    }
    const r = f.region(s, after, ctx, hit.marker);
    if (r.kind === "more") {
      if (!ctx.final) return { items, settled: items.length, next: hit.at };
      if (ctx.cut) return { items, settled: items.length, next: s.length };
    }
    if (r.kind !== "calls") {
      items.push(hit.marker);
      pos = after;
      continue;
    }
    const settled = items.length;
    items.push(...r.calls);
    calls += r.calls.length;
    if (r.end === undefined) return { items, settled, next: hit.at };
    pos = r.end;
  }
}

/**
 * After a call's markup: whitespace, then `close`. Returns where the markup ends (past `close`; at the
 * end of a final text, past a partial `close`), undefined while `close` may still come, or "none" when
 * other text comes instead (the markup ends before it, and that text is content).
 */
export function closeAfter(
  s: string,
  p: number,
  close: string,
  ctx: ScanContext,
): number | undefined | "none" {
  const q = skipWs(s, p);
  if (s.startsWith(close, q)) return q + close.length;
  if (q >= s.length || close.startsWith(s.slice(q))) return ctx.final ? s.length : undefined;
  return "none";
}

/** The first non-whitespace index at or after `i`. */
export function skipWs(s: string, i: number): number {
  while (i < s.length && /\s/.test(s[i]!)) i++;
  return i;
}

/** Matching `lit` at `s[i]`: the index after it, "more" when the text ends within it, "no" otherwise. */
export function literal(s: string, i: number, lit: string): number | "more" | "no" {
  if (s.startsWith(lit, i)) return i + lit.length;
  return lit.startsWith(s.slice(i)) ? "more" : "no";
}

/**
 * `text` as the inside of a JSON string (no quotes): `"`, `\` and control characters escaped, and every
 * UTF-16 surrogate as `\uXXXX` — one code unit at a time, so the escape of a text's start is the start of
 * the escape of the whole text (what lets a string be streamed as it grows).
 */
export function jsonChars(text: string): string {
  return escapeRange(text, 0, text.length, "");
}

/**
 * `jsonChars(s.slice(from, to))`, continuing with `memo` (a stream's, valid while its text only grows)
 * the escape of the same start made by an earlier scan: a value streamed as it grows is not escaped
 * again from its start at every piece.
 */
export function jsonCharsAt(
  s: string,
  from: number,
  to: number,
  memo: Map<string, unknown>,
  key = `esc:${from}`,
): string {
  const m = memo.get(key) as { to: number; json: string } | undefined;
  const json = m && m.to <= to ? escapeRange(s, m.to, to, m.json) : escapeRange(s, from, to, "");
  memo.set(key, { to, json });
  return json;
}

/** `done` and the escape of `text` from `from` to `to`. */
function escapeRange(text: string, from: number, to: number, done: string): string {
  let out = done;
  for (let k = from; k < to; k++) {
    const c = text.charCodeAt(k);
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += "\\\\";
    else if (c === 0x0a) out += "\\n";
    else if (c === 0x0d) out += "\\r";
    else if (c === 0x09) out += "\\t";
    else if (c < 0x20 || (c >= 0xd800 && c <= 0xdfff)) out += `\\u${c.toString(16).padStart(4, "0")}`;
    else out += text[k];
  }
  return out;
}

/** The JSON type a tool's parameter `key` is declared with, when its schema says so plainly. */
export function paramType(tool: ToolDef | undefined, key: string): string | undefined {
  const props = (tool?.parameters as { properties?: Record<string, unknown> } | undefined)?.properties;
  const p = props && Object.hasOwn(props, key) ? props[key] : undefined;
  if (typeof p !== "object" || p === null) return undefined;
  const schema = p as { type?: unknown; enum?: unknown; const?: unknown };
  if (typeof schema.type === "string") return schema.type;
  if (Array.isArray(schema.enum) && schema.enum.length > 0 && schema.enum.every((v) => typeof v === "string"))
    return "string";
  if (typeof schema.const === "string") return "string";
  return undefined;
}

/**
 * The JSON text of a parameter value written as plain text (XML-style formats): the text as a string
 * when the parameter is declared a string, else the text when it is JSON (a number, an object …), else
 * the text as a string.
 */
export function valueJson(raw: string, type: string | undefined): string {
  if (type === "string") return `"${jsonChars(raw)}"`;
  const t = raw.trim();
  try {
    JSON.parse(t);
    return t;
  } catch {
    return `"${jsonChars(raw)}"`;
  }
}
