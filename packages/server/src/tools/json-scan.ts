/**
 * Scanning JSON in text that is still arriving: where a value ends, or whether what is there so far
 * can still become one. Strict RFC 8259 syntax (no comments, no trailing commas, no single quotes).
 */

/**
 * Where something starting at a position ends: the index just past it; `"more"` when the text ends
 * while what is there is a valid start of it (more text may complete it); `"no"` when it cannot be it.
 */
export type Scanned = number | "more" | "no";

const WS = new Set([" ", "\t", "\n", "\r"]);

/** The index of the first non-whitespace character (JSON's whitespace) at or after `i`. */
export function skipJsonWs(s: string, i: number): number {
  while (i < s.length && WS.has(s[i]!)) i++;
  return i;
}

const HEX = /^[0-9a-fA-F]$/;
const ESCAPES = new Set(['"', "\\", "/", "b", "f", "n", "r", "t"]);

/** A JSON string starting at `s[i]` (which must be `"`). */
export function scanString(s: string, i: number): Scanned {
  if (s[i] !== '"') return i >= s.length ? "more" : "no";
  let p = i + 1;
  while (p < s.length) {
    const c = s[p]!;
    if (c === '"') return p + 1;
    if (c === "\\") {
      const e = s[p + 1];
      if (e === undefined) return "more";
      if (ESCAPES.has(e)) p += 2;
      else if (e === "u") {
        for (let k = 2; k < 6; k++) {
          const h = s[p + k];
          if (h === undefined) return "more";
          if (!HEX.test(h)) return "no";
        }
        p += 6;
      } else return "no";
    } else if (c.charCodeAt(0) < 0x20) return "no";
    else p++;
  }
  return "more";
}

type Mode =
  | "value"
  | "value-or-close"
  | "key"
  | "key-or-close"
  | "colon"
  | "comma-or-close"
  | "string"
  | "escape"
  | "hex"
  | "number"
  | "literal";

/** Where a number is: after "-", a leading 0, integer digits, ".", fraction digits, "e", its sign, its digits. */
type Num = "sign" | "zero" | "int" | "dot" | "frac" | "e" | "esign" | "exp";

const isDigit = (c: string) => c >= "0" && c <= "9";

/** The number's state after `c`, or undefined when `c` is not part of it. */
function numStep(n: Num, c: string): Num | undefined {
  if (isDigit(c)) {
    if (n === "sign") return c === "0" ? "zero" : "int";
    if (n === "zero") return undefined;
    if (n === "int" || n === "frac" || n === "exp") return n;
    return n === "dot" ? "frac" : "exp";
  }
  if (c === "." && (n === "zero" || n === "int")) return "dot";
  if ((c === "e" || c === "E") && (n === "zero" || n === "int" || n === "frac")) return "e";
  if ((c === "+" || c === "-") && n === "e") return "esign";
  return undefined;
}

const NUMBER_ENDS: ReadonlySet<Num> = new Set(["zero", "int", "frac", "exp"]);
const WORDS: Record<string, string> = { t: "true", f: "false", n: "null" };

/**
 * A JSON value's scan that can go on where it stopped: `run(s)` with a longer text that starts with the
 * one it scanned continues from there, a character at a time (so a value streamed as it grows is not
 * scanned again from its start at every piece).
 */
class JsonCursor {
  #pos: number;
  #stack: string[] = [];
  #mode: Mode = "value";
  #key = false;
  #hex = 0;
  #num: Num = "int";
  #word = "";
  #at = 0;
  #result: Scanned = "more";

  constructor(start: number) {
    this.#pos = start;
  }

  run(s: string): Scanned {
    if (this.#result !== "more") return this.#result;
    for (; this.#pos < s.length; this.#pos++) {
      const c = s[this.#pos]!;
      const r = this.#step(c);
      if (r !== undefined) {
        this.#result = r;
        return r;
      }
    }
    return "more";
  }

  /** After a value ending before `end`: the whole scan's end, or undefined (inside a container). */
  #valueDone(end: number): number | undefined {
    if (this.#stack.length === 0) return end;
    this.#mode = "comma-or-close";
    return undefined;
  }

  /** Takes `c` (at #pos); the scan's result when it is decided by it. */
  #step(c: string): Scanned | undefined {
    const p = this.#pos;
    switch (this.#mode) {
      case "string":
        if (c === '"') {
          if (this.#key) {
            this.#mode = "colon";
            return undefined;
          }
          return this.#valueDone(p + 1);
        }
        if (c === "\\") this.#mode = "escape";
        else if (c.charCodeAt(0) < 0x20) return "no";
        return undefined;
      case "escape":
        if (ESCAPES.has(c)) this.#mode = "string";
        else if (c === "u") {
          this.#mode = "hex";
          this.#hex = 4;
        } else return "no";
        return undefined;
      case "hex":
        if (!HEX.test(c)) return "no";
        if (--this.#hex === 0) this.#mode = "string";
        return undefined;
      case "number": {
        const n = numStep(this.#num, c);
        if (n !== undefined) {
          this.#num = n;
          return undefined;
        }
        if (!NUMBER_ENDS.has(this.#num)) return "no";
        const done = this.#valueDone(p);
        if (done !== undefined) return done;
        return this.#step(c); // the character after the number, in its container
      }
      case "literal":
        if (c !== this.#word[this.#at]) return "no";
        if (++this.#at === this.#word.length) return this.#valueDone(p + 1);
        return undefined;
    }
    if ((this.#mode !== "value" || this.#stack.length > 0) && WS.has(c)) return undefined;
    switch (this.#mode) {
      case "value":
      case "value-or-close":
        if (this.#mode === "value-or-close" && c === "]") {
          this.#stack.pop();
          return this.#valueDone(p + 1);
        }
        if (c === '"') {
          this.#mode = "string";
          this.#key = false;
        } else if (c === "{") {
          this.#stack.push("}");
          this.#mode = "key-or-close";
        } else if (c === "[") {
          this.#stack.push("]");
          this.#mode = "value-or-close";
        } else if (c === "-" || isDigit(c)) {
          this.#mode = "number";
          this.#num = c === "-" ? "sign" : c === "0" ? "zero" : "int";
        } else if (c in WORDS) {
          this.#mode = "literal";
          this.#word = WORDS[c]!;
          this.#at = 1;
        } else return "no";
        return undefined;
      case "key":
      case "key-or-close":
        if (this.#mode === "key-or-close" && c === "}") {
          this.#stack.pop();
          return this.#valueDone(p + 1);
        }
        if (c !== '"') return "no";
        this.#mode = "string";
        this.#key = true;
        return undefined;
      case "colon":
        if (c !== ":") return "no";
        this.#mode = "value";
        return undefined;
      default: {
        const top = this.#stack[this.#stack.length - 1]!;
        if (c === ",") {
          this.#mode = top === "}" ? "key" : "value";
          return undefined;
        }
        if (c !== top) return "no";
        this.#stack.pop();
        return this.#valueDone(p + 1);
      }
    }
  }
}

/**
 * A JSON value starting at `s[i]` (no leading whitespace). With `memo` (a stream's, valid while its text
 * only grows), the scan of a longer text goes on from where the last one at `i` stopped.
 */
export function scanJson(s: string, i: number, memo?: Map<string, unknown>): Scanned {
  if (i >= s.length) return "more";
  if (!memo) return new JsonCursor(i).run(s);
  const key = `json:${i}`;
  let c = memo.get(key) as JsonCursor | undefined;
  if (!c) {
    c = new JsonCursor(i);
    memo.set(key, c);
  }
  return c.run(s);
}
