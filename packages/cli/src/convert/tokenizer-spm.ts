// A SentencePiece vocabulary → `tokenizer.ggml.model` "llama": tokens, scores and token types, as
// llama.cpp's converter builds them from `tokenizer.model` (its _create_vocab_sentencepiece, and
// Phi-3's variant), and the same from a tokenizer.json holding a Unigram model or a BPE model with
// byte_fallback (what transformers makes of a tokenizer.model).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ConvertError } from "./errors.js";
import { PieceType, parseSentencePieceModel, SpmModelType, type SpmPiece } from "./sentencepiece-model.js";
import { addedTokens, looksSpecial, TokenType } from "./tokenizer-bpe.js";

export interface SpmVocab {
  tokens: string[];
  scores: Float32Array;
  types: Int32Array;
  /** Whether the tokenizer itself puts a ▁ before the text (add_dummy_prefix, Prepend, Metaspace). */
  addsPrefix: boolean;
  /** The file the pieces came from. */
  source: string;
  notes: string[];
}

/** How added tokens are typed: llama.cpp's generic rule, or Phi-3's own (Phi3MiniModel.set_vocab). */
export type AddedTokenRule = "default" | "phi3";

/** Score of a piece no merge produces, below every merge (a tokenizer.json BPE model). */
const NO_MERGE = -1e9;

interface BasePieces {
  pieces: SpmPiece[];
  addsPrefix: boolean;
  source: string;
}

function fromModelFile(path: string): BasePieces {
  const m = parseSentencePieceModel(readFileSync(path), path);
  const refuse = (what: string) =>
    new ConvertError(
      "UNSUPPORTED_TOKENIZER",
      `${path}: ${what}; llama.cpp's "llama" tokenizer cannot represent it`,
    );
  if (m.modelType !== SpmModelType.BPE && m.modelType !== SpmModelType.UNIGRAM)
    throw refuse(`SentencePiece model_type ${m.modelType} (WORD/CHAR) is not BPE or Unigram`);
  if ((m.normalizerName !== "" && m.normalizerName !== "identity") || m.charsmapBytes > 0)
    throw refuse(`normalizer_spec ${JSON.stringify(m.normalizerName)} normalizes the text`);
  if (m.removeExtraWhitespaces) throw refuse("normalizer_spec.remove_extra_whitespaces is set");
  if (!m.escapeWhitespaces) throw refuse("normalizer_spec.escape_whitespaces is off");
  if (m.whitespaceAsSuffix) throw refuse("trainer_spec.treat_whitespace_as_suffix is set");
  return { pieces: m.pieces, addsPrefix: m.addDummyPrefix, source: path };
}

interface Step {
  type?: string;
  pattern?: { String?: string; Regex?: string };
  content?: string;
  prepend?: string;
  replacement?: string;
  prepend_scheme?: string;
  add_prefix_space?: boolean;
  split?: boolean;
  normalizers?: Step[];
  pretokenizers?: Step[];
}

/** The ▁-prefix a tokenizer.json's normalizer and pre-tokenizer add; anything else is refused. */
function jsonPrefix(path: string, tj: Record<string, unknown>): boolean {
  const refuse = (what: string) =>
    new ConvertError(
      "UNSUPPORTED_TOKENIZER",
      `${path}: ${what} is not supported in a SentencePiece-style tokenizer.json (llama.cpp's "llama" tokenizer does not normalize text)`,
    );
  const norm = tj.normalizer as Step | null | undefined;
  const norms = !norm ? [] : norm.type === "Sequence" ? (norm.normalizers ?? []) : [norm];
  let prefix = false;
  let replacesSpaces = false;
  for (const n of norms) {
    if (n.type === "Prepend" && n.prepend === "▁") prefix = true;
    else if (n.type === "Replace" && n.pattern?.String === " " && n.content === "▁") replacesSpaces = true;
    else throw refuse(`normalizer ${JSON.stringify(n)}`);
  }
  const pre = tj.pre_tokenizer as Step | null | undefined;
  const pres = !pre ? [] : pre.type === "Sequence" ? (pre.pretokenizers ?? []) : [pre];
  for (const p of pres) {
    if (p.type === "Metaspace" && (p.replacement ?? "▁") === "▁" && p.split !== true) {
      replacesSpaces = true;
      const scheme = p.prepend_scheme ?? (p.add_prefix_space === false ? "never" : "always");
      if (scheme !== "never") prefix = true;
    } else if (p.type === "Split" && p.pattern?.String === " " && replacesSpaces) {
      // Splitting on " " after every space became ▁ splits nothing.
    } else throw refuse(`pre_tokenizer ${JSON.stringify(p)}`);
  }
  if (!replacesSpaces) throw refuse("a tokenizer that does not turn spaces into ▁");
  return prefix;
}

