import { describe, expect, it } from "vitest";
import { Grammar } from "../grammar/index.js";
import { jsonSchemaToGbnf } from "./index.js";
import { BYTE_VOCAB, validator } from "./test-support.js";

// Numbers and integers as llama.cpp's json-schema-to-grammar writes them (its PRIMITIVE_RULES):
//   integral-part ::= [0] | [1-9] [0-9]{0,15}
//   number  ::= ("-"? integral-part) ("." [0-9]{1,16})? ([eE] [-+]? integral-part)?
//   integer ::= ("-"? integral-part)
// The cases below are derived from those rules by hand.

const grammar = (schema: unknown) => Grammar.parse(jsonSchemaToGbnf(schema));

const D16 = "1234567890123456";

describe("jsonSchemaToGbnf: number is llama.cpp's number", () => {
  const g = grammar({ type: "number" });
  it.each([
    "0",
    "-0",
    "7",
    D16,
    `-${D16}`,
    "0.0",
    `0.${D16}`,
    `-${D16}.${D16}`,
    "1e5",
    "1E5",
    "1e-5",
    "1e+5",
    "1e0",
    `1e${D16}`,
    `-1.5E-${D16}`,
  ])("accepts %s", (text) => {
    expect(g.matches(text)).toBe(true);
  });
  it.each([
    `${D16}7`,
    `0.${D16}7`,
    `1e${D16}7`,
    "1e05",
    "1e-05",
    "01",
    "-01",
    "00",
    ".5",
    "1.",
    "+1",
    "-",
    "1e",
    "1e+",
    "- 1",
    "1 ",
  ])("refuses %s", (text) => {
    expect(g.matches(text)).toBe(false);
  });

  it("lets a generation write no 17th digit: after 16 only '.', 'e', 'E' or the end", () => {
    const c = g.constraint(BYTE_VOCAB);
    for (const b of new TextEncoder().encode(D16)) c.accept(b);
    const allowed = Array.from({ length: 257 }, (_, id) => id).filter((id) => c.allows(id));
    expect(allowed.map((id) => (id === 256 ? "EOG" : String.fromCharCode(id)))).toEqual([
      ".",
      "E",
      "e",
      "EOG",
    ]);
  });

  it("is used for numbers inside any JSON value too", () => {
    const any = grammar({});
    expect(any.matches(`[${D16}]`)).toBe(true);
    expect(any.matches(`[${D16}0]`)).toBe(false);
    expect(any.matches(`{"a":0.${D16}0}`)).toBe(false);
  });
});

describe("jsonSchemaToGbnf: integer is llama.cpp's integer", () => {
  const g = grammar({ type: "integer" });
  it.each(["0", "-0", "5", "-5", D16, `-${D16}`, "9999999999999999"])("accepts %s", (text) => {
    expect(g.matches(text)).toBe(true);
  });
  it.each(["10000000000000000", `-${D16}0`, "1.0", "1e2", "00", "-01", "+1", ""])("refuses %s", (text) => {
    expect(g.matches(text)).toBe(false);
  });
});

/** `text` (a plain decimal) as an exact fraction: numerator and a power of ten. */
function exact(text: string): { n: bigint; scale: number } {
  const [int, frac = ""] = text.split(".");
  return { n: BigInt(int! + frac), scale: frac.length };
}

/** Compares two plain decimals exactly: negative, zero or positive. */
function compare(a: string, b: string): number {
  const x = exact(a);
  const y = exact(b);
  const s = Math.max(x.scale, y.scale);
  const d = x.n * 10n ** BigInt(s - x.scale) - y.n * 10n ** BigInt(s - y.scale);
  return d < 0n ? -1 : d > 0n ? 1 : 0;
}

/** What bounded numbers are written as: no exponent, 1–16 digits each side, no `-` before zero. */
function inSubset(text: string): boolean {
  const m = /^(-?)(0|[1-9][0-9]{0,15})(?:\.([0-9]{1,16}))?$/.exec(text);
  if (!m) return false;
  return !(m[1] === "-" && /^0+$/.test(m[2]! + (m[3] ?? "")));
}

/** Candidate texts: around the interesting values, with several fraction lengths. */
function candidates(): string[] {
  const out = new Set<string>();
  const fractions = [
    "",
    ".0",
    ".00",
    ".1",
    ".09",
    ".099",
    ".1000000000000001",
    ".0999999999999999",
    ".25",
    ".2499999999999999",
    ".2500000000000001",
    ".5",
    ".49",
    ".51",
    ".5000000000000000",
    ".9999999999999999",
    ".0000000000000001",
    ".00000000000000001",
    ".3",
    ".30000000000000004",
  ];
  for (let i = 0; i <= 12; i++) {
    for (const f of fractions) {
      out.add(`${i}${f}`);
      out.add(`-${i}${f}`);
    }
  }
  for (const x of [
    "2.5000000000000004",
    "2.5000000000000003",
    "-3.0000000000000004",
    "-3.0000000000000003",
    "0.9999999999999999",
    "0.1000000000000001",
    "1234.5678",
    "1234.56779",
    "1234.56781",
    "9999999999999999",
    "9999999999999999.9999999999999999",
    "10000000000000000",
    "-9999999999999999.9999999999999999",
    "1e1",
    "2.5e0",
    "-0",
    "00.5",
    "1.",
  ])
    out.add(x);
  return [...out];
}

