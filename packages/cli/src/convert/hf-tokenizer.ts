// The tokenizer files of a checkpoint → `tokenizer.ggml.*` keys and the chat template(s), choosing
// between a byte-level BPE ("gpt2") and a SentencePiece ("llama") vocabulary as llama.cpp's
// converter does for the architecture (`TokenizerPolicy`).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { GgufKV } from "@minfer/gguf";
import { ConvertError } from "./errors.js";
import { bool, f32Array, i32Array, str, strArray } from "./kv.js";
import { chatTemplateKeys, readSpecialTokens, type SpecialTokens } from "./special-vocab.js";
import { readBpeVocab } from "./tokenizer-bpe.js";
import { type AddedTokenRule, isSpmJson, readSpmVocab } from "./tokenizer-spm.js";

export interface HfTokenizer {
  metadata: GgufKV[];
  nVocab: number;
  /** `tokenizer.ggml.model`. */
  model: "gpt2" | "llama";
  /** `tokenizer.ggml.pre`. */
  pre: string;
  /** What the conversion left out or chose, for the summary. */
  notes: string[];
}

/** How an architecture's tokenizer is converted (what llama.cpp's `set_vocab` of its class does). */
export interface TokenizerPolicy {
  /**
   * "bpe": byte-level BPE tokenizer.json only. "spm": SentencePiece only (tokenizer.model, else a
   * SentencePiece-style tokenizer.json). "auto": SentencePiece when there is a tokenizer.model or a
   * SentencePiece-style tokenizer.json, else byte-level BPE. "phi3": byte-level BPE when
   * tokenizer_config.json names GPT2Tokenizer, else SentencePiece with Phi-3's added-token rule.
   */
  mode: "bpe" | "spm" | "auto" | "phi3";
  /** Names preferred among a pre-tokenizer rule's (`glm4`, `dbrx`, `refact`, …). */
  prePrefer?: readonly string[];
  /** A SentencePiece vocabulary's `add_space_prefix`, fixed by the architecture (Gemma: false). */
  spmAddSpacePrefix?: boolean;
  /** Llama's converter writes tokenizer_config.json's `add_prefix_space` as add_space_prefix. */
  addPrefixFromConfig?: boolean;
  /** Special tokens the architecture's converter sets itself (never overriding found ones). */
  specials?: (
    s: SpecialTokens,
    find: (text: string) => number | undefined,
    tokens: readonly string[],
  ) => void;
  /** add_bos_token false for this vocab_size (Granite's small models: 49152). */
  noBosForVocabSize?: number;
}

function readJson(path: string): Record<string, unknown> {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  } catch (e) {
    throw new ConvertError("BAD_FILE", `${path}: not valid JSON (${(e as Error).message})`);
  }
}

/**
 * Reads the tokenizer of checkpoint `dir`. `config` is config.json as read (its `*_token_id`),
 * `vocabSize` the architecture's vocabulary size (config.json's or its class default).
 */
export function readHfTokenizer(
  dir: string,
  config: Record<string, unknown>,
  vocabSize: number | undefined,
  policy: TokenizerPolicy,
): HfTokenizer {
  const jsonPath = join(dir, "tokenizer.json");
  const cfgPath = join(dir, "tokenizer_config.json");
  const tj = existsSync(jsonPath) ? readJson(jsonPath) : undefined;
  const tc = existsSync(cfgPath) ? readJson(cfgPath) : undefined;
  const hasModel = existsSync(join(dir, "tokenizer.model"));
  let spm: AddedTokenRule | undefined;
  if (policy.mode === "spm") spm = "default";
  else if (policy.mode === "auto") spm = hasModel || (tj && isSpmJson(tj)) ? "default" : undefined;
  else if (policy.mode === "phi3") spm = tc?.tokenizer_class === "GPT2Tokenizer" ? undefined : "phi3";
  if (spm && !hasModel && !tj)
    throw new ConvertError("MISSING_FILE", `${dir} has neither tokenizer.model nor tokenizer.json`);
  if (!spm && !tj) throw new ConvertError("MISSING_FILE", `${dir} has no tokenizer.json`);

  const kv: GgufKV[] = [];
  const notes: string[] = [];
  if (policy.addPrefixFromConfig && typeof tc?.add_prefix_space === "boolean")
    kv.push(bool("tokenizer.ggml.add_space_prefix", tc.add_prefix_space));
  let nVocab: number;
  let tokens: string[];
  let pre: string;
  if (spm) {
    const v = readSpmVocab(dir, vocabSize, spm, tj, tc);
    notes.push(...v.notes);
    ({ tokens } = v);
    nVocab = tokens.length;
    pre = "default";
    kv.push(
      str("tokenizer.ggml.model", "llama"),
      str("tokenizer.ggml.pre", pre),
      strArray("tokenizer.ggml.tokens", tokens),
      f32Array("tokenizer.ggml.scores", v.scores),
      i32Array("tokenizer.ggml.token_type", v.types),
    );
    const fixed = kv.some((e) => e.key === "tokenizer.ggml.add_space_prefix");
    if (policy.spmAddSpacePrefix !== undefined && !fixed)
      kv.push(bool("tokenizer.ggml.add_space_prefix", policy.spmAddSpacePrefix));
    else if (!fixed && !v.addsPrefix) {
      // llama.cpp's "llama" default is to add the ▁; this tokenizer does not.
      kv.push(bool("tokenizer.ggml.add_space_prefix", false));
      notes.push(`${v.source} adds no ▁ prefix: tokenizer.ggml.add_space_prefix = false`);
    }
  } else {
    const v = readBpeVocab(jsonPath, tj!, vocabSize, policy.prePrefer ?? []);
    ({ tokens, pre } = v);
    nVocab = tokens.length;
    kv.push(
      str("tokenizer.ggml.model", "gpt2"),
      str("tokenizer.ggml.pre", pre),
      strArray("tokenizer.ggml.tokens", tokens),
      i32Array("tokenizer.ggml.token_type", v.types),
      strArray("tokenizer.ggml.merges", v.merges),
    );
  }
  const special = readSpecialTokens({ tj, tc, config, nVocab });
  if (policy.specials) {
    const added = new Map<string, number>();
    for (const a of (Array.isArray(tj?.added_tokens) ? tj.added_tokens : []) as {
      id: number;
      content: string;
    }[])
      if (!added.has(a.content)) added.set(a.content, a.id);
    policy.specials(special, (t) => added.get(t), tokens);
  }
  if (policy.noBosForVocabSize !== undefined && vocabSize === policy.noBosForVocabSize)
    special.add.set("bos", false);
  kv.push(...special.metadata(nVocab), ...chatTemplateKeys(dir, tc));
  notes.push(...special.notes);
  return { metadata: kv, nVocab, model: spm ? "llama" : "gpt2", pre, notes };
}
