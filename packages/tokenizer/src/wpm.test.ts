import { readGgufSync } from "@minfer/gguf";
import { describe, expect, it } from "vitest";
import { TokenizerError } from "./errors.js";
import { testVectors, vocabPath } from "./test-vectors.js";
import { loadVocab } from "./vocab.js";
import { WpmEncoder, wpmTokenToPiece } from "./wpm.js";

const decoder = new TextDecoder("utf-8", { fatal: true });

describe("WpmEncoder on bert-bge", () => {
  const vocab = loadVocab(readGgufSync(vocabPath("bert-bge")).metadata);
  const enc = new WpmEncoder(vocab);
  const encode = (text: string) => {
    const out: number[] = [];
    enc.encode(text, out);
    return out;
  };
  const pieces = (text: string) => encode(text).map((id) => vocab.tokens[id]);
  const decode = (ids: number[]) => ids.map((id) => decoder.decode(wpmTokenToPiece(vocab, id))).join("");

  it("stores word starts with ▁ and continuations bare", () => {
    expect(vocab.model).toBe("bert");
    expect(vocab.ids.has("▁hello")).toBe(true);
    expect(vocab.tokens.some((t) => t.startsWith("##"))).toBe(false);
  });

  it("matches every llama.cpp test vector", () => {
    const cases = testVectors("bert-bge");
    expect(cases.length).toBeGreaterThanOrEqual(46);
    let pass = 0;
    const fails: string[] = [];
    for (const { text, ids } of cases) {
      const got = encode(text);
      if (got.length === ids.length && got.every((v, i) => v === ids[i])) pass++;
      else fails.push(`${JSON.stringify(text)}: expected ${ids.join(" ")}, got ${got.join(" ")}`);
    }
    expect(fails).toEqual([]);
    expect(pass).toBe(cases.length);
    console.log(`bert-bge: ${pass}/${cases.length} vectors`);
  });

  it("lowercases, drops accents of precomposed letters and splits punctuation", () => {
    expect(pieces("Hello, WORLD!")).toEqual(["▁hello", "▁,", "▁world", "▁!"]);
    expect(pieces("Cửa Việt")).toEqual(["▁cu", "a", "▁viet"]);
    expect(encode("Café")).toEqual(encode("cafe"));
    expect(pieces("a+b")).toEqual(["▁a", "▁+", "▁b"]);
    expect(pieces("café")).toEqual(["▁cafe"]);
    // A combining accent written separately is stripped too (Mn marks, as BERT's normalizer does).
    expect(pieces("cafe\u0301")).toEqual(["▁cafe"]);
  });

  it("makes each CJK ideograph a word, and unknown words [UNK]", () => {
    expect(pieces("中国人")).toEqual(["▁中", "▁国", "▁人"]);
    expect(pieces("我想")).toEqual(["▁我", "[UNK]"]); // 想 is not in this vocabulary
    expect(pieces("🦙 hello")).toEqual(["[UNK]", "▁hello"]);
  });

  it("drops control and format characters, splits on all whitespace", () => {
    expect(encode("hel\u200blo\u0000")).toEqual(encode("hello"));
    expect(encode("a\u3000b\u00a0c\u2028d")).toEqual(encode("a b c d"));
    expect(encode("")).toEqual([]);
    expect(encode(" \t\n ")).toEqual([]);
  });

  it("appends to out", () => {
    const out = [7];
    enc.encode("hello", out);
    expect(out).toEqual([7, vocab.ids.get("▁hello")]);
  });

  it("decodes to the normalized text, a space before each word", () => {
    expect(decode(encode("Hello, y'all! Unaffable"))).toBe(" hello , y ' all ! unaffable");
    expect(decode(encode("Äpfel"))).toBe(" apfel");
    expect(decode([vocab.special.unk!, vocab.special.cls ?? 101])).toBe("");
    expect(() => wpmTokenToPiece(vocab, vocab.tokens.length)).toThrow(TokenizerError);
  });

  it("decodes the vectors back to their normalized words", () => {
    for (const { text, ids } of testVectors("bert-bge")) {
      if (ids.includes(vocab.special.unk!)) continue;
      const words = decode(ids)
        .split(" ")
        .filter((w) => w.length > 0);
      const expected = text
        .normalize("NFD")
        .replace(/\p{M}/gu, "")
        .toLowerCase()
        .replace(/[\p{P}\p{S}\p{Ideographic}]/gu, " $& ")
        .split(/\s+/u)
        .filter((w) => w.length > 0);
      expect(words).toEqual(expected);
    }
  });
});
