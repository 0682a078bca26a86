// Test-only: the tokenizer files of tiny BERT-family checkpoints, as Hugging Face ships them — a
// WordPiece vocabulary (tokenizer.json, or vocab.txt alone), an XLM-RoBERTa-style Unigram
// tokenizer.json with a Precompiled charsmap built here — and reference tokenizers written from
// transformers' semantics (BasicTokenizer + WordpieceTokenizer; Metaspace + Unigram Viterbi), so the
// ids a test feeds both sides come from neither the converter nor llama.cpp.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { writeJson } from "./test-tokenizers.js";

const LETTERS = "abcdefghijklmnopqrstuvwxyz".split("");
const WORDS = [
  "the",
  "an",
  "is",
  "are",
  "was",
  "of",
  "to",
  "and",
  "in",
  "on",
  "at",
  "for",
  "with",
  "this",
  "that",
  "it",
  "how",
  "many",
  "people",
  "live",
  "what",
  "where",
  "who",
  "hello",
  "world",
  "quick",
  "brown",
  "fox",
  "jump",
  "over",
  "lazy",
  "dog",
  "cat",
  "sat",
  "mat",
  "city",
  "capital",
  "germany",
  "berlin",
  "paris",
  "france",
  "river",
  "music",
  "play",
  "read",
  "book",
  "sentence",
  "embed",
  "model",
  "test",
  "small",
  "large",
  "good",
  "bad",
  "day",
  "night",
  "sun",
  "moon",
  "water",
  "fire",
  "tree",
  "house",
  "car",
  "red",
  "blue",
  "green",
  "run",
  "walk",
  "talk",
  "eat",
  "drink",
  "food",
  "time",
  "year",
  "new",
  "old",
  "first",
  "last",
  "cafe",
  "million",
  "about",
  "there",
];

/**
 * A WordPiece vocabulary of a couple of hundred tokens laid out like bert-base-uncased's: [PAD],
 * [unusedN], [UNK], [CLS], [SEP], [MASK], punctuation, digits, letters, "##" letters, words and
 * "##" suffixes.
 */
export const TINY_WORDPIECE: readonly string[] = (() => {
  const v = [
    "[PAD]",
    "[unused0]",
    "[unused1]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    ..."!\"'(),-.:;?".split(""),
    ..."0123456789".split(""),
    ...LETTERS,
    ...LETTERS.map((c) => `##${c}`),
    ...WORDS,
    "##ing",
    "##ed",
    "##er",
    "##ly",
    "##ding",
  ];
  if (new Set(v).size !== v.length) throw new Error("TINY_WORDPIECE has a repeated token");
  return v;
})();

/** The special tokens of the WordPiece vocabulary (added tokens, special). */
export const WORDPIECE_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] as const;

const added = (id: number, content: string) => ({
  id,
  content,
  single_word: false,
  lstrip: false,
  rstrip: false,
  normalized: false,
  special: true,
});

/** The tokenizer.json transformers writes for a BertTokenizerFast over `vocab`. */
export function wordPieceTokenizerJson(vocab: readonly string[]): Record<string, unknown> {
  const id = (t: string) => vocab.indexOf(t);
  const tpl = (t: string, type: number) => ({ SpecialToken: { id: t, type_id: type } });
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: WORDPIECE_SPECIALS.map((t) => added(id(t), t)).sort((a, b) => a.id - b.id),
    normalizer: {
      type: "BertNormalizer",
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: null,
      lowercase: true,
    },
    pre_tokenizer: { type: "BertPreTokenizer" },
    post_processor: {
      type: "TemplateProcessing",
      single: [tpl("[CLS]", 0), { Sequence: { id: "A", type_id: 0 } }, tpl("[SEP]", 0)],
      pair: [
        tpl("[CLS]", 0),
        { Sequence: { id: "A", type_id: 0 } },
        tpl("[SEP]", 0),
        { Sequence: { id: "B", type_id: 1 } },
        tpl("[SEP]", 1),
      ],
      special_tokens: Object.fromEntries(
        ["[CLS]", "[SEP]"].map((t) => [t, { id: t, ids: [id(t)], tokens: [t] }]),
      ),
    },
    decoder: { type: "WordPiece", prefix: "##", cleanup: true },
    model: {
      type: "WordPiece",
      unk_token: "[UNK]",
      continuing_subword_prefix: "##",
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(vocab.map((t, i) => [t, i])),
    },
  };
}

