// Pre-tokenizers checked against their model's split regex run by another engine: the expected
// pieces below are what Python's `regex` module makes of the tokenizer.json pattern (Hugging Face
// writes it for Oniguruma; `regex` has the same Unicode classes and `(?i:…)` groups).
import { describe, expect, it } from "vitest";
import { preTokenize, preTokenizer } from "./pre-tokenizers.js";

/** cl100k's pattern (GLM-4, Llama 3, DBRX, OLMo 2), as tokenizer.json writes it. */
const REGEX = String.raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
/** [text, the pieces Python's regex module cuts it into with REGEX]. */
const CL100K: [string, string[]][] = [
  [
    "Hello world's 12345 test\n\n  x",
    ["Hello", " world", "'s", " ", "123", "45", " test", "\n\n", " ", " x"],
  ],
  [
    "I'VE been 'told he's THERE, 'RE you sure? 'M not",
    [
      "I",
      "'VE",
      " been",
      " '",
      "told",
      " he",
      "'s",
      " THERE",
      ",",
      " '",
      "RE",
      " you",
      " sure",
      "?",
      " '",
      "M",
      " not",
    ],
  ],
  ["  leading spaces and trailing   ", [" ", " leading", " spaces", " and", " trailing", "   "]],
  ["tabs\tand\r\nwindows\r\n\r\nlines", ["tabs", "\tand", "\r\n", "windows", "\r\n\r\n", "lines"]],
  ["1234567 3.14159 -42 +7", ["123", "456", "7", " ", "3", ".", "141", "59", " -", "42", " +", "7"]],
  [
    "¡Hola, señor! Ça va? Größe 東京タワー 2024年",
    ["¡Hola", ",", " señor", "!", " Ça", " va", "?", " Größe", " 東京タワー", " ", "202", "4", "年"],
  ],
  [
    "emoji 🚀🦙 (x)=>{y};\n\t\tcode()",
    ["emoji", " 🚀🦙", " (", "x", ")=>{", "y", "};\n", "\t", "\tcode", "()"],
  ],
  ["a\u00a0b\u3000c \u2009d", ["a", "\u00a0b", "\u3000c", " ", "\u2009d"]],
];

describe("pre-tokenizers against the tokenizer.json split regex (Python regex)", () => {
  it(`the vectors cover their texts (pieces of ${REGEX.length}-character REGEX)`, () => {
    for (const [text, pieces] of CL100K) expect(pieces.join("")).toBe(text);
  });
  for (const name of ["glm4", "llama-bpe", "dbrx"]) {
    it(`${name} splits as cl100k's regex`, () => {
      const pre = preTokenizer(name);
      for (const [text, pieces] of CL100K)
        expect(preTokenize(pre, text), JSON.stringify(text)).toEqual(pieces);
    });
  }
});
