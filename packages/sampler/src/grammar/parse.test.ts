import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GrammarError } from "./errors.js";
import { Grammar } from "./grammar.js";
import { fixturesDir, grammarText } from "./test-fixtures.js";

function fails(text: string, root?: string): GrammarError {
  try {
    Grammar.parse(text, root);
  } catch (e) {
    expect(e).toBeInstanceOf(GrammarError);
    return e as GrammarError;
  }
  throw new Error(`expected ${JSON.stringify(text)} to be refused`);
}

describe("Grammar.parse: llama.cpp's grammars", () => {
  const files = readdirSync(join(fixturesDir(), "grammars")).filter((f) => f.endsWith(".gbnf"));
  it("finds the fixture grammars", () => {
    expect(files).toEqual(
      expect.arrayContaining([
        "json.gbnf",
        "json_arr.gbnf",
        "arithmetic.gbnf",
        "list.gbnf",
        "chess.gbnf",
        "c.gbnf",
        "english.gbnf",
        "japanese.gbnf",
      ]),
    );
  });
  it.each(files)("parses %s with every rule it defines", (f) => {
    const text = grammarText(f.replace(/\.gbnf$/, ""));
    const g = Grammar.parse(text);
    const defined = [...text.matchAll(/^([A-Za-z0-9_-]+)\s*::=/gm)].map((m) => m[1]);
    expect(g.ruleNames).toEqual(defined);
  });
});

describe("Grammar.parse: syntax", () => {
  it.each([
    ['root ::= "a" | "b"', ["a", "b"], ["", "ab", "c"]],
    ['root ::= "a" "b"   # a comment\n', ["ab"], ["a", "b"]],
    ['root ::= ("a" | "b")+', ["a", "abba"], ["", "abc"]],
    ['root ::= "ab"*', ["", "ab", "abab"], ["a", "aba"]],
    ['root ::= "a"?"b"', ["b", "ab"], ["aab", "a"]],
    ['root ::= "a"{3}', ["aaa"], ["aa", "aaaa"]],
    ['root ::= "a"{2,}', ["aa", "aaaaaaa"], ["a", ""]],
    ['root ::= "a"{1,3}', ["a", "aa", "aaa"], ["", "aaaa"]],
    ['root ::= "a"{,2}', ["", "a", "aa"], ["aaa"]],
    ['root ::= "a"{0}', [""], ["a"]],
    ['root ::= ("ab" | "c"){2}', ["abab", "cab", "cc", "abc"], ["ab", "abcab", "a"]],
    ["root ::= [a-c]+", ["abc", "cab"], ["d", "", "a-c"]],
    ["root ::= [^a-c\\n]", ["d", "-", "é", "😀"], ["a", "c", "\n"]],
    ["root ::= [a-]", ["a", "-"], ["b"]],
    ["root ::= [\\]\\\\\\[^]", ["]", "\\", "[", "^"], ["a"]],
    ["root ::= .", ["a", "\n", "😀", "\u{10ffff}"], ["", "ab"]],
    ['root ::= "\\n\\r\\t\\\\\\"\\x41\\u00e9\\U0001F600"', ['\n\r\t\\"Aé😀'], ["x"]],
    ["root ::= [\\x30-\\x39\\u0100-\\u017F]", ["5", "ā", "ſ"], ["a", "ƀ"]],
    ['root ::= "é😀"', ["é😀"], ["e"]],
    ["root ::= a-rule2\na-rule2 ::= [0-9] [0-9]", ["12"], ["1"]],
    // Multi-line rules: after ::= and |, inside groups, and a next line that starts no rule.
    ['root ::=\n  "a"\n  | "b"\nother ::= "c"', ["a", "b"], ["c"]],
    ['root ::= (\n  "a"   # first\n  "b"\n)\n', ["ab"], ["a"]],
    ['root ::= "a" |\n  "b"', ["a", "b"], ["ab"]],
    ['root ::= "a"\n   "b"\n\n# comment\nx ::= "c"', ["ab"], ["a"]],
    ['root ::= x\r\nx ::= "y"\r\n', ["y"], [""]],
    ['root ::= | "a"', ["", "a"], ["aa"]],
    // Nullable loops are fine (no left recursion that grows the stack).
    ['root ::= ("a"?)* "b"', ["b", "aab"], ["a"]],
    ['root ::= (x)* "b"\nx ::= "a" | ', ["b", "aab"], ["ba"]],
  ])("%j", (text, accept, reject) => {
    const g = Grammar.parse(text);
    for (const s of accept) expect(g.matches(s), JSON.stringify(s)).toBe(true);
    for (const s of reject) expect(g.matches(s), JSON.stringify(s)).toBe(false);
  });

  it("starts from another root when asked", () => {
    const g = Grammar.parse('root ::= "a"\nother ::= "b"', "other");
    expect(g.matches("b")).toBe(true);
    expect(g.matches("a")).toBe(false);
  });
});

