// A BERT WordPiece vocabulary (tokenizer.json's WordPiece model, else vocab.txt) →
// `tokenizer.ggml.model` "bert", as llama.cpp's BertModel.set_vocab writes it: the vocabulary
// padded to vocab_size with [PADn], added tokens CONTROL (special) or USER_DEFINED, then the
// "phantom space" form llama.cpp's WPM tokenizer matches against — a word-initial piece gets a
// U+2581 prefix ("hello" → "▁hello"), a continuation piece loses its "##" ("##ing" → "ing"),
// control tokens stay as they are.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ArchVocab } from "./archs/types.js";
import { bertSpecialTokens, normalizerKeys, readJsonObject, tokenText } from "./bert-special.js";
import { ConvertError } from "./errors.js";
import { i32Array, str, strArray, u32 } from "./kv.js";
import { chatTemplateKeys } from "./special-vocab.js";
import { addedTokens, looksSpecial, TokenType } from "./tokenizer-bpe.js";

type Json = Record<string, unknown>;

/** What an encoder's vocabulary reader takes from config.json. */
export interface EncoderVocabOptions {
  /** config.json as read. */
  config: Json;
  /** config.json's vocab_size (or the class default); the token list is padded to it. */
  vocabSize: number | undefined;
  /** type_vocab_size: `tokenizer.ggml.token_type_count`. */
  typeVocabSize: number;
}

/** BertTokenizer's special token texts, used where tokenizer_config.json names none. */
const BERT_DEFAULTS = { unk: "[UNK]", sep: "[SEP]", pad: "[PAD]", cls: "[CLS]", mask: "[MASK]" } as const;

/** Normalizer steps llama.cpp's WPM tokenizer does itself (lowercasing, accent stripping). */
function checkNormalizer(path: string, n: Json | null | undefined, notes: string[]): void {
  if (!n) return;
  if (n.type === "Sequence" && Array.isArray(n.normalizers)) {
    for (const m of n.normalizers) checkNormalizer(path, m as Json, notes);
    return;
  }
  if (n.type === "BertNormalizer") {
    if (n.clean_text === false || n.handle_chinese_chars === false)
      notes.push(
        `${path}: BertNormalizer has clean_text ${n.clean_text} / handle_chinese_chars ${n.handle_chinese_chars}; llama.cpp's WPM tokenizer always does both`,
      );
    return;
  }
  if (n.type === "Lowercase" || n.type === "StripAccents" || n.type === "NFD") return;
  throw new ConvertError(
    "UNSUPPORTED_TOKENIZER",
    `${path}: normalizer ${JSON.stringify(n.type)} is not one llama.cpp's WPM tokenizer does; supported: BertNormalizer, Lowercase, StripAccents, NFD`,
  );
}

function checkPreTokenizer(path: string, p: Json | null | undefined): void {
  const steps = !p ? [] : p.type === "Sequence" && Array.isArray(p.pretokenizers) ? p.pretokenizers : [p];
  if (steps.length === 1 && (steps[0] as Json).type === "BertPreTokenizer") return;
  throw new ConvertError(
    "UNSUPPORTED_TOKENIZER",
    `${path}: pre_tokenizer ${JSON.stringify(p?.type ?? null)} is not BertPreTokenizer, the splitting llama.cpp's WPM tokenizer does`,
  );
}

interface Base {
  /** Token text by id (holes where neither the vocabulary nor an added token has the id). */
  byId: (string | undefined)[];
  /** Added tokens by id: whether each is special. */
  added: Map<number, boolean>;
  source: string;
}

function fromTokenizerJson(path: string, tj: Json, notes: string[]): Base {
  const model = (tj.model ?? {}) as Json;
  if (model.type !== "WordPiece")
    throw new ConvertError(
      "UNSUPPORTED_TOKENIZER",
      `${path}: tokenizer model ${JSON.stringify(model.type ?? null)} is not WordPiece, the vocabulary BERT's converter reads`,
    );
  const prefix = model.continuing_subword_prefix ?? "##";
  if (prefix !== "##")
    throw new ConvertError(
      "UNSUPPORTED_TOKENIZER",
      `${path}: continuing_subword_prefix ${JSON.stringify(prefix)}; llama.cpp's WPM vocabulary is built from "##" pieces`,
    );
  checkNormalizer(path, tj.normalizer as Json | null, notes);
  checkPreTokenizer(path, tj.pre_tokenizer as Json | null);
  const vocab = model.vocab;
  if (!vocab || typeof vocab !== "object" || Array.isArray(vocab))
    throw new ConvertError("BAD_TOKENIZER", `${path}: model.vocab is not a {token: id} object`);
  const byId: (string | undefined)[] = [];
  for (const [t, id] of Object.entries(vocab as Record<string, unknown>)) {
    if (typeof id !== "number" || !Number.isInteger(id) || id < 0)
      throw new ConvertError(
        "BAD_TOKENIZER",
        `${path}: token ${JSON.stringify(t)} has id ${JSON.stringify(id)}`,
      );
    byId[id] = t;
  }
  const added = new Map<number, boolean>();
  for (const a of addedTokens(path, tj)) {
    byId[a.id] = a.content;
    added.set(a.id, a.special === true);
  }
  return { byId, added, source: path };
}

