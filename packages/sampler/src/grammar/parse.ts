import type { CodeRange, Expr, RuleDef, Sequence, SourcePos } from "./ast.js";
import { GrammarError } from "./errors.js";
import { MAX_NESTING, MAX_REPETITION } from "./limits.js";

const NL = 0x0a;
const CR = 0x0d;

/**
 * Parses GBNF text into rule definitions, in the order written. Throws a {@link GrammarError}
 * GRAMMAR_SYNTAX naming the line, the column and what was expected.
 *
 * A newline ends a rule, except inside a group, after `::=` or `|`, or when the next line does not
 * start a new rule (`name ::=`) — so alternatives and sequences may run over several lines.
 */
export function parseRules(text: string): RuleDef[] {
  return new Parser(text).grammar();
}

class Parser {
  private readonly cp: number[];
  private readonly lineStarts: number[] = [0];
  private pos = 0;
  /** Groups open at the parse position (parsing recurses once per group). */
  private openGroups = 0;
  /** How deeply each group or repetition nests (its own level included). */
  private readonly depths = new Map<Expr, number>();

  constructor(text: string) {
    this.cp = Array.from(text, (c) => c.codePointAt(0)!);
    this.cp.forEach((c, i) => {
      if (c === NL) this.lineStarts.push(i + 1);
    });
  }

  grammar(): RuleDef[] {
    const rules: RuleDef[] = [];
    const seen = new Map<string, SourcePos>();
    this.skipSpace(true);
    while (!this.atEnd()) {
      const rule = this.rule();
      const first = seen.get(rule.name);
      if (first) {
        throw new GrammarError(
          "GRAMMAR_SYNTAX",
          `rule '${rule.name}' is defined twice (first at line ${first.line}, column ${first.column})`,
          rule.at,
          rule.name,
        );
      }
      seen.set(rule.name, rule.at);
      rules.push(rule);
      this.skipSpace(true);
    }
    return rules;
  }

  private rule(): RuleDef {
    const at = this.here();
    const name = this.name();
    if (name === "") this.fail("expected a rule name");
    this.skipSpace(false);
    if (!this.eat("::=")) this.fail(`expected '::=' after the rule name '${name}'`);
    const alternatives = this.alternatives(false);
    if (!this.atEnd() && this.peek() === 0x29 /* ) */) this.fail("unexpected ')' (no group is open)");
    return { name, alternatives, at };
  }

  private alternatives(nested: boolean): Sequence[] {
    const alts: Sequence[] = [this.sequence(nested)];
    while (!this.atEnd() && this.peek() === 0x7c /* | */) {
      this.pos++;
      alts.push(this.sequence(nested));
    }
    return alts;
  }

  private sequence(nested: boolean): Sequence {
    const items: Expr[] = [];
    for (;;) {
      this.skipSpace(nested);
      if (!nested && this.peek() === NL) {
        const next = this.afterBlankLines();
        if (next >= this.cp.length || this.ruleStartsAt(next)) return items;
        this.pos = next; // the rule goes on over the next line
      }
      if (this.atEnd()) return items;
      const c = this.peek();
      if (c === 0x7c /* | */ || c === 0x29 /* ) */) return items;
      if (c === 0x2a /* * */ || c === 0x2b /* + */ || c === 0x3f /* ? */ || c === 0x7b /* { */) {
        const last = items.pop();
        if (!last) this.fail(`expected an element before '${String.fromCodePoint(c)}'`);
        items.push(this.repetition(last));
        continue;
      }
      items.push(this.primary());
    }
  }

