// A byte-level BPE tokenizer.json → `tokenizer.ggml.model` "gpt2": tokens, token types, merges
// and the pre-tokenizer's name, as llama.cpp's converter writes them.
import { ConvertError } from "./errors.js";
import { identifyPreTokenizer } from "./pre-tokenizer.js";

/** `tokenizer.ggml.token_type` values. */
export const TokenType = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

export interface HfAddedToken {
  id: number;
  content: string;
  special?: boolean;
}

/** Token texts llama.cpp treats as control tokens even when they are not marked special. */
export function looksSpecial(t: string): boolean {
  return (
    ["<pad>", "<mask>", "<2mass>", "[@BOS@]"].includes(t) ||
    (t.startsWith("<|") && t.endsWith("|>")) ||
    (t.startsWith("<｜") && t.endsWith("｜>")) ||
    (t.startsWith("<unused") && t.endsWith(">"))
  );
}

/** tokenizer.json's added tokens, checked. */
export function addedTokens(path: string, tj: Record<string, unknown>): HfAddedToken[] {
  const added = (Array.isArray(tj.added_tokens) ? tj.added_tokens : []) as HfAddedToken[];
  for (const a of added)
    if (!Number.isInteger(a.id) || a.id < 0 || typeof a.content !== "string")
      throw new ConvertError("BAD_TOKENIZER", `${path}: added token ${JSON.stringify(a)} is malformed`);
  return added;
}

export interface BpeVocab {
  tokens: string[];
  types: Int32Array;
  merges: string[];
  pre: string;
}

/**
 * The vocabulary of a byte-level BPE tokenizer.json, padded with `[PADn]` to `vocabSize`
 * (config.json's). `preferPre` picks among the names of the pre-tokenizer's split rule.
 */
export function readBpeVocab(
  path: string,
  tj: Record<string, unknown>,
  vocabSize: number | undefined,
  preferPre: readonly string[],
): BpeVocab {
  const model = (tj.model ?? {}) as Record<string, unknown>;
  if (model.type !== "BPE")
    throw new ConvertError(
      "UNSUPPORTED_TOKENIZER",
      `${path}: tokenizer model ${JSON.stringify(model.type ?? null)} is not supported here; only byte-level BPE (Llama 3, Qwen2/3, GPT-2 style)`,
    );
  if (model.byte_fallback === true)
    throw new ConvertError(
      "UNSUPPORTED_TOKENIZER",
      `${path}: a SentencePiece-style BPE tokenizer (byte_fallback, ▁ for spaces: Llama 2) is not supported for this architecture; only byte-level BPE`,
    );
  const pre = identifyPreTokenizer(path, tj.pre_tokenizer as never, preferPre);
  const vocab = model.vocab as Record<string, number> | undefined;
  if (!vocab || typeof vocab !== "object")
    throw new ConvertError("BAD_TOKENIZER", `${path}: model.vocab is missing`);
  const added = addedTokens(path, tj);
  let maxId = -1;
  for (const id of Object.values(vocab)) maxId = Math.max(maxId, id);
  for (const a of added) maxId = Math.max(maxId, a.id);
  const nVocab = Math.max(vocabSize ?? 0, maxId + 1);
  const tokens: (string | undefined)[] = new Array(nVocab);
  const types = new Int32Array(nVocab);
  for (const [t, id] of Object.entries(vocab)) {
    if (!Number.isInteger(id) || id < 0)
      throw new ConvertError("BAD_TOKENIZER", `${path}: token ${JSON.stringify(t)} has id ${id}`);
    tokens[id] = t;
    types[id] = TokenType.NORMAL;
  }
  for (const a of added) {
    tokens[a.id] = a.content;
    types[a.id] = a.special || looksSpecial(a.content) ? TokenType.CONTROL : TokenType.USER_DEFINED;
  }
  for (let i = 0; i < nVocab; i++) {
    if (tokens[i] === undefined) {
      tokens[i] = `[PAD${i}]`;
      types[i] = TokenType.USER_DEFINED;
    }
  }
  const rawMerges = Array.isArray(model.merges) ? model.merges : [];
  const merges = rawMerges.map((m: unknown, i) => {
    if (typeof m === "string") return m;
    if (Array.isArray(m) && m.length === 2 && m.every((x) => typeof x === "string"))
      // [a, b] pairs (transformers ≥ 4.45) may hold spaces: llama.cpp's writer escapes them as U+0120.
      return m.map((x: string) => x.replaceAll(" ", "\u0120")).join(" ");
    throw new ConvertError(
      "BAD_TOKENIZER",
      `${path}: merge ${i} ${JSON.stringify(m)} is neither "a b" nor [a, b]`,
    );
  });
  if (merges.length === 0) throw new ConvertError("BAD_TOKENIZER", `${path}: model.merges is empty`);
  return { tokens: tokens as string[], types, merges, pre };
}