function fromVocabTxt(path: string, tc: Json | undefined): Base {
  // BertTokenizer's load_vocab: one token per line, its id the line number; a repeated token
  // keeps its last line, so the earlier id has no token.
  const lines = readFileSync(path, "utf8").split("\n");
  if (lines.at(-1) === "") lines.pop();
  const last = new Map<string, number>();
  lines.forEach((t, i) => {
    last.set(t.replace(/\r$/, ""), i);
  });
  const byId: (string | undefined)[] = new Array(lines.length);
  for (const [t, i] of last) byId[i] = t;
  // transformers makes the special tokens added tokens (special) even when vocab.txt holds them.
  const added = new Map<number, boolean>();
  const decoder = tc?.added_tokens_decoder as
    | Record<string, { content?: unknown; special?: unknown }>
    | undefined;
  if (decoder && typeof decoder === "object")
    for (const [id, d] of Object.entries(decoder)) {
      if (typeof d?.content !== "string" || !/^\d+$/.test(id)) continue;
      byId[Number(id)] = d.content;
      added.set(Number(id), d.special === true);
    }
  else
    for (const [type, fallback] of Object.entries(BERT_DEFAULTS)) {
      const id = last.get(tokenText(tc?.[`${type}_token`]) ?? fallback);
      if (id !== undefined) added.set(id, true);
    }
  return { byId, added, source: path };
}

/** The vocabulary's "phantom space" form (see the file comment). */
function phantom(text: string, type: number): string {
  if (type === TokenType.CONTROL) return text;
  return text.startsWith("##") ? text.slice(2) : `\u2581${text}`;
}

/**
 * The "bert" vocabulary of checkpoint `dir`: tokenizer.json (WordPiece) or vocab.txt, with the
 * special tokens and add_bos/add_eos/add_sep flags gguf-py's SpecialVocab finds.
 */
export function readWordPieceVocab(dir: string, o: EncoderVocabOptions): ArchVocab {
  const jsonPath = join(dir, "tokenizer.json");
  const txtPath = join(dir, "vocab.txt");
  const tj = readJsonObject(jsonPath);
  const tc = readJsonObject(join(dir, "tokenizer_config.json"));
  const notes: string[] = [];
  let base: Base;
  if (tj) base = fromTokenizerJson(jsonPath, tj, notes);
  else if (existsSync(txtPath)) base = fromVocabTxt(txtPath, tc);
  else throw new ConvertError("MISSING_FILE", `${dir} has neither tokenizer.json nor vocab.txt`);

  const n = o.vocabSize ?? base.byId.length;
  if (base.byId.length > n)
    throw new ConvertError(
      "BAD_TOKENIZER",
      `${base.source}: token id ${base.byId.length - 1} is past config.json's vocab_size ${n}`,
    );
  const tokens: string[] = [];
  const types = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const text = base.byId[i];
    let type: number = TokenType.NORMAL;
    let t = text ?? `[PAD${i}]`;
    if (text === undefined) type = TokenType.UNUSED;
    else if (base.added.has(i)) {
      if (base.added.get(i) || looksSpecial(text)) type = TokenType.CONTROL;
      else {
        type = TokenType.USER_DEFINED;
        t = text.replaceAll("\u2581", " ");
      }
    }
    types[i] = type;
    tokens.push(phantom(t, type));
  }

  const special = bertSpecialTokens({ tj, tc, config: o.config, nVocab: n });
  // Without tokenizer_config.json (or tokenizer.json to look its texts up in), gguf-py finds no
  // [CLS]/[SEP] and llama.cpp falls back to bert-base's ids (101, 102): look the texts up here.
  const ids = new Map<string, number>();
  base.byId.forEach((t, i) => {
    if (t !== undefined) ids.set(t, i);
  });
  const before = special.ids.size;
  for (const [type, fallback] of Object.entries(BERT_DEFAULTS)) {
    const text = tokenText(tc?.[`${type}_token`]) ?? fallback;
    special.setIfAbsent(type, ids.get(text));
  }
  special.setIfAbsent("bos", special.ids.get("cls"));
  special.setIfAbsent("eos", special.ids.get("sep"));
  if (special.ids.size > before)
    notes.push(
      `special tokens looked up by text in the vocabulary (${[...special.ids.keys()].join(", ")}); llama.cpp's converter finds only those tokenizer_config.json names among tokenizer.json's added tokens`,
    );

  const pre = "default";
  const metadata = [
    u32("tokenizer.ggml.token_type_count", o.typeVocabSize),
    str("tokenizer.ggml.model", "bert"),
    str("tokenizer.ggml.pre", pre),
    strArray("tokenizer.ggml.tokens", tokens),
    i32Array("tokenizer.ggml.token_type", types),
    ...special.metadata(n),
    ...chatTemplateKeys(dir, tc),
    ...normalizerKeys(tj),
  ];
  notes.push(...special.notes);
  return { metadata, nVocab: n, pre, notes };
}
