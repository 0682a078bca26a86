// The special-token keys of BERT-family vocabularies, as gguf-py's SpecialVocab writes them: the
// shared rules (special-vocab.ts) plus what the encoders need besides — add_sep_token from the
// post-processor's pair template ("[CLS] A [SEP] B [SEP]": no extra separator; RoBERTa's
// "<s> A </s></s> B </s>": one), the CLS/SEP that RobertaProcessing names when
// tokenizer_config.json does not, and BertNormalizer's lowercase / strip_accents flags.
import { existsSync, readFileSync } from "node:fs";
import type { GgufKV } from "@minfer/gguf";
import { ConvertError } from "./errors.js";
import { bool } from "./kv.js";
import { addedTokenId, readSpecialTokens, type SpecialTokens } from "./special-vocab.js";

type Json = Record<string, unknown>;

/** A JSON object file, or undefined when it does not exist; malformed JSON is BAD_FILE. */
export function readJsonObject(path: string): Json | undefined {
  if (!existsSync(path)) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    throw new ConvertError("BAD_FILE", `${path}: not valid JSON (${(e as Error).message})`);
  }
  if (typeof v !== "object" || v === null || Array.isArray(v))
    throw new ConvertError("BAD_FILE", `${path}: not a JSON object`);
  return v as Json;
}

/** A special token's text: a string, or an AddedToken object's content. */
export function tokenText(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  const c = (v as { content?: unknown } | null)?.content;
  return typeof c === "string" ? c : undefined;
}

interface Piece {
  SpecialToken?: { id?: unknown };
  Sequence?: { id?: unknown };
}
const specialId = (p: Piece | undefined) =>
  typeof p?.SpecialToken?.id === "string" ? p.SpecialToken.id : undefined;
const sequenceId = (p: Piece | undefined) =>
  typeof p?.Sequence?.id === "string" ? p.Sequence.id : undefined;

/**
 * Whether the pair template puts a separator of its own between the two sequences besides the
 * one ending the first ("A [SEP] [SEP] B"), as gguf-py reads TemplateProcessing; undefined when
 * the template says nothing about it.
 */
function pairAddsSep(
  p: { single?: Piece[]; pair?: Piece[] },
  sep?: string,
  eos?: string,
): boolean | undefined {
  const single = Array.isArray(p.single) ? p.single : [];
  const pair = Array.isArray(p.pair) ? p.pair : [];
  const first = single.length > 1 ? specialId(single[0]) : undefined;
  const last = single.length > 1 ? specialId(single.at(-1)) : undefined;
  if (pair.length === 0) return undefined;
  const start = first && specialId(pair[0]) === first ? 1 : 0;
  const stop = last && specialId(pair.at(-1)) === last ? pair.length - 1 : pair.length;
  const inner = pair.slice(start, stop);
  if (inner.length === 0 || sequenceId(inner[0]) !== "A" || sequenceId(inner.at(-1)) !== "B")
    return undefined;
  const middle = inner.slice(1, -1);
  if (middle.length === 0) return undefined;
  const isSep = (t: string | undefined) => t !== undefined && (t === sep || t === eos);
  let add = isSep(specialId(middle[0])) && !last;
  if (middle.length === 2 && isSep(specialId(middle[1]))) add = true;
  return add;
}

/**
 * The special tokens of a BERT-family checkpoint: readSpecialTokens, then add_sep_token from the
 * pair template and RobertaProcessing's cls/sep where tokenizer_config.json names none.
 */
export function bertSpecialTokens(o: {
  tj: Json | undefined;
  tc: Json | undefined;
  config: Json;
  nVocab: number;
}): SpecialTokens {
  const s = readSpecialTokens(o);
  const pp = o.tj?.post_processor as { processors?: unknown[] } | null | undefined;
  const procs = (pp ? (pp.processors ?? [pp]) : []) as {
    type?: string;
    cls?: unknown[];
    sep?: unknown[];
    single?: Piece[];
    pair?: Piece[];
  }[];
  // As gguf-py: the separator tokenizer_config.json names, and its EOS (which defaults to the SEP).
  const tcSep = tokenText(o.tc?.sep_token);
  const tcEos = tokenText(o.tc?.eos_token) ?? tcSep;
  for (const p of procs) {
    if (p.type === "RobertaProcessing" && o.tc) {
      const cls = tokenText(o.tc.cls_token) ?? (typeof p.cls?.[0] === "string" ? p.cls[0] : undefined);
      const sep = tokenText(o.tc.sep_token) ?? (typeof p.sep?.[0] === "string" ? p.sep[0] : undefined);
      if (cls !== undefined) s.setIfAbsent("cls", addedTokenId(o.tj, cls));
      if (sep !== undefined) s.setIfAbsent("sep", addedTokenId(o.tj, sep));
    } else if (p.type === "TemplateProcessing" && typeof o.tc?.add_sep_token !== "boolean") {
      const add = pairAddsSep(p, tcSep, tcEos);
      if (add !== undefined) s.add.set("sep", add);
    }
  }
  return s;
}

/** `tokenizer.ggml.normalizer.lowercase` / `.strip_accents` from tokenizer.json's normalizer. */
export function normalizerKeys(tj: Json | undefined): GgufKV[] {
  let lowercase: boolean | undefined;
  let stripAccents: boolean | undefined;
  const visit = (n: Json | null | undefined) => {
    if (!n) return;
    if (n.type === "Lowercase") lowercase = true;
    else if (n.type === "StripAccents") stripAccents = true;
    else if (n.type === "BertNormalizer") {
      if (typeof n.lowercase === "boolean") lowercase = n.lowercase;
      if (typeof n.strip_accents === "boolean") stripAccents = n.strip_accents;
    } else if (n.type === "Sequence" && Array.isArray(n.normalizers))
      for (const m of n.normalizers) visit(m as Json);
  };
  visit(tj?.normalizer as Json | null | undefined);
  const kv: GgufKV[] = [];
  if (lowercase !== undefined) kv.push(bool("tokenizer.ggml.normalizer.lowercase", lowercase));
  if (stripAccents !== undefined) kv.push(bool("tokenizer.ggml.normalizer.strip_accents", stripAccents));
  return kv;
}
