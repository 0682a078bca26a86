import { readGgufSync } from "@minfer/gguf";
import { describe, expect, it } from "vitest";
import { TokenizerError } from "./errors.js";
import { SpmEncoder, spmTokenToPiece } from "./spm.js";
import { testVectors, vocabPath } from "./test-vectors.js";
import { loadVocab, TokenType, type Vocab } from "./vocab.js";

const decoder = new TextDecoder("utf-8", { fatal: true });

/** Encodes as the full tokenizer does with add_special = false and no special tokens in the text. */
function encodeText(enc: SpmEncoder, vocab: Vocab, text: string): number[] {
  const out: number[] = [];
  enc.encode(vocab.addSpacePrefix && text.length > 0 ? ` ${text}` : text, out);
  return out;
}

function decodeIds(vocab: Vocab, ids: readonly number[]): string {
  const parts = ids.map((id) => spmTokenToPiece(vocab, id));
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    bytes.set(p, o);
    o += p.length;
  }
  return decoder.decode(bytes);
}

/** mulberry32: a small seeded PRNG. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = [
  "the",
  " quick",
  " brown fox",
  "Hello",
  " world",
  "ing",
  "tion",
  "нещо",
  " на",
  "Български",
  "我想在",
  "工作",
  "こんにちは",
  "안녕하세요",
  "مرحبا",
  "שלום",
  "ΕΛΛΗΝΙΚΆ",
  "कान्",
  "ពិសេស",
  "🦙",
  "😶\u200d🌫️",
  "🚀",
  "✅",
  "👍🏽",
  "3333",
  "1314151",
  "w048",
  "!!!",
  "'",
  "(",
  ")",
  ".cpp",
  "~",
  "\\",
  "{}",
  "e\u0301",
  "Äpfel",
  "Cửa Việt",
];
const SPACES = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \t ", "\u00a0", "\u3000", "\u2003"];
// Characters that SentencePiece vocabularies rarely hold: they go through byte fallback.
const RARE = [
  "\u{10000}",
  "\u{1F9A9}",
  "\u{E000}",
  "\u{2A6D6}",
  "\u0000",
  "\u0007",
  "\u{1D11E}",
  "\uFFFD",
  "ꙮ",
];

function randomText(rand: () => number): string {
  const n = 1 + Math.floor(rand() * 12);
  let s = "";
  for (let i = 0; i < n; i++) {
    const r = rand();
    if (r < 0.45) s += PIECES[Math.floor(rand() * PIECES.length)];
    else if (r < 0.7) s += SPACES[Math.floor(rand() * SPACES.length)];
    else if (r < 0.82) s += RARE[Math.floor(rand() * RARE.length)];
    else {
      // Any code point outside the surrogate range.
      let cp = Math.floor(rand() * 0x30000);
      if (cp >= 0xd800 && cp <= 0xdfff) cp = 0x41;
      s += String.fromCodePoint(cp);
    }
  }
  return s;
}

/** A plain, quadratic statement of the algorithm: merge the best-scoring, then leftmost, pair. */
function referenceEncode(vocab: Vocab, text: string): number[] {
  const syms = Array.from(text.replaceAll(" ", "▁"));
  for (;;) {
    let best = -1;
    let bestScore = 0;
    for (let i = 0; i + 1 < syms.length; i++) {
      const id = vocab.ids.get(syms[i]! + syms[i + 1]!);
      if (id === undefined) continue;
      const score = vocab.scores ? vocab.scores[id]! : 0;
      if (best < 0 || score > bestScore) {
        best = i;
        bestScore = score;
      }
    }
    if (best < 0) break;
    syms.splice(best, 2, syms[best]! + syms[best + 1]!);
  }
  const out: number[] = [];
  for (const sym of syms) {
    const id = vocab.ids.get(sym);
    if (id !== undefined) out.push(id);
    else
      for (const b of new TextEncoder().encode(sym))
        out.push(vocab.ids.get(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`)!);
  }
  return out;
}

for (const name of ["llama-spm", "phi-3"]) {
  describe(`SpmEncoder on ${name}`, () => {
    const vocab = loadVocab(readGgufSync(vocabPath(name)).metadata);
    const enc = new SpmEncoder(vocab);
    const cases = testVectors(name);

    it("is a llama-model vocabulary with the prefix space", () => {
      expect(vocab.model).toBe("llama");
      expect(vocab.addSpacePrefix).toBe(true);
      expect(cases.length).toBeGreaterThanOrEqual(46);
    });

    it("matches every llama.cpp test vector", () => {
      let pass = 0;
      const fails: string[] = [];
      for (const { text, ids } of cases) {
        const got = encodeText(enc, vocab, text);
        if (got.length === ids.length && got.every((v, i) => v === ids[i])) pass++;
        else fails.push(`${JSON.stringify(text)}: expected ${ids.join(" ")}, got ${got.join(" ")}`);
      }
      expect(fails).toEqual([]);
      expect(pass).toBe(cases.length);
      console.log(`${name}: ${pass}/${cases.length} vectors`);
    });

    it("decodes the vectors back to their text", () => {
      for (const { text, ids } of cases) {
        const decoded = decodeIds(vocab, ids);
        expect(text.length === 0 ? decoded : decoded.slice(1)).toBe(text);
        if (text.length > 0) expect(decoded[0]).toBe(" ");
      }
    });

    it("round-trips random mixed-script text through byte fallback", () => {
      const rand = prng(name === "phi-3" ? 7 : 42);
      let fallbacks = 0;
      for (let k = 0; k < 3000; k++) {
        const text = randomText(rand);
        const ids = encodeText(enc, vocab, text);
        for (const id of ids) {
          if (vocab.types[id] === TokenType.BYTE) fallbacks++;
          expect(id).not.toBe(vocab.special.unk);
        }
        const decoded = decodeIds(vocab, ids);
        expect(decoded.slice(1)).toBe(text);
        // The same encoder gives the same answer again (reused work arrays are reset).
        expect(encodeText(enc, vocab, text)).toEqual(ids);
      }
      expect(fallbacks).toBeGreaterThan(1000);
    });

    it("agrees with a plain quadratic statement of the algorithm on random text", () => {
      const rand = prng(name === "phi-3" ? 99 : 100);
      for (let k = 0; k < 400; k++) {
        const text = ` ${randomText(rand)}`;
        const out: number[] = [];
        enc.encode(text, out);
        expect(out).toEqual(referenceEncode(vocab, text));
      }
      // One long fragment: all the vector inputs, newlines and all.
      const long = ` ${cases.map((c) => c.text).join("\n")}`;
      const out: number[] = [];
      enc.encode(long, out);
      expect(out).toEqual(referenceEncode(vocab, long));
    });

    it("uses uppercase <0xXX> byte tokens for characters outside the vocabulary", () => {
      const out: number[] = [];
      enc.encode("\u{10000}", out);
      expect(out.map((id) => vocab.tokens[id])).toEqual(["<0xF0>", "<0x90>", "<0x80>", "<0x80>"]);
      const tab: number[] = [];
      enc.encode("\t", tab);
      expect(tab.map((id) => vocab.tokens[id])).toEqual(["<0x09>"]);
    });

    it("does not add the prefix space itself", () => {
      const out: number[] = [];
      enc.encode("Hello", out);
      expect(out.map((id) => vocab.tokens[id]).join("")).toBe("Hello");
      const empty: number[] = [];
      enc.encode("", empty);
      expect(empty).toEqual([]);
    });

    it("appends to out", () => {
      const out = [12345];
      enc.encode(" Hello world", out);
      expect(out).toEqual([12345, 15043, 3186]);
    });

    it("treats a literal U+2581 in the text as a space (as llama.cpp does)", () => {
      const a: number[] = [];
      const b: number[] = [];
      enc.encode(" a\u2581b", a);
      enc.encode(" a b", b);
      expect(a).toEqual(b);
      expect(decodeIds(vocab, a)).toBe(" a b");
    });

    it("encodes a lone surrogate as U+FFFD", () => {
      const a: number[] = [];
      const b: number[] = [];
      enc.encode("x\uD800y", a);
      enc.encode("x\uFFFDy", b);
      expect(a).toEqual(b);
    });

    it("decodes pieces by token type", () => {
      expect(decoder.decode(spmTokenToPiece(vocab, vocab.ids.get("▁▁")!))).toBe("  ");
      expect(decoder.decode(spmTokenToPiece(vocab, vocab.ids.get("▁Hello")!))).toBe(" Hello");
      expect(Array.from(spmTokenToPiece(vocab, vocab.ids.get("<0x0A>")!))).toEqual([10]);
      expect(Array.from(spmTokenToPiece(vocab, vocab.ids.get("<0xFF>")!))).toEqual([255]);
      expect(spmTokenToPiece(vocab, vocab.special.bos!).length).toBe(0);
      expect(() => spmTokenToPiece(vocab, vocab.tokens.length)).toThrow(TokenizerError);
      expect(() => spmTokenToPiece(vocab, -1)).toThrow(TokenizerError);
    });
  });
}

/** A hand-made SentencePiece vocabulary. */
function tinyVocab(entries: [string, number][], opts: { bytes?: boolean; unk?: boolean } = {}): Vocab {
  const tokens: string[] = [];
  const scores: number[] = [];
  const types: number[] = [];
  const add = (t: string, s: number, ty: number) => {
    tokens.push(t);
    scores.push(s);
    types.push(ty);
  };
  if (opts.unk !== false) add("<unk>", 0, TokenType.UNKNOWN);
  if (opts.bytes)
    for (let b = 0; b < 256; b++)
      add(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`, 0, TokenType.BYTE);
  for (const [t, s] of entries) add(t, s, TokenType.NORMAL);
  const ids = new Map<string, number>();
  tokens.forEach((t, i) => {
    if (!ids.has(t)) ids.set(t, i);
  });
  // The other fields come from a real SentencePiece vocabulary; only what the encoder reads is replaced.
  const base = loadVocab(readGgufSync(vocabPath("llama-spm")).metadata);
  return {
    ...base,
    tokens,
    ids,
    scores: Float32Array.from(scores),
    types: Int32Array.from(types),
    special: { ...base.special, unk: opts.unk !== false ? 0 : undefined },
  };
}

describe("SpmEncoder merge order", () => {
  const pieces = (v: Vocab, text: string) => {
    const out: number[] = [];
    new SpmEncoder(v).encode(text, out);
    return out.map((id) => v.tokens[id]);
  };

  it("merges the highest-scoring pair first", () => {
    const v = tinyVocab([
      ["a", -1],
      ["b", -1],
      ["c", -1],
      ["ab", -5],
      ["bc", -2],
    ]);
    expect(pieces(v, "abc")).toEqual(["a", "bc"]);
  });

  it("breaks score ties to the left", () => {
    const v = tinyVocab([
      ["a", -1],
      ["b", -1],
      ["ab", -3],
      ["ba", -3],
    ]);
    expect(pieces(v, "aba")).toEqual(["ab", "a"]);
    expect(pieces(v, "bab")).toEqual(["ba", "b"]);
    expect(pieces(v, "ababa")).toEqual(["ab", "ab", "a"]);
  });

  it("keeps merging merged symbols", () => {
    const v = tinyVocab([
      ["▁", -1],
      ["a", -1],
      ["b", -1],
      ["ab", -2],
      ["▁ab", -3],
      ["▁▁", -4],
    ]);
    expect(pieces(v, " ab")).toEqual(["▁ab"]);
    expect(pieces(v, "  ab")).toEqual(["▁", "▁ab"]);
    expect(pieces(v, "   ")).toEqual(["▁▁", "▁"]);
  });

  it("falls back to bytes, or to the unknown token without byte tokens", () => {
    const withBytes = tinyVocab([["a", -1]], { bytes: true });
    expect(pieces(withBytes, "aé")).toEqual(["a", "<0xC3>", "<0xA9>"]);
    const noBytes = tinyVocab([["a", -1]]);
    expect(pieces(noBytes, "aéa")).toEqual(["a", "<unk>", "a"]);
    const noUnk = tinyVocab([["a", -1]], { unk: false });
    expect(() => pieces(noUnk, "é")).toThrow(TokenizerError);
  });

  it("works without scores", () => {
    const v = {
      ...tinyVocab([
        ["a", 0],
        ["b", 0],
        ["ab", 0],
        ["ba", 0],
      ]),
      scores: undefined,
    };
    expect(pieces(v, "aba")).toEqual(["ab", "a"]);
  });
});