const BYTE_PIECE = /^<0x[0-9A-Fa-f]{2}>$/;

function fromTokenizerJson(path: string, tj: Record<string, unknown>): BasePieces {
  const model = (tj.model ?? {}) as Record<string, unknown>;
  const addsPrefix = jsonPrefix(path, tj);
  const added = addedTokens(path, tj);
  const special = new Set(added.filter((a) => a.special).map((a) => a.content));
  const byteFallback = model.byte_fallback === true;
  const typeOf = (piece: string, isUnk: boolean): number =>
    isUnk
      ? PieceType.UNKNOWN
      : special.has(piece)
        ? PieceType.CONTROL
        : byteFallback && BYTE_PIECE.test(piece)
          ? PieceType.BYTE
          : PieceType.NORMAL;
  const pieces: SpmPiece[] = [];
  if (model.type === "Unigram") {
    const vocab = model.vocab;
    if (!Array.isArray(vocab))
      throw new ConvertError("BAD_TOKENIZER", `${path}: Unigram model.vocab is not a list`);
    const unk = typeof model.unk_id === "number" ? model.unk_id : -1;
    vocab.forEach((e: unknown, i) => {
      if (!Array.isArray(e) || typeof e[0] !== "string" || typeof e[1] !== "number")
        throw new ConvertError("BAD_TOKENIZER", `${path}: Unigram vocab entry ${i} is not [piece, score]`);
      pieces.push({ piece: e[0], score: e[1], type: typeOf(e[0], i === unk) });
    });
    return { pieces, addsPrefix, source: path };
  }
  if (model.type !== "BPE" || !byteFallback)
    throw new ConvertError(
      "UNSUPPORTED_TOKENIZER",
      `${path}: tokenizer model ${JSON.stringify(model.type ?? null)}${model.type === "BPE" ? " without byte_fallback" : ""} is not a SentencePiece-style one (Unigram, or BPE with byte_fallback)`,
    );
  const vocab = model.vocab as Record<string, number> | undefined;
  if (!vocab || typeof vocab !== "object" || Array.isArray(vocab))
    throw new ConvertError("BAD_TOKENIZER", `${path}: model.vocab is missing`);
  const byId: string[] = [];
  const known = new Set(Object.keys(vocab));
  for (const [t, id] of Object.entries(vocab)) {
    if (!Number.isInteger(id) || id < 0 || byId[id] !== undefined)
      throw new ConvertError("BAD_TOKENIZER", `${path}: token ${JSON.stringify(t)} has id ${id}`);
    byId[id] = t;
  }
  for (let i = 0; i < byId.length; i++)
    if (byId[i] === undefined)
      throw new ConvertError("BAD_TOKENIZER", `${path}: model.vocab has no token ${i}`);
  // tokenizer.json keeps merges, not scores: a piece's score is minus the rank of the first merge
  // that makes it, so llama.cpp's highest-score-first merging takes them in the same order.
  const rank = new Map<string, number>();
  const merges = Array.isArray(model.merges) ? model.merges : [];
  merges.forEach((m: unknown, r) => {
    const pair = typeof m === "string" ? [m.slice(0, m.indexOf(" ")), m.slice(m.indexOf(" ") + 1)] : m;
    if (
      !Array.isArray(pair) ||
      pair.length !== 2 ||
      !pair.every((x) => typeof x === "string" && known.has(x))
    )
      throw new ConvertError(
        "BAD_TOKENIZER",
        `${path}: merge ${r} ${JSON.stringify(m)} is not a pair of vocabulary tokens`,
      );
    const merged = pair[0] + pair[1];
    if (!known.has(merged))
      throw new ConvertError(
        "BAD_TOKENIZER",
        `${path}: merge ${r} ${JSON.stringify(m)} makes ${JSON.stringify(merged)}, not in the vocabulary`,
      );
    if (!rank.has(merged)) rank.set(merged, r);
  });
  const unk = typeof model.unk_token === "string" ? model.unk_token : undefined;
  byId.forEach((piece) => {
    const type = typeOf(piece, piece === unk);
    const r = rank.get(piece);
    const score = r !== undefined ? -r : type === PieceType.NORMAL ? NO_MERGE : 0;
    pieces.push({ piece, score, type });
  });
  return { pieces, addsPrefix, source: path };
}

