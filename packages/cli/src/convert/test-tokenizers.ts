// Test-only: the tokenizer files Hugging Face ships, written from a fixture GGUF vocabulary made by
// llama.cpp: SentencePiece `tokenizer.model` (a ModelProto, written here), the tokenizer.json
// transformers makes of it (BPE with byte_fallback, merges as its SentencePieceExtractor orders
// them) and tokenizer_config.json; or a byte-level BPE tokenizer.json with a chosen pre-tokenizer.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { readGguf } from "@minfer/gguf";

/** A fixture vocabulary as the GGUF holds it. */
export interface FixtureVocab {
  tokens: string[];
  scores?: Float32Array;
  types: number[];
  merges?: string[];
  md: Awaited<ReturnType<typeof readGguf>>["metadata"];
}

const cache = new Map<string, Promise<FixtureVocab>>();

export function readFixtureVocab(path: string): Promise<FixtureVocab> {
  let p = cache.get(path);
  if (!p) {
    p = readGguf(path).then((f) => {
      const md = f.metadata;
      const scores = md.optNumberArray("tokenizer.ggml.scores");
      return {
        tokens: md.stringArray("tokenizer.ggml.tokens"),
        scores: scores ? Float32Array.from(scores) : undefined,
        types: Array.from(md.optNumberArray("tokenizer.ggml.token_type")!),
        merges: md.optStringArray("tokenizer.ggml.merges"),
        md,
      };
    });
    cache.set(path, p);
  }
  return p;
}

// ── protobuf ─────────────────────────────────────────────────────────────────────────────────────