  private primary(): Expr {
    const at = this.here();
    const c = this.peek();
    if (c === 0x22 /* " */) {
      this.pos++;
      const chars: number[] = [];
      for (;;) {
        if (this.atEnd()) this.fail("unterminated string literal: expected '\"'");
        if (this.peek() === 0x22) break;
        chars.push(this.char());
      }
      this.pos++;
      return { kind: "literal", chars, at };
    }
    if (c === 0x5b /* [ */) return this.charClass(at);
    if (c === 0x2e /* . */) {
      this.pos++;
      return { kind: "class", ranges: [{ lo: 0, hi: 0x10ffff }], negated: false, at };
    }
    if (c === 0x28 /* ( */) {
      if (this.openGroups >= MAX_NESTING) this.tooDeep(at);
      this.pos++;
      this.openGroups++;
      this.skipSpace(true);
      const alternatives = this.alternatives(true);
      if (this.peek() !== 0x29) this.fail("expected ')' to close the group");
      this.pos++;
      this.openGroups--;
      const group: Expr = { kind: "group", alternatives, at };
      let inner = 0;
      for (const seq of alternatives) for (const e of seq) inner = Math.max(inner, this.depthOf(e));
      return this.nested(group, inner);
    }
    const name = this.name();
    if (name !== "") {
      const save = this.pos;
      this.skipSpace(false);
      if (this.peek() === 0x3a /* : */ && this.eat("::=")) {
        this.pos = save;
        this.fail(`expected an element, found the start of a new rule '${name} ::=' on the same line`);
      }
      this.pos = save;
      return { kind: "ref", name, at };
    }
    if (c === 0x3c /* < */) this.fail("token references (<…>) are not supported");
    if (c === 0x3a /* : */ && this.peekAt(1) === 0x3a && this.peekAt(2) === 0x3d) {
      this.fail("expected a rule name before '::='");
    }
    this.fail(
      `expected an element: a "literal", a [class], '.', a rule name or a ( group ), found ${this.describe()}`,
    );
  }

  private charClass(at: SourcePos): Expr {
    this.pos++;
    const negated = this.peek() === 0x5e; /* ^ */
    if (negated) this.pos++;
    const ranges: CodeRange[] = [];
    for (;;) {
      if (this.atEnd()) this.fail("unterminated character class: expected ']'");
      if (this.peek() === 0x5d /* ] */) break;
      const lo = this.char();
      let hi = lo;
      if (this.peek() === 0x2d /* - */ && this.peekAt(1) !== 0x5d && this.pos + 1 < this.cp.length) {
        this.pos++;
        const rangeEnd = this.here();
        hi = this.char();
        if (hi < lo) {
          throw new GrammarError(
            "GRAMMAR_SYNTAX",
            `character range ends (U+${hex(hi)}) below its start (U+${hex(lo)})`,
            rangeEnd,
          );
        }
      }
      ranges.push({ lo, hi });
    }
    this.pos++;
    return { kind: "class", ranges, negated, at };
  }

  /** One character of a literal or class: raw, or an escape. */
  private char(): number {
    const c = this.cp[this.pos++]!;
    if (c !== 0x5c /* \ */) return c;
    if (this.atEnd()) this.fail("expected an escape after '\\'");
    const at = this.here();
    const e = String.fromCodePoint(this.cp[this.pos++]!);
    switch (e) {
      case "n":
        return NL;
      case "r":
        return CR;
      case "t":
        return 0x09;
      case "\\":
      case '"':
      case "'":
      case "[":
      case "]":
      case "-":
      case "/":
        return e.codePointAt(0)!;
      case "x":
        return this.hexDigits(2, at);
      case "u":
        return this.hexDigits(4, at);
      case "U":
        return this.hexDigits(8, at);
      default:
        this.pos--;
        this.fail(
          `unknown escape '\\${e}': expected one of \\n \\r \\t \\\\ \\" \\[ \\] \\xHH \\uHHHH \\UHHHHHHHH`,
        );
    }
  }

  private hexDigits(n: number, at: SourcePos): number {
    let v = 0;
    for (let i = 0; i < n; i++) {
      const d = this.atEnd() ? -1 : hexValue(this.peek());
      if (d < 0) this.fail(`expected ${n} hexadecimal digits in the escape, found ${this.describe()}`);
      v = v * 16 + d;
      this.pos++;
    }
    if (v > 0x10ffff) {
      throw new GrammarError("GRAMMAR_SYNTAX", `escape U+${hex(v)} is beyond the last code point`, at);
    }
    return v;
  }