function readJson(path: string): Record<string, unknown> {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  } catch (e) {
    throw new ConvertError("BAD_FILE", `${path}: not valid JSON (${(e as Error).message})`);
  }
}

/** Whether tokenizer.json holds a SentencePiece-style model (Unigram, or BPE with byte_fallback). */
export function isSpmJson(tj: Record<string, unknown>): boolean {
  const m = (tj.model ?? {}) as Record<string, unknown>;
  return m.type === "Unigram" || (m.type === "BPE" && m.byte_fallback === true);
}

/**
 * The "llama" vocabulary of checkpoint `dir`: pieces from tokenizer.model when there is one, else
 * from `tj` (tokenizer.json); padded to `vocabSize` with `[PADn]` (score −10000, UNUSED); then
 * added_tokens.json (USER_DEFINED, −1000) and tokenizer_config.json's added_tokens_decoder (and,
 * for Phi-3, tokenizer.json's added tokens) overriding their ids.
 */
export function readSpmVocab(
  dir: string,
  vocabSize: number | undefined,
  rule: AddedTokenRule,
  tj: Record<string, unknown> | undefined,
  tc: Record<string, unknown> | undefined,
): SpmVocab {
  const modelPath = join(dir, "tokenizer.model");
  const base = existsSync(modelPath)
    ? fromModelFile(modelPath)
    : tj
      ? fromTokenizerJson(join(dir, "tokenizer.json"), tj)
      : (() => {
          throw new ConvertError("MISSING_FILE", `${dir} has neither tokenizer.model nor tokenizer.json`);
        })();
  const n = vocabSize ?? base.pieces.length;
  const notes: string[] = [];
  const tokens: string[] = Array.from({ length: n }, (_, i) => `[PAD${i}]`);
  const scores = new Float32Array(n).fill(-10000);
  const types = new Int32Array(n).fill(TokenType.UNUSED);
  base.pieces.forEach((p, i) => {
    if (i >= n) return;
    tokens[i] = p.piece;
    scores[i] = p.score;
    types[i] = p.type === PieceType.USER_DEFINED ? TokenType.NORMAL : p.type;
  });
  if (base.pieces.length > n)
    notes.push(`${base.pieces.length - n} pieces of ${base.source} past vocab_size ${n} were left out`);
  const set = (id: number, text: string, type: number) => {
    if (!Number.isInteger(id) || id < 0 || id >= n) {
      notes.push(
        `added token ${JSON.stringify(text)} (id ${id}) is outside the vocabulary of ${n}; left out`,
      );
      return;
    }
    tokens[id] = text;
    scores[id] = -1000;
    types[id] = type;
  };
  const addedPath = join(dir, "added_tokens.json");
  if (existsSync(addedPath))
    for (const [text, id] of Object.entries(readJson(addedPath)))
      set(id as number, text, TokenType.USER_DEFINED);
  const decoder = (tc?.added_tokens_decoder ?? {}) as Record<
    string,
    { content?: unknown; special?: unknown }
  >;
  for (const [idText, d] of Object.entries(decoder)) {
    if (typeof d?.content !== "string") continue;
    const special = d.special === true;
    if (rule === "phi3") set(Number(idText), d.content, special ? TokenType.CONTROL : TokenType.USER_DEFINED);
    else if (special || looksSpecial(d.content)) set(Number(idText), d.content, TokenType.CONTROL);
    else set(Number(idText), d.content.replaceAll("▁", " "), TokenType.USER_DEFINED);
  }
  if (rule === "phi3" && tj)
    for (const a of addedTokens(join(dir, "tokenizer.json"), tj))
      set(a.id, a.content, a.special ? TokenType.CONTROL : TokenType.USER_DEFINED);
  return { tokens, scores, types, addsPrefix: base.addsPrefix, source: base.source, notes };
}
