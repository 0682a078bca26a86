/**
 * The GBNF for JSON's primitive values and for "any JSON value", defined once per grammar on first use.
 *
 * Strings: any character but `"`, `\` and U+0000–U+001F raw, or an escape (`\" \\ \/ \b \f \n \r \t`,
 * `\uXXXX` outside the surrogate range D800–DFFF: characters beyond the BMP are written raw, so that one
 * grammar character is one code point and minLength/maxLength count what JSON Schema counts).
 * Numbers and integers: llama.cpp's rules, so that a model cannot spend its budget inside one number —
 * an optional `-`, an integral part of `0` or 1–16 digits without a leading zero, then (numbers only) an
 * optional fraction of 1–16 digits and an optional exponent whose digits follow the integral part's rule.
 * (So `-0` is an integer, and `1e05` is not a number.)
 */

import { alt, literal, type RuleTable, repeat, seq, truncate } from "./gbnf.js";
import { MAX_DIGITS } from "./limits.js";

/** The separators of a grammar's whitespace convention. */
export interface Separators {
  /** Between members or elements: `","` and an optional space. */
  readonly comma: string;
  /** Between a key and its value: `":"` and an optional space. */
  readonly colon: string;
}

/** The separators for `whitespace`: an optional single space after `,` and `:`, or none at all. */
export function separators(whitespace: "optional-space" | "none"): Separators {
  const space = whitespace === "none" ? "" : ' " "?';
  return { comma: `","${space}`, colon: `":"${space}` };
}

/** Rule bodies by primitive, in terms of each other's names. */
const BODIES: Record<string, (name: (p: string) => string, sep: Separators) => string> = {
  null: () => '"null"',
  boolean: () => alt('"true"', '"false"'),
  "integral-part": () => alt('"0"', `[1-9] [0-9]{0,${MAX_DIGITS - 1}}`),
  integer: (name) => seq('"-"?', name("integral-part")),
  number: (name) =>
    seq(
      '"-"?',
      name("integral-part"),
      `("." [0-9]{1,${MAX_DIGITS}})?`,
      `([eE] [-+]? ${name("integral-part")})?`,
    ),
  char: () => alt('[^"\\\\\\x00-\\x1F]', seq('"\\\\"', `(["\\\\/bfnrt] | "u" ${HEX4_NOT_SURROGATE})`)),
  string: (name) => stringBody(name, 0, Infinity),
  value: (name) =>
    alt(name("object"), name("array"), name("string"), name("number"), name("boolean"), name("null")),
  object: (name, sep) => {
    const member = seq(name("string"), sep.colon, name("value"));
    return seq('"{"', `(${seq(member, repeat(seq(sep.comma, member), 0, Infinity))})?`, '"}"');
  },
  array: (name, sep) =>
    seq('"["', `(${seq(name("value"), repeat(seq(sep.comma, name("value")), 0, Infinity))})?`, '"]"'),
};

/** Four hex digits that are not a UTF-16 surrogate (D800–DFFF). */
const HEX4_NOT_SURROGATE = "([0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2})";

/** A JSON string of `min` to `max` characters, given the name of the `char` rule. */
export function stringBody(name: (p: string) => string, min: number, max: number): string {
  return seq('"\\""', repeat(name("char"), min, max), '"\\""');
}

/** The primitive rules of one grammar: each defined the first time it is named. */
export class Primitives {
  private readonly names = new Map<string, string>();

  constructor(
    private readonly rules: RuleTable,
    private readonly sep: Separators,
  ) {}

  /** A point to go back to: how many primitives are defined. */
  mark(): number {
    return this.names.size;
  }

  /** Forgets the primitives defined since `mark` (their rules are rolled back with the table's). */
  rollback(mark: number): void {
    truncate(this.names, mark);
  }

  /** The rule name of primitive `p` (`"string"`, `"number"`, `"value"`, ...), defining it if needed. */
  readonly name = (p: string): string => {
    const existing = this.names.get(p);
    if (existing !== undefined) return existing;
    const body = BODIES[p];
    if (body === undefined) throw new Error(`no primitive ${p}`);
    const name = this.rules.reserve(p);
    this.names.set(p, name);
    this.rules.define(name, body(this.name, this.sep));
    return name;
  };
}

/** A literal matching the compact JSON text of `value` (as JSON.stringify writes it). */
export function jsonLiteral(value: unknown): string {
  return literal(JSON.stringify(value));
}