describe("Grammar.parse: errors", () => {
  it.each([
    ['root ::= "abc', 1, 14, /unterminated string/],
    ["root ::= [abc", 1, 14, /unterminated character class/],
    ['root ::= "a"\nfoo = "b"', 2, 5, /expected an element.*found '='/],
    ["root = x", 1, 6, /expected '::='/],
    ['root ::= "a" )', 1, 14, /unexpected '\)'/],
    ['root ::= ( "a" ', 1, 16, /expected '\)'/],
    ['root ::= "\\q"', 1, 12, /unknown escape '\\q'/],
    ['root ::= "\\x4"', 1, 14, /expected 2 hexadecimal digits/],
    ["root ::= [z-a]", 1, 13, /below its start/],
    ['root ::= * "a"', 1, 10, /expected an element before '\*'/],
    ['root ::= "a"{2,1}', 1, 10, /maximum is below the minimum/],
    ['root ::= "a"{x}', 1, 14, /expected a number/],
    ['root ::= "a"{2', 1, 15, /expected '}'/],
    ['\n\n  root ::= "a"\n  ::= "b"', 4, 3, /expected a rule name/],
    ['root ::= "a"\nroot ::= "b"', 2, 1, /defined twice/],
    ['root ::= "é" @', 1, 14, /found '@'/],
    ["root ::= <think>", 1, 10, /token references/],
  ])("%j: GRAMMAR_SYNTAX at line %i, column %i", (text, line, column, message) => {
    const e = fails(text);
    expect(e.code).toBe("GRAMMAR_SYNTAX");
    expect([e.line, e.column]).toEqual([line, column]);
    expect(e.message).toMatch(message);
    expect(e.message).toMatch(`line ${line}, column ${column}`);
  });

  it("names an undefined rule and where it is referenced", () => {
    const e = fails('root ::= "a" thing\n');
    expect(e.code).toBe("GRAMMAR_UNDEFINED_RULE");
    expect(e.rule).toBe("thing");
    expect(e.message).toMatch(/'thing'/);
    expect([e.line, e.column]).toEqual([1, 14]);
  });

  it("names a missing root", () => {
    const e = fails('start ::= "a"');
    expect(e.code).toBe("GRAMMAR_UNDEFINED_RULE");
    expect(e.rule).toBe("root");
    expect(e.message).toMatch(/root/);
    expect(fails('start ::= "a"', "main").message).toMatch(/'main'/);
  });

  it.each([
    ['root ::= expr\nexpr ::= expr "+" term | term\nterm ::= [0-9]', "expr"],
    ['root ::= a\na ::= b "x"\nb ::= c? a\nc ::= "c"', "a"],
    ['root ::= ("x"? root "y")?', "root"],
    ['root ::= a "x"\na ::= ws root\nws ::= [ ]*', "root"],
  ])("refuses left recursion in %j naming %s", (text, rule) => {
    const e = fails(text);
    expect(e.code).toBe("GRAMMAR_LEFT_RECURSION");
    expect(e.message).toMatch(new RegExp(`rule '${rule}'`));
  });

  it("accepts right recursion and recursion after a character", () => {
    const g = Grammar.parse('root ::= "(" root ")" | "x"\n');
    expect(g.matches("((x))")).toBe(true);
    expect(g.matches("((x)")).toBe(false);
  });
});
