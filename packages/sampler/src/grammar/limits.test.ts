import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SamplerError } from "../errors.js";
import { BYTE_VOCAB } from "../json-schema/test-support.js";
import { GrammarError } from "./errors.js";
import { Grammar } from "./grammar.js";
import { MAX_ELEMENTS, MAX_ENTRIES, MAX_NESTING, MAX_OPEN_PARSES, MAX_STATE_PARSES } from "./limits.js";
import { fixturesDir } from "./test-fixtures.js";

// Grammars that would take unbounded stack, memory or time are refused when parsed, with the bound
// in the message; matching never recurses on the depth of the grammar or of the text. The counts
// expected below are worked out by hand from how compile.ts lowers repetitions:
// x{m,n} = m copies of x in place, then n − m rules `r ::= x next | ε`.

function tooLarge(text: string): GrammarError {
  try {
    Grammar.parse(text);
  } catch (e) {
    expect(e).toBeInstanceOf(GrammarError);
    expect((e as GrammarError).code).toBe("GRAMMAR_TOO_LARGE");
    expect((e as GrammarError).argument).toBe("grammar");
    return e as GrammarError;
  }
  throw new Error(`expected ${JSON.stringify(text.slice(0, 80))} to be refused`);
}

describe("Grammar.parse: nesting", () => {
  const groups = (n: number) => `root ::= ${"(".repeat(n)}"a"${")".repeat(n)}`;

  it(`parses groups nested ${MAX_NESTING} deep and refuses one more`, () => {
    expect(Grammar.parse(groups(MAX_NESTING)).matches("a")).toBe(true);
    expect(tooLarge(groups(MAX_NESTING + 1)).message).toContain(`more than ${MAX_NESTING} deep`);
  });

  it("refuses 100,000 nested groups with the error, not a stack overflow", () => {
    expect(tooLarge(groups(100_000)).message).toContain(String(MAX_NESTING));
  });

  it("counts repetition operators as levels: `x` then 300 `?`", () => {
    expect(Grammar.parse(`root ::= "a"${"?".repeat(MAX_NESTING - 1)}`).matches("")).toBe(true);
    expect(tooLarge(`root ::= "a"${"?".repeat(300)}`).message).toContain(String(MAX_NESTING));
    tooLarge(`root ::= "a"${"?".repeat(50_000)}`);
  });

  it("reads very long numbers and rule names without spreading them into a call", () => {
    expect(Grammar.parse(`root ::= "a"{${"0".repeat(200_000)}2}`).matches("aa")).toBe(true);
    const name = "r".repeat(200_000);
    expect(Grammar.parse(`root ::= ${name}\n${name} ::= "x"`).matches("x")).toBe(true);
  });
});

describe("Grammar.parse: elements once repetitions are unrolled", () => {
  it("counts x{m} as m copies: ('a'{500}){999} is 499,501 elements with its end, and fits", () => {
    const g = Grammar.parse('root ::= ("a"{500}){999}');
    expect(g.program.code.length).toBe(500 * 999 + 1);
    expect(g.matchesPrefix("a".repeat(5000))).toBe(true);
    expect(g.matches("a".repeat(5000))).toBe(false);
  });

  it(`refuses ('a'{500}){1000}: 500,001 elements, past ${MAX_ELEMENTS}`, () => {
    const e = tooLarge('root ::= ("a"{500}){1000}');
    expect(e.message).toContain("500001 elements");
    expect(e.message).toContain(`${MAX_ELEMENTS} allowed`);
    expect(e.rule).toBe("root");
  });

  it("refuses nested counts that multiply to millions before building them", () => {
    expect(tooLarge('root ::= ("a"{2000}){2000}').message).toContain("4000001 elements");
    // 2000^4 · 1 + 1: far too many to build; refused at once.
    const t0 = Date.now();
    expect(tooLarge('root ::= x\nx ::= (((("a"{2000}){2000}){2000}){2000})').message).toContain(
      "16000000000003 elements",
    );
    expect(Date.now() - t0).toBeLessThan(1000);
  });
});

