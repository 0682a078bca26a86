import { QUOTE_CHARS } from "./limits.js";

/**
 * A bad value as an error message shows it: JSON-like, at most `max` characters (a 7 MB string
 * is not echoed back), and never deeper than a few levels (a value nested thousands of levels
 * deep is described, not serialised recursively).
 */
export function quote(v: unknown, max = QUOTE_CHARS): string {
  const out = { text: "", full: false };
  write(v, 0, out, max);
  return out.full ? `${out.text.slice(0, max)}…` : out.text;
}

const MAX_LEVELS = 3;

function put(out: { text: string; full: boolean }, s: string, max: number): boolean {
  if (out.full) return false;
  out.text += s;
  if (out.text.length > max) out.full = true;
  return !out.full;
}

function write(v: unknown, level: number, out: { text: string; full: boolean }, max: number): void {
  if (out.full) return;
  if (typeof v === "string") {
    const shown = v.length > max ? v.slice(0, max) : v;
    put(out, JSON.stringify(shown), max);
    if (shown.length < v.length) out.full = true;
    return;
  }
  if (v === null || typeof v === "number" || typeof v === "boolean") {
    put(out, String(v), max);
    return;
  }
  if (v === undefined) {
    put(out, "undefined", max);
    return;
  }
  if (typeof v !== "object") {
    put(out, typeof v, max);
    return;
  }
  const isArray = Array.isArray(v);
  if (level >= MAX_LEVELS) {
    put(out, isArray ? "[…]" : "{…}", max);
    return;
  }
  if (isArray) {
    put(out, "[", max);
    for (let i = 0; i < v.length && !out.full; i++) {
      if (i > 0) put(out, ", ", max);
      write(v[i], level + 1, out, max);
    }
    put(out, "]", max);
    return;
  }
  put(out, "{", max);
  let first = true;
  for (const k of Object.keys(v)) {
    if (out.full) break;
    if (!first) put(out, ", ", max);
    first = false;
    put(out, `${JSON.stringify(k.length > max ? k.slice(0, max) : k)}: `, max);
    write((v as Record<string, unknown>)[k], level + 1, out, max);
  }
  put(out, "}", max);
}

/**
 * Whether the JSON text `text` nests arrays and objects deeper than `limit` levels, read off the
 * text (brackets outside strings) without parsing it: one pass, no allocation.
 */
export function jsonTextNestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** A client's string (a key, a name) cut to `max` characters for a message. */
export function clip(s: string, max = QUOTE_CHARS): string {
  return s.length > max ? `${s.slice(0, max)}…` : s;
}
