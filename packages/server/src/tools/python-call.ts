/**
 * A call written as Python (`name(k="v", n=1)`, Llama's built-in `name.call(k="v")`), read as it arrives:
 * its keyword arguments become a JSON object, `{"k": "v", "n": 1}`, built as the text comes.
 */

import type { JsonCall } from "./json-call.js";
import { jsonChars, jsonCharsAt, type ScanContext, skipWs } from "./scan.js";

const NAME = /[A-Za-z0-9_-]*/y;
const KEY = /[A-Za-z_][A-Za-z0-9_]*/y;

const SIMPLE_ESCAPES: Record<string, string> = {
  "\\": "\\",
  "'": "'",
  '"': '"',
  n: "\n",
  t: "\t",
  r: "\r",
  b: "\b",
  f: "\f",
  v: "\v",
  a: "\x07",
  "0": "\0",
  "\n": "",
};
const HEX_ESCAPES: Record<string, number> = { x: 2, u: 4, U: 8 };

/**
 * A Python string literal at `s[v]` (quoted with `'` or `"`): its text as far as it goes (an escape cut by
 * the text's end is left out until it is whole), and the index past its closing quote when it has one.
 * With `memo` (a stream's, valid while its text only grows) it goes on from where the last read stopped.
 */
export function pythonString(
  s: string,
  v: number,
  memo?: Map<string, unknown>,
): { text: string; end: number | undefined } {
  const key = `py:${v}`;
  const m = memo?.get(key) as { p: number; text: string } | undefined;
  const q = s[v];
  let text = m?.text ?? "";
  let p = m?.p ?? v + 1;
  const done = (end: number | undefined) => {
    memo?.set(key, { p, text });
    return { text, end };
  };
  while (p < s.length) {
    const c = s[p]!;
    if (c === q) return done(p + 1);
    if (c !== "\\") {
      text += c;
      p++;
      continue;
    }
    const e = s[p + 1];
    if (e === undefined) break;
    if (e in SIMPLE_ESCAPES) {
      text += SIMPLE_ESCAPES[e];
      p += 2;
    } else if (e in HEX_ESCAPES) {
      const n = HEX_ESCAPES[e]!;
      const hex = s.slice(p + 2, p + 2 + n);
      if (hex.length < n) break;
      const code = /^[0-9a-fA-F]+$/.test(hex) ? Number.parseInt(hex, 16) : Number.NaN;
      // A malformed or out-of-range escape is kept as written.
      text += Number.isNaN(code) || code > 0x10ffff ? `\\${e}${hex}` : String.fromCodePoint(code);
      p += 2 + n;
    } else {
      text += `\\${e}`;
      p += 2;
    }
  }
  return done(undefined);
}

/** `jsonChars(text)` for the decoded text of the string at `v`, which grows as the stream does. */
function jsonCharsOf(text: string, v: number, memo: Map<string, unknown>): string {
  return jsonCharsAt(text, 0, text.length, memo, `pyesc:${v}`);
}

/** Where a Python value (not a string) at `s[v]` ends: before a `,` or `)` outside brackets and quotes. */
function valueEnd(s: string, v: number): number | undefined {
  let depth = 0;
  let p = v;
  while (p < s.length) {
    const c = s[p]!;
    if (c === '"' || c === "'") {
      const str = pythonString(s, p);
      if (str.end === undefined) return undefined;
      p = str.end;
      continue;
    }
    if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") {
      if (depth === 0) return c === ")" ? p : undefined;
      depth--;
    } else if (c === "," && depth === 0) return p;
    p++;
  }
  return undefined;
}

const PY_TOKEN =
  /\s*(?:("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|(True|False|None|true|false|null)\b|(-?[0-9][0-9_.eE+-]*)|([[\]{}(),:]))/y;
const PY_WORDS: Record<string, string> = {
  True: "true",
  False: "false",
  None: "null",
  true: "true",
  false: "false",
  null: "null",
};

/**
 * The JSON text of a Python literal (numbers, True/False/None, lists, tuples, dicts, strings in either
 * quote; JSON's own literals too); a value that is not one is kept as a JSON string of its text.
 */
export function pythonValueJson(raw: string): string {
  let out = "";
  let p = 0;
  const t = raw.trim();
  while (p < t.length) {
    PY_TOKEN.lastIndex = p;
    const m = PY_TOKEN.exec(t);
    if (m === null) return `"${jsonChars(t)}"`;
    p = PY_TOKEN.lastIndex;
    if (m[1] !== undefined) out += `"${jsonChars(pythonString(m[1], 0).text)}"`;
    else if (m[2] !== undefined) out += PY_WORDS[m[2]];
    else if (m[3] !== undefined) out += m[3].replace(/_/g, "");
    else out += m[4] === "(" ? "[" : m[4] === ")" ? "]" : m[4];
  }
  try {
    JSON.parse(out);
    return out;
  } catch {
    return `"${jsonChars(t)}"`;
  }
}

/**
 * A call `name` + `opener` + keyword arguments + `)` at `s[i]`; what it returns is as {@link JsonCall}
 * says: "no" when the name is not a known tool's or `opener` does not follow; the call stands from its
 * opener on, its arguments growing as the text does (a key from its `=`, a string value character by
 * character, another value once whole); text that breaks the argument list ends it (`broken`).
 */
export function kwargsCall(s: string, i: number, ctx: ScanContext, opener: string): JsonCall {
  NAME.lastIndex = i;
  const name = NAME.exec(s)![0];
  let p = i + name.length;
  if (p >= s.length) return "more";
  if (name === "" || !ctx.tools.has(name)) return "no";
  if (!s.startsWith(opener, p)) return opener.startsWith(s.slice(p)) ? "more" : "no";
  p += opener.length;
  let json = "{";
  let n = 0;
  const open = (): JsonCall => ({ call: { name, args: json, done: false }, end: undefined });
  const broken = (at: number): JsonCall => ({
    call: { name, args: json, done: true },
    end: at,
    broken: true,
  });
  for (;;) {
    p = skipWs(s, p);
    if (p >= s.length) return open();
    if (s[p] === ")") return { call: { name, args: `${json}}`, done: true }, end: p + 1 };
    if (n > 0) {
      if (s[p] !== ",") return broken(p);
      p = skipWs(s, p + 1);
      if (p >= s.length) return open();
      if (s[p] === ")") continue;
    }
    KEY.lastIndex = p;
    const key = KEY.exec(s)?.[0];
    if (key === undefined) return broken(p);
    const q = skipWs(s, p + key.length);
    if (q >= s.length) return open();
    if (s[q] !== "=") return broken(q);
    json += `${n > 0 ? ", " : ""}"${jsonChars(key)}": `;
    n++;
    const v = skipWs(s, q + 1);
    if (v >= s.length) return open();
    if (s[v] === '"' || s[v] === "'") {
      const str = pythonString(s, v, ctx.memo);
      json += `"${jsonCharsOf(str.text, v, ctx.memo)}`;
      if (str.end === undefined) return open();
      json += '"';
      p = str.end;
    } else {
      const e = valueEnd(s, v);
      if (e === undefined) return open();
      json += pythonValueJson(s.slice(v, e));
      p = e;
    }
  }
}
