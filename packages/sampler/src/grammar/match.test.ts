import { describe, expect, it } from "vitest";
import { fixtureGrammar } from "./test-fixtures.js";
import { arithmetic, CHESS, ENGLISH, JAPANESE, LIST } from "./test-recognisers.js";

/** Accepted and rejected texts, written by hand from each grammar's meaning. */
const CASES: Record<string, { accept: string[]; reject: string[]; check?: (s: string) => boolean }> = {
  arithmetic: {
    accept: [
      "1+2=3\n",
      "a = b\n",
      "(x*y)=z\n",
      "x1_=2\n1=1\n",
      "(1 +2) /3 = 1\n",
      "((a))=(b-c)\n",
      "1=2 \n\n",
    ],
    reject: ["", "1+2=3", "1++2=3\n", "=1\n", "A=1\n", "1+ 2=3\n", " 1=2\n", "1=2+3\n", "(1=2)\n", "1=2\n "],
    check: (s) => arithmetic(s) === "complete",
  },
  json: {
    accept: [
      '{"a": [1, 2.5, -3e5, true, null, {"b": "\\u00e9x"}]}',
      "{}",
      '{"a":"b"}',
      '{ "k" : 0 }',
      '{"a":"é😀\\n\\"\\\\"}',
      '{\n  "a": [],\n  "b": {}\n}',
      '{"a":-0.5E+3}',
    ],
    reject: [
      "[1]",
      '{"a" 1}',
      '{"a":01}',
      '{"a":1,}',
      '{"a":"\u0001"}',
      '{"a":"\\x"}',
      '{"a":tru}',
      '{"a":1.}',
      '{"a":"\\u12"}',
      "{} {}",
      ' {"a":1}',
      '{"a":[1 2]}',
    ],
  },
  chess: {
    accept: [
      "1. e4 e5\n2. Nf3 Nc6\n",
      "1. d4 d5\n2. c4 dxc4\n3. O-O-O Qxd8+\n",
      "1. e8=Q O-O#\n10. Rae1 h1=N\n",
    ],
    reject: [
      "1. e4 e5\n",
      "1. e9 e5\n2. a1 a2\n",
      "1. e4 e5\n0. a1 a2\n",
      "1. Pe4 e5\n2. a1 a2\n",
      "1.e4 e5\n2. a1 a2\n",
    ],
    check: (s) => CHESS.test(s),
  },
  list: {
    accept: ["- a\n", "- a\n- bc d\n", "- 😀 é\n"],
    reject: ["", "- \n", "- a", "- a\u2028b\n", "-a\n", "- a\x85\n", "- a\rb\n", "- a\n\n"],
    check: (s) => LIST.test(s),
  },
  english: {
    accept: ["Hello, world!", "a\tb", "x[1]\\y", "a\nb c"],
    reject: ["", "Hello  world", " x", "héllo", "x ", "a\rb"],
    check: (s) => ENGLISH.test(s),
  },
  japanese: {
    accept: ["こんにちは", "カタカナ 漢字。", "ひらがな\tカタカナ"],
    reject: ["", "abc", "こんにちは ", "😀", "漢字 a"],
    check: (s) => JAPANESE.test(s),
  },
  c: {
    accept: [
      "",
      "int main(){return 0;}",
      "int f(int x){x = x+1;}",
      "float g(){while(a<b){a = a*2;}if(a==b){return a;}else{return -b;}}",
      "char h(){// note\n/* multi * line */}",
      "int k(){for(int i = 0; i<10; i = i+1){f (i, 2);}}",
    ],
    reject: [
      "int main() {}",
      "intmain(){}",
      "int main(){return 0}",
      "int main(){/* x */ }",
      "void f(){}",
      "int k(){f(i);}",
    ],
  },
};

describe("Grammar.matches: the fixture grammars", () => {
  for (const [name, { accept, reject, check }] of Object.entries(CASES)) {
    const g = fixtureGrammar(name);
    it(`${name} accepts what it should`, () => {
      for (const s of accept) {
        expect(g.matches(s), JSON.stringify(s)).toBe(true);
        if (check) expect(check(s), `recogniser on ${JSON.stringify(s)}`).toBe(true);
      }
    });
    it(`${name} rejects what it should`, () => {
      for (const s of reject) {
        expect(g.matches(s), JSON.stringify(s)).toBe(false);
        if (check) expect(check(s), `recogniser on ${JSON.stringify(s)}`).toBe(false);
      }
    });
  }

  it("json accepts exactly the JSON objects among these", () => {
    const g = fixtureGrammar("json");
    for (const s of [...CASES.json!.accept, ...CASES.json!.reject]) {
      let object = false;
      try {
        const v = JSON.parse(s);
        object = typeof v === "object" && v !== null && !Array.isArray(v) && !/^\s/.test(s);
      } catch {}
      expect(g.matches(s), JSON.stringify(s)).toBe(object);
    }
  });

  it("matchesPrefix tells a prefix from a dead end, bytes included", () => {
    const g = fixtureGrammar("json");
    expect(g.matchesPrefix('{"a": [1, ')).toBe(true);
    expect(g.matchesPrefix('{"a": ]')).toBe(false);
    const jp = fixtureGrammar("japanese");
    const a = new TextEncoder().encode("あ"); // E3 81 82
    expect(jp.matchesPrefix(a.subarray(0, 1))).toBe(true);
    expect(jp.matchesPrefix(a.subarray(0, 2))).toBe(true);
    expect(jp.matchesPrefix(new Uint8Array([0xc3]))).toBe(false); // U+00C0–U+00FF: none is Japanese
    expect(jp.matchesPrefix(new Uint8Array([0xe3, 0x41]))).toBe(false); // broken UTF-8
    expect(jp.matchesPrefix(new Uint8Array([0xf0]))).toBe(false); // U+10000 and up: none in the grammar
  });
});