/** Writes a BERT tokenizer: tokenizer.json + tokenizer_config.json, or vocab.txt alone (`txt`). */
export function writeWordPieceTokenizer(dir: string, vocab: readonly string[], txt = false): void {
  writeFileSync(join(dir, "vocab.txt"), `${vocab.join("\n")}\n`);
  if (txt) return;
  writeJson(join(dir, "tokenizer.json"), wordPieceTokenizerJson(vocab));
  writeJson(join(dir, "tokenizer_config.json"), {
    added_tokens_decoder: Object.fromEntries(
      WORDPIECE_SPECIALS.map((t) => [String(vocab.indexOf(t)), { ...added(0, t), id: undefined }]),
    ),
    clean_up_tokenization_spaces: true,
    cls_token: "[CLS]",
    do_lower_case: true,
    mask_token: "[MASK]",
    model_max_length: 512,
    pad_token: "[PAD]",
    sep_token: "[SEP]",
    strip_accents: null,
    tokenize_chinese_chars: true,
    tokenizer_class: "BertTokenizer",
    unk_token: "[UNK]",
  });
}

const isPunct = (c: string) => /^\p{P}$/u.test(c) || /^[!-/:-@[-`{-~]$/.test(c);

/**
 * transformers' BertTokenizer on `text` (BasicTokenizer: lowercase, strip accents, split on
 * spaces and punctuation; then greedy longest-match-first WordPiece), without special tokens.
 */
export function wordPieceEncode(vocab: readonly string[], text: string): number[] {
  const ids = new Map(vocab.map((t, i) => [t, i]));
  const words: string[] = [];
  const clean = text
    .toLowerCase()
    .normalize("NFD")
    .replace(/\p{Mn}/gu, "");
  for (const chunk of clean.split(/\s+/u).filter(Boolean)) {
    let cur = "";
    for (const c of chunk) {
      if (isPunct(c)) {
        if (cur) words.push(cur);
        words.push(c);
        cur = "";
      } else cur += c;
    }
    if (cur) words.push(cur);
  }
  const out: number[] = [];
  for (const w of words) {
    const pieces: number[] = [];
    let start = 0;
    let bad = false;
    while (start < w.length) {
      let end = w.length;
      let hit: number | undefined;
      while (start < end) {
        hit = ids.get((start > 0 ? "##" : "") + w.slice(start, end));
        if (hit !== undefined) break;
        end--;
      }
      if (hit === undefined) {
        bad = true;
        break;
      }
      pieces.push(hit);
      start = end;
    }
    if (bad) out.push(ids.get("[UNK]")!);
    else out.push(...pieces);
  }
  return out;
}

// ── Unigram (XLM-RoBERTa) ───────────────────────────────────────────────────────────────────────

/** [piece, score] of a tiny XLM-RoBERTa-style Unigram vocabulary; `<mask>` comes last. */
export const TINY_UNIGRAM: readonly (readonly [string, number])[] = (() => {
  const v: [string, number][] = [
    ["<s>", 0],
    ["<pad>", 0],
    ["</s>", 0],
    ["<unk>", 0],
    ["\u2581", -3],
    ...",.!?'".split("").map((c): [string, number] => [c, -4]),
    ...LETTERS.map((c): [string, number] => [c, -8]),
    ...LETTERS.map((c): [string, number] => [`\u2581${c}`, -7.5]),
    ...LETTERS.map((c): [string, number] => [c.toUpperCase(), -8.5]),
    ...LETTERS.map((c): [string, number] => [`\u2581${c.toUpperCase()}`, -8]),
    ...WORDS.map((w, i): [string, number] => [`\u2581${w}`, -5 - (i % 7) * 0.25]),
    ["ing", -6.5],
    ["ed", -6.5],
    ["<mask>", 0],
  ];
  if (new Set(v.map((p) => p[0])).size !== v.length) throw new Error("TINY_UNIGRAM has a repeated piece");
  return v;
})();

/**
 * A Precompiled normalizer charsmap (SentencePiece's format, which both Hugging Face's Precompiled
 * normalizer and llama.cpp read): a u32 byte size, a XOR-compressed double-array trie of u32
 * units, then the NUL-terminated replacement strings. This one maps "é" (C3 A9) to "e". A unit is
 * BASE << 10 | LEAF << 8 | LABEL; the value unit of a key holds the replacement's offset.
 */
export function tinyCharsmap(): Uint8Array {
  const units = new Uint32Array(512);
  // Root (index 0): BASE 0, so the first byte c goes to unit c.
  const afterC3 = 0x100; // BASE of unit 0xC3: its children are at 0x1C3 ^ c
  units[0xc3] = (afterC3 << 10) | 0xc3;
  const second = 0xc3 ^ afterC3 ^ 0xa9; // unit of the second byte A9 (a leaf)
  const valueUnit = 0x1ff;
  units[second] = ((second ^ valueUnit) << 10) | (1 << 8) | 0xa9;
  units[valueUnit] = 0; // offset 0 in the strings: "e\0"
  const strings = new TextEncoder().encode("e\0");
  const out = new Uint8Array(4 + units.byteLength + strings.length);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, units.byteLength, true);
  for (let i = 0; i < units.length; i++) dv.setUint32(4 + 4 * i, units[i]!, true);
  out.set(strings, 4 + units.byteLength);
  return out;
}

/** The tokenizer.json transformers writes for an XLMRobertaTokenizerFast over `pieces`. */
export function unigramTokenizerJson(
  pieces: readonly (readonly [string, number])[],
): Record<string, unknown> {
  const specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"];
  const id = (t: string) => pieces.findIndex((p) => p[0] === t);
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: specials.map((t) => ({ ...added(id(t), t), lstrip: t === "<mask>" })),
    normalizer: {
      type: "Sequence",
      normalizers: [
        { type: "Precompiled", precompiled_charsmap: Buffer.from(tinyCharsmap()).toString("base64") },
        { type: "Replace", pattern: { Regex: " {2,}" }, content: " " },
      ],
    },
    pre_tokenizer: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "always", split: true },
    post_processor: {
      type: "RobertaProcessing",
      sep: ["</s>", 2],
      cls: ["<s>", 0],
      trim_offsets: true,
      add_prefix_space: true,
    },
    decoder: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "always", split: true },
    model: { type: "Unigram", unk_id: 3, vocab: pieces.map(([p, s]) => [p, s]), byte_fallback: false },
  };
}

export function writeUnigramTokenizer(dir: string, pieces: readonly (readonly [string, number])[]): void {
  writeJson(join(dir, "tokenizer.json"), unigramTokenizerJson(pieces));
  writeJson(join(dir, "tokenizer_config.json"), {
    bos_token: "<s>",
    clean_up_tokenization_spaces: true,
    cls_token: "<s>",
    eos_token: "</s>",
    mask_token: {
      content: "<mask>",
      lstrip: true,
      normalized: false,
      rstrip: false,
      single_word: false,
      special: true,
    },
    model_max_length: 512,
    pad_token: "<pad>",
    sep_token: "</s>",
    tokenizer_class: "XLMRobertaTokenizer",
    unk_token: "<unk>",
  });
}

/**
 * transformers' XLMRobertaTokenizerFast on `text` without special tokens: the charsmap ("é" → "e"),
 * runs of spaces collapsed, Metaspace (spaces → ▁, a ▁ before each word), then the Viterbi
 * segmentation of each word with the highest total score.
 */
export function unigramEncode(pieces: readonly (readonly [string, number])[], text: string): number[] {
  const ids = new Map(pieces.map(([p], i) => [p, i]));
  const norm = text.replaceAll("é", "e").replace(/ {2,}/g, " ");
  const out: number[] = [];
  for (const word of norm.split(" ").filter(Boolean)) {
    const w = [...`\u2581${word}`];
    const best: { score: number; from: number; id: number }[] = [{ score: 0, from: -1, id: -1 }];
    for (let end = 1; end <= w.length; end++) {
      best[end] = { score: Number.NEGATIVE_INFINITY, from: -1, id: -1 };
      for (let start = 0; start < end; start++) {
        const id = ids.get(w.slice(start, end).join(""));
        if (id === undefined || best[start]!.score === Number.NEGATIVE_INFINITY) continue;
        const s = best[start]!.score + pieces[id]![1];
        if (s > best[end]!.score) best[end] = { score: s, from: start, id };
      }
    }
    if (best[w.length]!.score === Number.NEGATIVE_INFINITY)
      throw new Error(`unigramEncode: cannot segment ${word}`);
    const seg: number[] = [];
    for (let e = w.length; e > 0; e = best[e]!.from) seg.unshift(best[e]!.id);
    out.push(...seg);
  }
  return out;
}