  private repetition(item: Expr): Expr {
    const at = item.at;
    const c = this.cp[this.pos++]!;
    if (c === 0x2a)
      return this.nested({ kind: "repeat", item, min: 0, max: Infinity, at }, this.depthOf(item));
    if (c === 0x2b)
      return this.nested({ kind: "repeat", item, min: 1, max: Infinity, at }, this.depthOf(item));
    if (c === 0x3f) return this.nested({ kind: "repeat", item, min: 0, max: 1, at }, this.depthOf(item));
    // {m}, {m,}, {m,n}, {,n}
    this.skipSpace(true);
    const m = this.integer();
    this.skipSpace(true);
    let min = m ?? 0;
    let max = min;
    if (this.peek() === 0x2c /* , */) {
      this.pos++;
      this.skipSpace(true);
      max = this.integer() ?? Infinity;
      this.skipSpace(true);
    } else if (m === undefined) {
      this.fail("expected a number or ',' in the repetition {m,n}");
    }
    if (this.peek() !== 0x7d /* } */) this.fail("expected '}' to close the repetition {m,n}");
    this.pos++;
    if (m === undefined) min = 0;
    if (max < min) {
      throw new GrammarError(
        "GRAMMAR_SYNTAX",
        `repetition {${min},${max}}: the maximum is below the minimum`,
        at,
      );
    }
    if (min > MAX_REPETITION || (max !== Infinity && max > MAX_REPETITION)) {
      throw new GrammarError(
        "GRAMMAR_SYNTAX",
        `repetition bound ${max === Infinity ? min : max} exceeds ${MAX_REPETITION}`,
        at,
      );
    }
    return this.nested({ kind: "repeat", item, min, max, at }, this.depthOf(item));
  }

  private depthOf(e: Expr): number {
    return this.depths.get(e) ?? 0;
  }

  /** `e`, one level deeper than its deepest part (`inner`); refused past MAX_NESTING. */
  private nested(e: Expr, inner: number): Expr {
    if (inner + 1 > MAX_NESTING) this.tooDeep(e.at);
    this.depths.set(e, inner + 1);
    return e;
  }

  private tooDeep(at: SourcePos): never {
    throw new GrammarError(
      "GRAMMAR_TOO_LARGE",
      `groups and repetitions nest more than ${MAX_NESTING} deep`,
      at,
    );
  }

  private integer(): number | undefined {
    const start = this.pos;
    while (!this.atEnd() && this.peek() >= 0x30 && this.peek() <= 0x39) this.pos++;
    if (this.pos === start) return undefined;
    return Number(this.text(start));
  }

  private name(): string {
    const start = this.pos;
    while (!this.atEnd() && isNameChar(this.peek())) this.pos++;
    return this.text(start);
  }

  /** The text from code point `start` to the parse position (a loop: it may be long). */
  private text(start: number): string {
    let out = "";
    for (let i = start; i < this.pos; i++) out += String.fromCodePoint(this.cp[i]!);
    return out;
  }

  /** Skips spaces, tabs, carriage returns and comments; newlines too when `newlines`. */
  private skipSpace(newlines: boolean): void {
    while (!this.atEnd()) {
      const c = this.peek();
      if (c === 0x20 || c === 0x09 || c === CR || (newlines && c === NL)) this.pos++;
      else if (c === 0x23 /* # */) {
        while (!this.atEnd() && this.peek() !== NL) this.pos++;
      } else return;
    }
  }

  /** The position after the newline here and every blank or comment line that follows. */
  private afterBlankLines(): number {
    const save = this.pos;
    this.skipSpace(true);
    const next = this.pos;
    this.pos = save;
    return next;
  }

  /** Whether `name ::=` starts at `p`. */
  private ruleStartsAt(p: number): boolean {
    const save = this.pos;
    this.pos = p;
    let starts = this.name() !== "";
    if (starts) {
      this.skipSpace(false);
      starts = this.eat("::=");
    }
    this.pos = save;
    return starts;
  }

  private eat(s: string): boolean {
    for (let i = 0; i < s.length; i++) if (this.peekAt(i) !== s.charCodeAt(i)) return false;
    this.pos += s.length;
    return true;
  }

  private atEnd(): boolean {
    return this.pos >= this.cp.length;
  }

  private peek(): number {
    return this.cp[this.pos] ?? -1;
  }

  private peekAt(k: number): number {
    return this.cp[this.pos + k] ?? -1;
  }

  private here(): SourcePos {
    let lo = 0;
    let hi = this.lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.lineStarts[mid]! <= this.pos) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: this.pos - this.lineStarts[lo]! + 1 };
  }

  private describe(): string {
    if (this.atEnd()) return "the end of the grammar";
    const c = this.peek();
    if (c === NL) return "the end of the line";
    return `'${String.fromCodePoint(c)}'`;
  }

  private fail(message: string): never {
    throw new GrammarError("GRAMMAR_SYNTAX", message, this.here());
  }
}

function isNameChar(c: number): boolean {
  return (
    (c >= 0x61 && c <= 0x7a) ||
    (c >= 0x41 && c <= 0x5a) ||
    (c >= 0x30 && c <= 0x39) ||
    c === 0x2d ||
    c === 0x5f
  );
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

function hex(v: number): string {
  return v.toString(16).toUpperCase().padStart(4, "0");
}
