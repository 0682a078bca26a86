/** Building GBNF text: literals, character classes, grouping, repetition and a rule table that shares equal rules. */

/** A GBNF string literal for `text` (quotes, backslashes and control characters escaped). */
export function literal(text: string): string {
  let out = '"';
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (cp < 0x20 || cp === 0x7f) out += `\\x${hex(cp, 2)}`;
    else out += ch;
  }
  return `${out}"`;
}

/** One code point as it may appear inside a GBNF character class (anything but letters and digits escaped). */
export function classChar(cp: number): string {
  if ((cp >= 0x30 && cp <= 0x39) || (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a)) {
    return String.fromCodePoint(cp);
  }
  if (cp <= 0xff) return `\\x${hex(cp, 2)}`;
  if (cp <= 0xffff) return `\\u${hex(cp, 4)}`;
  return `\\U${hex(cp, 8)}`;
}

function hex(n: number, width: number): string {
  return n.toString(16).toUpperCase().padStart(width, "0");
}

/** Whether `expr` is one unit that a repetition operator or a sequence can take without parentheses. */
function isAtom(expr: string): boolean {
  if (/^[a-zA-Z0-9-]+$/.test(expr)) return true;
  const open = expr[0];
  const close = open === '"' ? '"' : open === "[" ? "]" : open === "(" ? ")" : undefined;
  if (close === undefined) return false;
  // The atom must end exactly where its first token ends.
  return tokenEnd(expr, 0) === expr.length;
}

/** The index just past the token (literal, class or balanced group) that starts at `i`. */
function tokenEnd(expr: string, i: number): number {
  const open = expr[i];
  if (open === '"' || open === "[") {
    const close = open === '"' ? '"' : "]";
    let j = i + 1;
    while (j < expr.length && expr[j] !== close) j += expr[j] === "\\" ? 2 : 1;
    return j + 1;
  }
  if (open === "(") {
    let j = i + 1;
    while (j < expr.length && expr[j] !== ")") {
      if (expr[j] === '"' || expr[j] === "[" || expr[j] === "(") j = tokenEnd(expr, j);
      else j++;
    }
    return j + 1;
  }
  return i + 1;
}

/** Whether `expr` has a `|` outside any literal, class or group. */
function hasTopLevelAlternation(expr: string): boolean {
  for (let i = 0; i < expr.length; ) {
    const c = expr[i];
    if (c === '"' || c === "[" || c === "(") i = tokenEnd(expr, i);
    else if (c === "|") return true;
    else i++;
  }
  return false;
}

/** `expr` parenthesised unless it is an atom. */
export function group(expr: string): string {
  return isAtom(expr) ? expr : `(${expr})`;
}

/** The concatenation of `parts` (empty parts dropped; alternations parenthesised). */
export function seq(...parts: string[]): string {
  return parts
    .filter((p) => p !== "")
    .map((p) => (hasTopLevelAlternation(p) ? `(${p})` : p))
    .join(" ");
}

/** The alternation of `alts` (duplicates dropped). */
export function alt(...alts: string[]): string {
  return altOf(alts);
}

/** {@link alt} of a list (which may be longer than a call's arguments can be). */
export function altOf(alts: readonly string[]): string {
  return [...new Set(alts)].join(" | ");
}

/** `expr` repeated `min` to `max` times (`max` Infinity: unbounded). "" when `max` is 0. */
export function repeat(expr: string, min: number, max: number): string {
  if (max === 0) return "";
  const g = group(expr);
  if (min === 0 && max === 1) return `${g}?`;
  if (min === 0 && max === Infinity) return `${g}*`;
  if (min === 1 && max === Infinity) return `${g}+`;
  if (min === 1 && max === 1) return expr;
  if (max === Infinity) return `${g}{${min},}`;
  if (min === max) return `${g}{${min}}`;
  return `${g}{${min},${max}}`;
}

/** `expr` made optional ("" stays ""). */
export function optional(expr: string): string {
  return expr === "" ? "" : `${group(expr)}?`;
}

/** A rule name made from `hint`: letters, digits and dashes only. */
export function ruleName(hint: string): string {
  const name = hint
    .replace(/[^a-zA-Z0-9-]+/g, "-")
    .replace(/-+/g, "-")
    .replace(/^-|-$/g, "");
  return name === "" ? "rule" : name;
}

/** The rules of a grammar being built; equal bodies share one rule. */
export class RuleTable {
  private readonly bodies = new Map<string, string>();
  private readonly byBody = new Map<string, string>();
  private readonly names = new Set<string>();

  /** A fresh rule name from `hint`, to be given a body by `define` later (for recursive rules). */
  reserve(hint: string): string {
    const base = ruleName(hint);
    let name = base;
    for (let i = 1; this.names.has(name); i++) name = `${base}-${i}`;
    this.names.add(name);
    return name;
  }

  /** Gives the reserved rule `name` its body. */
  define(name: string, body: string): void {
    this.bodies.set(name, body);
    if (!this.byBody.has(body)) this.byBody.set(body, name);
  }

  /** A rule with `body`: an existing one with the same body, or a new one named from `hint`. */
  rule(hint: string, body: string): string {
    const existing = this.byBody.get(body);
    if (existing !== undefined) return existing;
    const name = this.reserve(hint);
    this.define(name, body);
    return name;
  }

  /** A point to go back to (the table only grows, so its sizes say what came after). */
  mark(): number[] {
    return [this.bodies.size, this.byBody.size, this.names.size];
  }

  /** Forgets every rule reserved or defined since `mark`. */
  rollback(mark: readonly number[]): void {
    truncate(this.bodies, mark[0]!);
    truncate(this.byBody, mark[1]!);
    truncate(this.names, mark[2]!);
  }

  /** The grammar text, one rule per line, `first` first and the rest in the order they were defined. */
  toString(first: string): string {
    const lines = [`${first} ::= ${this.bodies.get(first)}`];
    for (const [name, body] of this.bodies) if (name !== first) lines.push(`${name} ::= ${body}`);
    return `${lines.join("\n")}\n`;
  }
}

/** Deletes the entries of `m` after its first `n` (in insertion order). */
export function truncate(m: Map<unknown, unknown> | Set<unknown>, n: number): void {
  if (m.size <= n) return;
  const extra = [...m.keys()].slice(n);
  for (const k of extra) m.delete(k);
}
