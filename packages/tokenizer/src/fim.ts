import type { GgufMetadata } from "@minfer/gguf";

// A model's fill-in-the-middle (FIM) tokens — prefix, suffix, middle, padding, repository name, file
// separator — from its metadata keys, else by their texts, as llama.cpp's llama-vocab.cpp finds them
// (converters did not always write the keys). The vocabulary's end-of-generation set includes the
// padding, repository and file-separator tokens, as llama.cpp's does; infill builds its prompt with
// the others (@minfer/server).

/** The FIM roles: prefix, suffix, middle, padding, repository name, file separator. */
export const FIM_ROLES = ["pre", "suf", "mid", "pad", "rep", "sep"] as const;
export type FimRole = (typeof FIM_ROLES)[number];

/** A model's FIM token ids by role; `undefined` where it has none. */
export type FimTokens = Readonly<Record<FimRole, number | undefined>>;

/**
 * The metadata keys of each role, read in this order: a later key that holds a valid id replaces an
 * earlier one (llama.cpp reads the deprecated prefix/suffix/middle keys after the fim_* ones).
 */
const FIM_KEYS: Record<FimRole, readonly string[]> = {
  pre: ["tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id"],
  suf: ["tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id"],
  mid: ["tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id"],
  pad: ["tokenizer.ggml.fim_pad_token_id"],
  rep: ["tokenizer.ggml.fim_rep_token_id"],
  sep: ["tokenizer.ggml.fim_sep_token_id"],
};

/**
 * Token texts that stand for a role when the metadata names no id for it (llama.cpp's
 * llama-vocab.cpp detects FIM tokens by these texts, as converters did not always write the keys).
 */
export const FIM_TEXTS: Readonly<Record<FimRole, readonly string[]>> = {
  pre: [
    "<|fim_prefix|>",
    "<fim-prefix>",
    "<fim_prefix>",
    "<｜fim▁begin｜>",
    "<PRE>",
    "▁<PRE>",
    "<|code_prefix|>",
    "<|prefix|>",
  ],
  suf: [
    "<|fim_suffix|>",
    "<fim-suffix>",
    "<fim_suffix>",
    "<｜fim▁hole｜>",
    "<SUF>",
    "▁<SUF>",
    "<|code_suffix|>",
    "<|suffix|>",
  ],
  mid: [
    "<|fim_middle|>",
    "<fim-middle>",
    "<fim_middle>",
    "<｜fim▁end｜>",
    "<MID>",
    "▁<MID>",
    "<|code_middle|>",
    "<|middle|>",
  ],
  pad: ["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"],
  rep: ["<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"],
  sep: ["<|file_sep|>"],
};

/** What {@link fimTokens} found, and why a key it read was not taken (for the error a client gets). */
export interface FimLookup {
  readonly ids: FimTokens;
  /** Keys present but unusable (a wrong type, an id outside the vocabulary). */
  readonly notes: readonly string[];
}

/**
 * The FIM tokens of a model: each role's id from its metadata keys, else the token whose text is
 * one of the role's {@link FIM_TEXTS}. A key that cannot be used (wrong type, id outside the
 * vocabulary) counts as absent, as llama.cpp falls back past an out-of-range id; it is noted. Where
 * several tokens carry a role's texts, the lowest id is taken (llama.cpp's pick among them follows
 * a hash map's order and is not defined).
 */
export function fimTokens(md: GgufMetadata, tokens: readonly string[]): FimLookup {
  const notes: string[] = [];
  const ids = {} as Record<FimRole, number | undefined>;
  for (const role of FIM_ROLES) {
    let id: number | undefined;
    for (const key of FIM_KEYS[role]) {
      const v = keyId(md, key, tokens.length, notes);
      if (v !== undefined) id = v;
    }
    if (id === undefined) {
      const texts = FIM_TEXTS[role];
      const at = tokens.findIndex((t) => texts.includes(t));
      if (at >= 0) id = at;
    }
    ids[role] = id;
  }
  return { ids, notes };
}

/** A token id from metadata `key`; undefined when absent, "none" (-1, 2^32 - 1) or unusable (noted). */
function keyId(md: GgufMetadata, key: string, nVocab: number, notes: string[]): number | undefined {
  let v: number | undefined;
  try {
    v = md.optInteger(key);
  } catch (e) {
    // (a mistyped key: llama.cpp refuses the model; here only infill is refused, saying why)
    notes.push((e as Error).message);
    return undefined;
  }
  if (v === undefined) return undefined;
  if (v === -1 || v === 0xffffffff) return undefined;
  if (v < 0 || v >= nVocab) {
    notes.push(`${key} is ${v}, outside the vocabulary of ${nVocab} tokens`);
    return undefined;
  }
  return v;
}
