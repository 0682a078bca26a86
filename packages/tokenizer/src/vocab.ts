import { type GgufArray, GgufError, type GgufMetadata, GgufValueType } from "@minfer/gguf";
import { TokenizerError } from "./errors.js";
import { fimTokens } from "./fim.js";

/** Token types of `tokenizer.ggml.token_type` (llama.cpp `llama_token_type`). */
export const TokenType = {
  UNDEFINED: 0,
  NORMAL: 1,
  UNKNOWN: 2,
  CONTROL: 3,
  USER_DEFINED: 4,
  UNUSED: 5,
  BYTE: 6,
} as const;

/** Tokenizer models this package implements, by their `tokenizer.ggml.model` name. */
export const TOKENIZER_MODELS = ["gpt2", "llama", "bert", "t5"] as const;
export type TokenizerModel = (typeof TOKENIZER_MODELS)[number];

/** Special token ids; `undefined` when the vocabulary has none. */
export interface SpecialIds {
  bos: number | undefined;
  eos: number | undefined;
  eot: number | undefined;
  eom: number | undefined;
  unk: number | undefined;
  sep: number | undefined;
  pad: number | undefined;
  cls: number | undefined;
  mask: number | undefined;
}

/** Everything a tokenizer needs from `tokenizer.ggml.*`, checked. */
export interface Vocab {
  readonly model: TokenizerModel;
  /** `tokenizer.ggml.pre`, when present. */
  readonly pre: string | undefined;
  /** `general.name`, lowercased ("" when absent): llama.cpp keys a few token attributes on it. */
  readonly modelName: string;
  readonly tokens: readonly string[];
  /** Token text → id (the first id when a text repeats). */
  readonly ids: ReadonlyMap<string, number>;
  /** SentencePiece scores (absent for most BPE vocabularies). */
  readonly scores: Float32Array | undefined;
  /** Token types; NORMAL where the file has none. */
  readonly types: Int32Array;
  /** BPE merges as "left right" strings, in rank order (gpt2 model only). */
  readonly merges: readonly string[] | undefined;
  readonly special: SpecialIds;
  readonly addBos: boolean;
  readonly addEos: boolean;
  readonly addSep: boolean;
  /** SentencePiece: put a space before the text (`tokenizer.ggml.add_space_prefix`). */
  readonly addSpacePrefix: boolean;
  /** Unigram: a space before every word, runs of spaces dropped (`tokenizer.ggml.remove_extra_whitespaces`). */
  readonly removeExtraWhitespaces: boolean;
  /** Unigram: the normalization rules (`tokenizer.ggml.precompiled_charsmap`), when the file has them. */
  readonly precompiledCharsmap: Uint8Array | undefined;
  /** Tokens that end a generation: EOS, EOT, EOM, FIM padding / repository / file separator, and the known end-of-turn texts. */
  readonly eog: ReadonlySet<number>;
}

/**
 * Texts of end-of-turn tokens that chat models emit instead of, or besides, EOS: the list of
 * llama.cpp's llama-vocab.cpp at the commit node-llama-cpp 3.21.1 bundles, which ends generation on
 * a token with one of these texts whatever its type.
 */
const EOG_TEXTS = new Set([
  "<|eot_id|>",
  "<|im_end|>",
  "<|end|>",
  "<|return|>",
  "<|call|>",
  "<|flush|>",
  "<|calls|>",
  "<end_of_turn>",
  "<|endoftext|>",
  "</s>",
  "<|eom_id|>",
  "<EOT>",
  "_<EOT>",
  "[EOT]",
  "[EOS]",
  "<|end_of_text|>",
  "<end_of_utterance>",
  "<eos>",
  "<turn|>",
  "<|tool_response>",
  "<｜end▁of▁sentence｜>",
  "[e~[",
]);

/** Defaults by model where the file says nothing (as llama.cpp applies them). */
const DEFAULTS: Record<
  TokenizerModel,
  Partial<SpecialIds> & { addBos: boolean; addEos: boolean; addSpacePrefix: boolean }
> = {
  llama: { bos: 1, eos: 2, unk: 0, addBos: true, addEos: false, addSpacePrefix: true },
  gpt2: { bos: 11, eos: 11, addBos: false, addEos: false, addSpacePrefix: false },
  bert: {
    bos: 101,
    eos: undefined, // (llama.cpp's WordPiece has no EOS unless the file names one; [SEP] is sep)
    unk: 100,
    sep: 102,
    pad: 0,
    mask: 103,
    addBos: true,
    addEos: false,
    addSpacePrefix: false,
  },
  t5: { eos: 1, unk: 2, pad: 0, addBos: false, addEos: true, addSpacePrefix: false },
};

function wrap<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof GgufError && (e.code === "MISSING_KEY" || e.code === "WRONG_KEY_TYPE")) {
      throw new TokenizerError(e.code === "MISSING_KEY" ? "MISSING_KEY" : "BAD_VOCAB", e.message, {
        detail: e.key,
        cause: e,
      });
    }
    throw e;
  }
}