describe("jsonSchemaToGbnf: number bounds", () => {
  // An inclusive bound is compared with the decimal written in the schema. An exclusive one is taken
  // as the next double beyond it (what a text must parse to, to be beyond it), printed shortest and
  // cut to 16 decimals, worked out by hand: 2.5 + 2^-51 = 2.5000000000000004; 0.1 + 2^-56 =
  // 0.10000000000000002, at 16 decimals 0.1000000000000001; 1 − 2^-53 = 0.9999999999999999;
  // −3 − 2^-51 = −3.0000000000000004; anything above 0 is at least 0.0000000000000001.
  const at = (lo?: string, hi?: string) => (t: string) =>
    (lo === undefined || compare(t, lo) >= 0) && (hi === undefined || compare(t, hi) <= 0);
  const cases: [Record<string, number>, (t: string) => boolean][] = [
    [{ minimum: 3 }, at("3")],
    [{ minimum: 2.5 }, at("2.5")],
    [{ exclusiveMinimum: 2.5 }, at("2.5000000000000004")],
    [{ maximum: -1.25 }, at(undefined, "-1.25")],
    [{ minimum: -1.25, maximum: 0.1 }, at("-1.25", "0.1")],
    [{ exclusiveMinimum: 0, exclusiveMaximum: 1 }, at("0.0000000000000001", "0.9999999999999999")],
    [{ exclusiveMinimum: 0.1, maximum: 0.3 }, at("0.1000000000000001", "0.3")],
    [{ minimum: 1234.5678, maximum: 1234.5678 }, at("1234.5678", "1234.5678")],
    [{ minimum: -12, exclusiveMaximum: -3 }, at("-12", "-3.0000000000000004")],
    [{ minimum: 1e-20 }, at("0.00000000000000000001")],
    [{ maximum: 1e300 }, at()],
  ];
  it.each(cases)("%j: exactly the plain decimals in range", (bounds, inRange) => {
    const schema = { type: "number", ...bounds };
    const g = grammar(schema);
    const validate = validator(schema);
    for (const t of candidates()) {
      const expected = inSubset(t) && inRange(t);
      expect(g.matches(t), `${t} under ${JSON.stringify(bounds)}`).toBe(expected);
      // Whatever is accepted is valid as ajv reads it (a double), too.
      if (expected) expect(validate(JSON.parse(t)), `ajv: ${t}`).toBe(true);
    }
  });

  it("refuses bounds no plain decimal of 16 digits can meet, and empty ranges", () => {
    expect(() => jsonSchemaToGbnf({ type: "number", minimum: 1e16 })).toThrow(
      expect.objectContaining({ code: "SCHEMA_UNSUPPORTED", keyword: "minimum" }),
    );
    expect(() => jsonSchemaToGbnf({ type: "number", exclusiveMinimum: Number.MAX_VALUE })).toThrow(
      expect.objectContaining({ code: "SCHEMA_UNSUPPORTED", keyword: "exclusiveMinimum" }),
    );
    // Past every written number on the other side: no bound at all.
    const g = grammar({ type: "number", exclusiveMaximum: Number.MAX_VALUE, minimum: -Number.MAX_VALUE });
    expect(g.matches("-9999999999999999.9999999999999999")).toBe(true);
    expect(g.matches("9999999999999999.9999999999999999")).toBe(true);
    expect(() => jsonSchemaToGbnf({ type: "number", minimum: 2, exclusiveMaximum: 2 })).toThrow(
      expect.objectContaining({ code: "SCHEMA_INVALID" }),
    );
  });

  it("takes draft 4's boolean exclusive bounds", () => {
    // 1 + 2^-52 = 1.0000000000000002; 2 − 2^-52 = 1.9999999999999998.
    const g = grammar({
      type: "number",
      minimum: 1,
      exclusiveMinimum: true,
      maximum: 2,
      exclusiveMaximum: true,
    });
    for (const t of ["1.0000000000000002", "1.5", "1.9999999999999998"]) expect(g.matches(t), t).toBe(true);
    for (const t of ["1", "1.0", "1.0000000000000001", "1.9999999999999999", "2", "0.5"]) {
      expect(g.matches(t), t).toBe(false);
    }
  });

  it("keeps integer bounds on integers (no fraction, no exponent)", () => {
    const g = grammar({ type: "integer", minimum: 2.5, maximum: 7 });
    for (let n = -5; n <= 12; n++) expect(g.matches(String(n)), String(n)).toBe(n >= 3 && n <= 7);
    expect(g.matches("3.0")).toBe(false);
  });
});