function varint(n: number, out: number[]): void {
  let v = n;
  while (v >= 0x80) {
    out.push((v % 128) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
}
const key = (field: number, wire: number, out: number[]) => varint(field * 8 + wire, out);
function lenField(field: number, bytes: Uint8Array | number[], out: number[]): void {
  key(field, 2, out);
  varint(bytes.length, out);
  for (const b of bytes) out.push(b);
}
function varintField(field: number, v: number, out: number[]): void {
  key(field, 0, out);
  varint(v, out);
}
function floatField(field: number, v: number, out: number[]): void {
  key(field, 5, out);
  const b = new Uint8Array(4);
  new DataView(b.buffer).setFloat32(0, v, true);
  out.push(...b);
}

export interface SpmModelOptions {
  /** TrainerSpec.model_type: 1 Unigram, 2 BPE (default). */
  modelType?: number;
  byteFallback?: boolean;
  addDummyPrefix?: boolean;
  removeExtraWhitespaces?: boolean;
  normalizer?: string;
}

/** A SentencePiece ModelProto (sentencepiece_model.proto field numbers). */
export function sentencePieceModel(
  pieces: { piece: string; score: number; type: number }[],
  o: SpmModelOptions = {},
): Uint8Array {
  const enc = new TextEncoder();
  const out: number[] = [];
  for (const p of pieces) {
    const m: number[] = [];
    lenField(1, enc.encode(p.piece), m);
    floatField(2, p.score, m);
    if (p.type !== 1) varintField(3, p.type, m);
    lenField(1, m, out);
  }
  const t: number[] = [];
  varintField(3, o.modelType ?? 2, t);
  varintField(4, pieces.length, t);
  if (o.byteFallback ?? true) varintField(35, 1, t);
  varintField(40, 0, t);
  varintField(41, 1, t);
  varintField(42, 2, t);
  lenField(2, t, out);
  const n: number[] = [];
  lenField(1, enc.encode(o.normalizer ?? "identity"), n);
  varintField(3, (o.addDummyPrefix ?? true) ? 1 : 0, n);
  varintField(4, o.removeExtraWhitespaces ? 1 : 0, n);
  lenField(3, n, out);
  return Uint8Array.from(out);
}

/**
 * Merges as transformers' SentencePieceExtractor derives them from a SentencePiece model: for each
 * piece, its splits into two pieces (by their ids), all ordered by the piece's score, highest first.
 */
export function extractMerges(pieces: { piece: string; score: number }[]): [string, string][] {
  const id = new Map<string, number>();
  pieces.forEach((p, i) => {
    if (!id.has(p.piece)) id.set(p.piece, i);
  });
  const all: { l: string; r: string; score: number; order: number }[] = [];
  pieces.forEach((p) => {
    const chars = [...p.piece];
    const local: { l: string; r: string }[] = [];
    for (let i = 1; i < chars.length; i++) {
      const l = chars.slice(0, i).join("");
      const r = chars.slice(i).join("");
      if (id.has(l) && id.has(r)) local.push({ l, r });
    }
    local.sort((a, b) => id.get(a.l)! - id.get(b.l)! || id.get(a.r)! - id.get(b.r)!);
    for (const m of local) all.push({ ...m, score: p.score, order: all.length });
  });
  all.sort((a, b) => b.score - a.score || a.order - b.order);
  return all.map((m) => [m.l, m.r]);
}

export interface AddedToken {
  id: number;
  content: string;
  special: boolean;
}

const addedJson = (a: AddedToken) => ({
  id: a.id,
  content: a.content,
  single_word: false,
  lstrip: false,
  rstrip: false,
  normalized: false,
  special: a.special,
});

/** The tokenizer.json transformers writes for a Llama-2-style SentencePiece BPE model. */
export function spmTokenizerJson(
  pieces: { piece: string; score: number; type: number }[],
  added: AddedToken[],
  o: { prepend?: boolean; bos?: string } = {},
): Record<string, unknown> {
  const vocab: Record<string, number> = Object.create(null);
  pieces.forEach((p, i) => {
    if (!Object.hasOwn(vocab, p.piece)) vocab[p.piece] = i;
  });
  const prepend = o.prepend ?? true;
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: added.map(addedJson),
    normalizer: prepend
      ? {
          type: "Sequence",
          normalizers: [
            { type: "Prepend", prepend: "▁" },
            { type: "Replace", pattern: { String: " " }, content: "▁" },
          ],
        }
      : { type: "Replace", pattern: { String: " " }, content: "▁" },
    pre_tokenizer: null,
    post_processor: o.bos
      ? {
          type: "TemplateProcessing",
          single: [{ SpecialToken: { id: o.bos, type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
          pair: [],
          special_tokens: {},
        }
      : null,
    decoder: {
      type: "Sequence",
      decoders: [
        { type: "Replace", pattern: { String: "▁" }, content: " " },
        { type: "ByteFallback" },
        { type: "Fuse" },
        { type: "Strip", content: " ", start: 1, stop: 0 },
      ],
    },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: "<unk>",
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: true,
      ignore_merges: false,
      vocab,
      merges: extractMerges(pieces).map(([l, r]) => `${l} ${r}`),
    },
  };
}

/** tokenizer_config.json's added_tokens_decoder for `added`. */
export function addedTokensDecoder(added: AddedToken[]): Record<string, unknown> {
  return Object.fromEntries(added.map((a) => [String(a.id), { ...addedJson(a), id: undefined }]));
}

/** Byte-level BPE pre-tokenizers as Hugging Face writes them, by the rule's name. */
export const BPE_PRE_TOKENIZERS: Record<string, unknown> = {
  cl100k: {
    type: "Sequence",
    pretokenizers: [
      {
        type: "Split",
        pattern: {
          Regex:
            "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
        },
        behavior: "Isolated",
        invert: false,
      },
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
    ],
  },
  o200k: {
    type: "Sequence",
    pretokenizers: [
      {
        type: "Split",
        pattern: {
          Regex:
            "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
        },
        behavior: "Isolated",
        invert: false,
      },
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
    ],
  },
  digits: {
    type: "Sequence",
    pretokenizers: [
      { type: "Digits", individual_digits: true },
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
    ],
  },
  "gpt-2": { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
};

/**
 * A byte-level BPE tokenizer.json from a fixture vocabulary: NORMAL tokens → model.vocab, the
 * others → added tokens (CONTROL special); `extraAdded` appends tokens past the vocabulary.
 */
export function bpeTokenizerJson(
  v: FixtureVocab,
  pre: string,
  extraAdded: AddedToken[] = [],
): Record<string, unknown> {
  const vocab: Record<string, number> = Object.create(null);
  const added: AddedToken[] = [];
  v.tokens.forEach((t, id) => {
    if (v.types[id] === 1) vocab[t] = id;
    else if (!/^\[PAD\d+\]$/.test(t)) added.push({ id, content: t, special: v.types[id] === 3 });
  });
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: [...added, ...extraAdded].map(addedJson),
    normalizer: null,
    pre_tokenizer: BPE_PRE_TOKENIZERS[pre],
    post_processor: { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
    decoder: { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: "",
      end_of_word_suffix: "",
      fuse_unk: false,
      byte_fallback: false,
      vocab,
      merges: v.merges!.map((m) => m.split(" ")),
    },
  };
}

/** The pieces of a fixture SentencePiece vocabulary, up to `count` (before added tokens). */
export function fixturePieces(
  v: FixtureVocab,
  count: number,
): { piece: string; score: number; type: number }[] {
  return v.tokens.slice(0, count).map((piece, i) => ({ piece, score: v.scores![i]!, type: v.types[i]! }));
}

export function writeJson(path: string, value: unknown): void {
  writeFileSync(path, JSON.stringify(value, null, 1));
}

/** The files of a Llama-2-style SentencePiece tokenizer (tokenizer.model and/or tokenizer.json). */
export function writeSpmTokenizer(
  dir: string,
  pieces: { piece: string; score: number; type: number }[],
  added: AddedToken[],
  config: Record<string, unknown>,
  o: {
    model?: boolean;
    json?: boolean;
    prepend?: boolean;
    bos?: string;
    modelOptions?: SpmModelOptions;
    /** Write tokenizer_config.json's added_tokens_decoder (transformers ≥ 4.34 does). */
    decoder?: boolean;
  } = {},
): void {
  if (o.model ?? true)
    writeFileSync(
      join(dir, "tokenizer.model"),
      sentencePieceModel(pieces, { addDummyPrefix: o.prepend ?? true, ...o.modelOptions }),
    );
  if (o.json ?? true)
    writeJson(
      join(dir, "tokenizer.json"),
      spmTokenizerJson(pieces, added, { prepend: o.prepend, bos: o.bos }),
    );
  writeJson(join(dir, "tokenizer_config.json"), {
    ...((o.decoder ?? true) ? { added_tokens_decoder: addedTokensDecoder(added) } : {}),
    ...config,
  });
}