/** Reads and checks the vocabulary of a GGUF; every problem is a {@link TokenizerError} naming the key. */
export function loadVocab(md: GgufMetadata): Vocab {
  return wrap(() => {
    const modelName = md.string("tokenizer.ggml.model");
    if (!TOKENIZER_MODELS.includes(modelName as TokenizerModel)) {
      throw new TokenizerError(
        "UNKNOWN_MODEL",
        `tokenizer.ggml.model "${modelName}" is not supported; supported: ${TOKENIZER_MODELS.join(", ")}`,
        { detail: "tokenizer.ggml.model" },
      );
    }
    const model = modelName as TokenizerModel;
    const tokens = md.stringArray("tokenizer.ggml.tokens");
    const n = tokens.length;
    if (n === 0)
      throw new TokenizerError("BAD_VOCAB", "tokenizer.ggml.tokens is empty", {
        detail: "tokenizer.ggml.tokens",
      });
    const scoresRaw = md.optNumberArray("tokenizer.ggml.scores");
    if (scoresRaw && scoresRaw.length !== n) {
      throw new TokenizerError(
        "BAD_VOCAB",
        `tokenizer.ggml.scores has ${scoresRaw.length} entries for ${n} tokens`,
        {
          detail: "tokenizer.ggml.scores",
        },
      );
    }
    const typesRaw = md.optNumberArray("tokenizer.ggml.token_type");
    if (typesRaw && typesRaw.length !== n) {
      throw new TokenizerError(
        "BAD_VOCAB",
        `tokenizer.ggml.token_type has ${typesRaw.length} entries for ${n} tokens`,
        {
          detail: "tokenizer.ggml.token_type",
        },
      );
    }
    const types = typesRaw ? Int32Array.from(typesRaw) : new Int32Array(n).fill(TokenType.NORMAL);
    const merges = md.optStringArray("tokenizer.ggml.merges");
    if (model === "gpt2" && (!merges || merges.length === 0)) {
      throw new TokenizerError(
        "MISSING_MERGES",
        "a gpt2 (byte-level BPE) vocabulary needs tokenizer.ggml.merges, and it is missing or empty",
        {
          detail: "tokenizer.ggml.merges",
        },
      );
    }
    const ids = new Map<string, number>();
    for (let i = 0; i < n; i++) if (!ids.has(tokens[i]!)) ids.set(tokens[i]!, i);

    const d = DEFAULTS[model];
    const id = (key: string, fallback: number | undefined): number | undefined => {
      const full = `tokenizer.ggml.${key}`;
      const v = md.optInteger(full);
      if (v === undefined) return fallback !== undefined && fallback < n ? fallback : undefined;
      if (v === -1 || v === 0xffffffff) return undefined; // "none"
      if (v < 0 || v >= n) {
        throw new TokenizerError("BAD_SPECIAL_ID", `${full} is ${v}, outside the vocabulary of ${n} tokens`, {
          detail: full,
        });
      }
      return v;
    };
    const special: SpecialIds = {
      bos: id("bos_token_id", d.bos),
      eos: id("eos_token_id", d.eos),
      eot: id("eot_token_id", undefined),
      eom: id("eom_token_id", undefined),
      unk: id("unknown_token_id", d.unk),
      sep: id("seperator_token_id", d.sep),
      pad: id("padding_token_id", d.pad),
      cls: id("cls_token_id", undefined),
      mask: id("mask_token_id", d.mask),
    };
    const eog = new Set<number>();
    // (llama.cpp's set: the FIM padding, repository and file-separator tokens, eos / eot / eom, and
    // the control tokens with an end-of-turn text)
    const fim = fimTokens(md, tokens).ids;
    for (const v of [fim.pad, fim.rep, fim.sep, special.eos, special.eot, special.eom])
      if (v !== undefined) eog.add(v);
    for (let i = 0; i < n; i++) if (EOG_TEXTS.has(tokens[i]!)) eog.add(i);
    return {
      model,
      pre: md.optString("tokenizer.ggml.pre"),
      modelName: (md.optString("general.name") ?? "").toLowerCase(),
      tokens,
      ids,
      scores: scoresRaw ? Float32Array.from(scoresRaw) : undefined,
      types,
      merges,
      special,
      addBos: md.optBool("tokenizer.ggml.add_bos_token") ?? d.addBos,
      addEos: md.optBool("tokenizer.ggml.add_eos_token") ?? d.addEos,
      addSep: md.optBool("tokenizer.ggml.add_sep_token") ?? false,
      addSpacePrefix: md.optBool("tokenizer.ggml.add_space_prefix") ?? d.addSpacePrefix,
      removeExtraWhitespaces: md.optBool("tokenizer.ggml.remove_extra_whitespaces") ?? false,
      precompiledCharsmap: model === "t5" ? charsmapOf(md) : undefined,
      eog,
    };
  });
}

/** `tokenizer.ggml.precompiled_charsmap` as bytes (an array of uint8 or int8, as llama.cpp accepts). */
function charsmapOf(md: GgufMetadata): Uint8Array | undefined {
  const key = "tokenizer.ggml.precompiled_charsmap";
  const kv = md.get(key);
  if (kv === undefined) return undefined;
  const arr = kv.type === GgufValueType.ARRAY ? (kv.value as GgufArray) : undefined;
  if (!arr || (arr.itemType !== GgufValueType.UINT8 && arr.itemType !== GgufValueType.INT8)) {
    throw new TokenizerError(
      "BAD_VOCAB",
      `${key} must be an array of uint8 or int8 (the serialized charsmap)`,
      {
        detail: key,
      },
    );
  }
  const items = arr.items as Uint8Array | Int8Array;
  return new Uint8Array(items.buffer, items.byteOffset, items.byteLength);
}
