/** A call written as a JSON object (`{"name": …, "arguments": {…}}` and its variants), read as it arrives. */

import { type Scanned, scanJson, scanString, skipJsonWs } from "./json-scan.js";
import type { ScanCall, ScanContext } from "./scan.js";

/** The keys of a format's call objects. */
export interface CallKeys {
  /** The key of the function's name (the first of these present). */
  readonly name: readonly string[];
  /** The key of the arguments object (or of its JSON text, as a string). */
  readonly args: readonly string[];
  /** Other keys a call may have, with any value (ids). `"type"` may always be there, as `"function"`. */
  readonly other: readonly string[];
}

/**
 * A call object at `s[i]`:
 * - `"no"`: not a call of a known tool (not JSON, another key, no name, an unknown name, arguments that
 *   are not an object): content.
 * - `"more"`: the text ends before that is known, or before the call can be reported (its name and the
 *   start of its arguments): wait.
 * - a call: `end` is the index past the object's `}`, undefined while the object is still open. Once the
 *   name is known and the arguments object has begun, the call stands whatever follows (its arguments are
 *   streamed as they come): text that breaks the object then ends it (`broken`, `end` where it broke).
 */
export type JsonCall = "no" | "more" | { call: ScanCall; end: number | undefined; broken?: boolean };

/** The end of the longest start of the JSON value at `s[v]` that JSON could still continue. */
function validPrefixEnd(s: string, v: number): number {
  let lo = v; // a valid start (empty)
  let hi = s.length; // not valid as a whole
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (scanJson(s.slice(0, mid), v) === "no") hi = mid;
    else lo = mid;
  }
  return lo;
}

const parseString = (s: string, from: number, to: number): string => JSON.parse(s.slice(from, to)) as string;

export function jsonCall(s: string, i: number, keys: CallKeys, ctx: ScanContext): JsonCall {
  if (i >= s.length) return "more";
  if (s[i] !== "{") return "no";
  let name: string | undefined;
  let argsStart = -1; // the arguments object's `{`, when they are one
  let argsEnd = -1; // past its `}`
  let argsText: string | undefined; // arguments given as JSON text in a string
  let sawArgs = false;
  const committed = () => name !== undefined && argsStart >= 0;
  const call = (done: boolean): ScanCall => ({
    name: name!,
    args: argsText ?? (argsStart >= 0 ? s.slice(argsStart, argsEnd >= 0 ? argsEnd : s.length) : "{}"),
    done,
  });
  const partial = (): JsonCall => (committed() ? { call: call(argsEnd >= 0), end: undefined } : "more");
  const fail = (at: number): JsonCall => (committed() ? { call: call(true), end: at, broken: true } : "no");
  const need = (r: Scanned, at: number): JsonCall => (r === "more" ? partial() : fail(at));

  let p = i + 1;
  let want: "key-or-close" | "key" | "comma-or-close" = "key-or-close";
  for (;;) {
    p = skipJsonWs(s, p);
    if (p >= s.length) return partial();
    const c = s[p]!;
    if (want === "comma-or-close" || (want === "key-or-close" && c === "}")) {
      if (c === ",") {
        p++;
        want = "key";
        continue;
      }
      if (c !== "}") return fail(p);
      if (name === undefined) return "no";
      return { call: call(true), end: p + 1 };
    }
    const ke = scanString(s, p);
    if (typeof ke !== "number") return need(ke, p);
    const key = parseString(s, p, ke);
    // (a key no call has shows at once that this is not a call)
    if (!keys.name.includes(key) && !keys.args.includes(key) && key !== "type" && !keys.other.includes(key))
      return fail(p);
    p = skipJsonWs(s, ke);
    if (p >= s.length) return partial();
    if (s[p] !== ":") return fail(p);
    const v = skipJsonWs(s, p + 1);
    if (v >= s.length) return partial();
    if (keys.name.includes(key) && name === undefined) {
      const e = scanString(s, v);
      if (typeof e !== "number") return need(e, v);
      const n = parseString(s, v, e);
      if (!ctx.tools.has(n)) return "no";
      name = n;
      p = e;
    } else if (keys.args.includes(key) && !sawArgs) {
      sawArgs = true;
      if (s[v] === "{") {
        argsStart = v;
        const e = scanJson(s, v, ctx.memo);
        if (e === "more") return partial();
        if (e === "no") {
          if (!committed()) return "no";
          argsEnd = validPrefixEnd(s, v);
          return { call: call(true), end: argsEnd, broken: true };
        }
        argsEnd = e;
        p = e;
      } else if (s[v] === '"') {
        const e = scanString(s, v);
        if (typeof e !== "number") return need(e, v);
        const inner = parseString(s, v, e);
        let o: unknown;
        try {
          o = JSON.parse(inner);
        } catch {
          return fail(v);
        }
        if (typeof o !== "object" || o === null || Array.isArray(o)) return fail(v);
        argsText = inner;
        p = e;
      } else return fail(v);
    } else if (key === "type") {
      const e = scanString(s, v);
      if (typeof e !== "number") return need(e, v);
      if (parseString(s, v, e) !== "function") return fail(v);
      p = e;
    } else if (keys.other.includes(key)) {
      const e = scanJson(s, v, ctx.memo);
      if (typeof e !== "number") return need(e, v);
      p = e;
    } else return fail(p);
    want = "comma-or-close";
  }
}

/**
 * A call whose name was read before its arguments object, which starts at `s[v]`: "more" before the
 * `{`, "no" when something else comes, else the call (it stands from its `{` on; see {@link JsonCall}).
 */
export function argsCall(s: string, v: number, name: string, ctx: ScanContext): JsonCall {
  if (v >= s.length) return "more";
  if (s[v] !== "{") return "no";
  const e = scanJson(s, v, ctx.memo);
  if (e === "more") return { call: { name, args: s.slice(v), done: false }, end: undefined };
  if (e === "no") {
    const end = validPrefixEnd(s, v);
    return { call: { name, args: s.slice(v, end), done: true }, end, broken: true };
  }
  return { call: { name, args: s.slice(v, e), done: true }, end: e };
}