describe("Grammar.parse: parses opened by one character", () => {
  it("refuses optional items repeated inside repetitions: (('a'?){0,500}){0,500} opens 250,000", () => {
    // "a"? opens 1; ("a"?){0,500} is a chain of 500 optional copies, all open at once: 500; the outer
    // chain of 500 copies of that: 500 · 500.
    const e = tooLarge('root ::= (("a"?){0,500}){0,500}');
    expect(e.message).toContain("250000 parses");
    expect(e.message).toContain(`${MAX_OPEN_PARSES} allowed`);
  });

  it("refuses the grammar llama.cpp's parser test refuses for multiplying repetitions", () => {
    tooLarge("root ::= (((((([^x]*){0,99}){0,99}){0,99}){0,99}){0,99}){0,99}");
  });

  it("refuses nullable rules multiplying through sequences: 2^20 ways to one character", () => {
    const rules = ['r0 ::= "x" | ""'];
    for (let i = 1; i <= 20; i++) rules.push(`r${i} ::= r${i - 1} r${i - 1}`);
    tooLarge(`root ::= r20 "y"\n${rules.join("\n")}`);
  });

  it("accepts a wide alternation of words (one parse per word, each entered once)", () => {
    const words = Array.from({ length: 20_000 }, (_, i) => `"w${i}"`);
    const g = Grammar.parse(`root ::= ${words.join(" | ")}`);
    expect(g.matches("w19999")).toBe(true);
    expect(g.matches("w20000")).toBe(false);
  });
});

describe("Grammar.parse: ways to enter one rule", () => {
  it(`accepts ("a"?){0,${MAX_ENTRIES}} and refuses ("a"?){0,${MAX_ENTRIES + 1}}`, () => {
    // The optional "a" is entered once from each of the n copies.
    const g = Grammar.parse(`root ::= ("a"?){0,${MAX_ENTRIES}}`);
    expect(g.matches("a".repeat(MAX_ENTRIES))).toBe(true);
    expect(g.matches("a".repeat(MAX_ENTRIES + 1))).toBe(false);
    const e = tooLarge(`root ::= ("a"?){0,${MAX_ENTRIES + 1}}`);
    expect(e.message).toContain(`${MAX_ENTRIES + 1} ways`);
    expect(e.message).toContain(`${MAX_ENTRIES} allowed`);
  });

  it('refuses root ::= ("a"?){0,2000} when parsed (it used to overflow the stack on its first match)', () => {
    expect(tooLarge('root ::= ("a"?){0,2000}').message).toContain("2000 ways");
  });
});

describe("matching: no recursion on the depth of the text", () => {
  it("pops 50,000 nested rules that all end on one character", () => {
    // After 50,000 "(", the "x" ends every level at once (c matches nothing): one expansion pops
    // through all of them.
    const g = Grammar.parse('root ::= "(" root c | "x"\nc ::= ""');
    expect(g.matches(`${"(".repeat(50_000)}x`)).toBe(true);
    expect(g.matches(`${"(".repeat(50_000)}xx`)).toBe(false);
  });

  it("matches JSON arrays nested 10,000 deep under json.gbnf", () => {
    const g = Grammar.parse(readFileSync(join(fixturesDir(), "grammars", "json.gbnf"), "utf8"));
    const deep = (n: number) => `{"a": ${"[".repeat(n)}${"]".repeat(n)}}`;
    expect(g.matches(deep(10_000))).toBe(true);
    expect(g.matchesPrefix(`{"a": ${"[".repeat(10_000)}`)).toBe(true);
    expect(g.matches(`{"a": ${"[".repeat(10_000)}${"]".repeat(9_999)}}`)).toBe(false);
  });
});

describe("matching: parses open at once", () => {
  // After n "a", the n pending "b"s can each be x or y: 2^n rests. Each holds the two "a" of the
  // next root, and the innermost pending "b" (x's or y's) stands on 2^(n-1) rests: 3 · 2^n stacks.
  // Within the bound of 2^17 up to n = 15 (98,304); n = 16 would be 196,608.
  const ambiguous = 'root ::= "a" root x | "a" root y | ""\nx ::= "b"\ny ::= "b"';

  it("matches a text within the bound", () => {
    const g = Grammar.parse(ambiguous);
    expect(g.matches(`${"a".repeat(10)}${"b".repeat(10)}`)).toBe(true);
    expect(g.matches(`${"a".repeat(10)}${"b".repeat(9)}`)).toBe(false);
    expect(g.matchesPrefix("a".repeat(15))).toBe(true);
  });

  it(`stops with GRAMMAR_TOO_LARGE past ${MAX_STATE_PARSES} parses, in matches() and in a constraint`, () => {
    const g = Grammar.parse(ambiguous);
    const text = "a".repeat(16);
    expect(() => g.matches(text)).toThrow(
      expect.objectContaining({
        code: "GRAMMAR_TOO_LARGE",
        message: expect.stringContaining(`more than ${MAX_STATE_PARSES} parses`),
      }),
    );
    const c = g.constraint(BYTE_VOCAB);
    let error: unknown;
    try {
      for (let i = 0; i < 16; i++) c.accept(0x61);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SamplerError);
    expect((error as SamplerError).code).toBe("GRAMMAR_TOO_LARGE");
  });
});
