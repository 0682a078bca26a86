// An XLM-RoBERTa-style Unigram tokenizer.json → `tokenizer.ggml.model` "t5" (llama.cpp's UGM
// tokenizer), as llama.cpp's BertModel._xlmroberta_set_vocab writes it from tokenizer.json: the
// pieces with their scores, the unknown piece UNKNOWN, the special tokens CONTROL, other added
// tokens USER_DEFINED, padded to vocab_size with [PADn]; the Precompiled normalizer's charsmap
// (SentencePiece's NFKC table) as `tokenizer.ggml.precompiled_charsmap`.
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { ArchVocab } from "./archs/types.js";
import { bertSpecialTokens, normalizerKeys, readJsonObject, tokenText } from "./bert-special.js";
import { ConvertError } from "./errors.js";
import { bool, f32Array, i32Array, str, strArray, u8Array, u32 } from "./kv.js";
import { chatTemplateKeys } from "./special-vocab.js";
import { addedTokens, TokenType } from "./tokenizer-bpe.js";
import type { EncoderVocabOptions } from "./tokenizer-wpm.js";

type Json = Record<string, unknown>;

/** XLMRobertaTokenizerFast's special token texts, where tokenizer_config.json names none. */
const XLMR_DEFAULTS: Record<string, string> = {
  bos: "<s>",
  eos: "</s>",
  unk: "<unk>",
  sep: "</s>",
  pad: "<pad>",
  cls: "<s>",
  mask: "<mask>",
};

/**
 * The charsmap of the normalizer: a Precompiled step, alone or with the whitespace steps
 * transformers adds beside it (collapsing runs of spaces, stripping the right end); any other step
 * would change the text in a way llama.cpp's UGM tokenizer does not.
 */
function readCharsmap(path: string, n: Json | null | undefined): Uint8Array | undefined {
  const steps = !n
    ? []
    : n.type === "Sequence" && Array.isArray(n.normalizers)
      ? (n.normalizers as Json[])
      : [n];
  let charsmap: Uint8Array | undefined;
  for (const s of steps) {
    const pattern = s.pattern as { Regex?: unknown; String?: unknown } | undefined;
    if (s.type === "Precompiled") {
      if (typeof s.precompiled_charsmap !== "string")
        throw new ConvertError(
          "BAD_TOKENIZER",
          `${path}: the Precompiled normalizer has no precompiled_charsmap`,
        );
      charsmap = Uint8Array.from(Buffer.from(s.precompiled_charsmap, "base64"));
    } else if (
      s.type === "Replace" &&
      pattern?.Regex === " {2,}" &&
      (s.content === " " || s.content === "\u2581")
    ) {
      // SentencePiece's remove_extra_whitespaces, which llama.cpp takes from its own key.
    } else if (s.type === "Strip") {
      // Trailing spaces: llama.cpp's UGM normalization drops them when it merges spaces.
    } else
      throw new ConvertError(
        "UNSUPPORTED_TOKENIZER",
        `${path}: normalizer step ${JSON.stringify(s.type)} is not one llama.cpp's UGM tokenizer does; supported: Precompiled (with Replace " {2,}" and Strip)`,
      );
  }
  return charsmap;
}

/** Whether the Metaspace pre-tokenizer puts a ▁ before the text; other pre-tokenizers are refused. */
function metaspacePrefix(path: string, p: Json | null | undefined): boolean {
  const steps = !p
    ? []
    : p.type === "Sequence" && Array.isArray(p.pretokenizers)
      ? (p.pretokenizers as Json[])
      : [p];
  const meta = steps.find((s) => s.type === "Metaspace");
  const others = steps.filter((s) => s.type !== "Metaspace" && s.type !== "WhitespaceSplit");
  if (!meta || others.length > 0 || (meta.replacement ?? "\u2581") !== "\u2581")
    throw new ConvertError(
      "UNSUPPORTED_TOKENIZER",
      `${path}: pre_tokenizer ${JSON.stringify(p?.type ?? null)} is not a Metaspace(▁) pre-tokenizer, as llama.cpp's UGM tokenizer splits`,
    );
  const scheme = meta.prepend_scheme ?? (meta.add_prefix_space === false ? "never" : "always");
  return scheme !== "never";
}

/** The "t5" vocabulary of checkpoint `dir` from its Unigram tokenizer.json. */
export function readUnigramVocab(dir: string, o: EncoderVocabOptions): ArchVocab {
  const path = join(dir, "tokenizer.json");
  const tj = readJsonObject(path);
  if (!tj) {
    if (existsSync(join(dir, "sentencepiece.bpe.model")))
      throw new ConvertError(
        "UNSUPPORTED_TOKENIZER",
        `${dir} has sentencepiece.bpe.model but no tokenizer.json; minfer reads the Unigram vocabulary from tokenizer.json`,
      );
    throw new ConvertError("MISSING_FILE", `${dir} has no tokenizer.json`);
  }
  const tc = readJsonObject(join(dir, "tokenizer_config.json"));
  const model = (tj.model ?? {}) as Json;
  if (model.type !== "Unigram")
    throw new ConvertError(
      "UNSUPPORTED_TOKENIZER",
      `${path}: tokenizer model ${JSON.stringify(model.type ?? null)} is not Unigram, the vocabulary XLM-RoBERTa's converter reads`,
    );
  if (model.byte_fallback === true)
    throw new ConvertError(
      "UNSUPPORTED_TOKENIZER",
      `${path}: a Unigram model with byte_fallback; llama.cpp's UGM tokenizer has no byte fallback`,
    );
  const vocab = model.vocab;
  if (!Array.isArray(vocab))
    throw new ConvertError("BAD_TOKENIZER", `${path}: Unigram model.vocab is not a list`);
  const notes: string[] = [];
  const charsmap = readCharsmap(path, tj.normalizer as Json | null);
  if (!charsmap) notes.push(`${path} has no Precompiled normalizer: no tokenizer.ggml.precompiled_charsmap`);
  const prefixes = metaspacePrefix(path, tj.pre_tokenizer as Json | null);
  const addPrefix = typeof tc?.add_prefix_space === "boolean" ? tc.add_prefix_space : prefixes;
  // llama.cpp writes remove_extra_whitespaces from the tokenizer's clean_up_tokenization_spaces
  // (transformers' default: false).
  const removeSpaces = tc?.clean_up_tokenization_spaces === true;

  const added = addedTokens(path, tj);
  const addedById = new Map(added.map((a) => [a.id, a.content]));
  const specialTexts = new Set<string>();
  for (const [type, fallback] of Object.entries(XLMR_DEFAULTS)) {
    specialTexts.add(tokenText(tc?.[`${type}_token`]) ?? fallback);
  }
  for (const t of (Array.isArray(tc?.additional_special_tokens)
    ? tc.additional_special_tokens
    : []) as unknown[]) {
    const text = tokenText(t);
    if (text !== undefined) specialTexts.add(text);
  }
  const unkText = tokenText(tc?.unk_token);
  const unkId =
    added.find((a) => a.content === unkText)?.id ?? (typeof model.unk_id === "number" ? model.unk_id : 3);

  const n = Math.max(o.vocabSize ?? 0, vocab.length);
  const tokens = Array.from({ length: n }, (_, i) => `[PAD${i}]`);
  const scores = new Float32Array(n).fill(-10000);
  const types = new Int32Array(n).fill(TokenType.UNUSED);
  vocab.forEach((e: unknown, i) => {
    if (!Array.isArray(e) || typeof e[0] !== "string" || typeof e[1] !== "number")
      throw new ConvertError("BAD_TOKENIZER", `${path}: Unigram vocab entry ${i} is not [piece, score]`);
    // transformers' id → token: an added token's text where one has the id.
    const text = addedById.get(i) ?? e[0];
    tokens[i] = text;
    scores[i] = e[1];
    types[i] =
      i === unkId
        ? TokenType.UNKNOWN
        : specialTexts.has(text)
          ? TokenType.CONTROL
          : addedById.has(i)
            ? TokenType.USER_DEFINED
            : TokenType.NORMAL;
  });
  const past = added.filter((a) => a.id >= vocab.length);
  if (past.length)
    notes.push(
      `added tokens past the Unigram vocabulary (${past.map((a) => JSON.stringify(a.content)).join(", ")}) are left as [PADn], as llama.cpp's converter leaves them`,
    );

  const special = bertSpecialTokens({ tj, tc, config: o.config, nVocab: n });
  const metadata = [
    str("tokenizer.ggml.model", "t5"),
    str("tokenizer.ggml.pre", "default"),
    strArray("tokenizer.ggml.tokens", tokens),
    f32Array("tokenizer.ggml.scores", scores),
    i32Array("tokenizer.ggml.token_type", types),
    bool("tokenizer.ggml.add_space_prefix", addPrefix),
    u32("tokenizer.ggml.token_type_count", o.typeVocabSize),
    bool("tokenizer.ggml.remove_extra_whitespaces", removeSpaces),
    ...(charsmap && charsmap.length > 0 ? [u8Array("tokenizer.ggml.precompiled_charsmap", charsmap)] : []),
    ...special.metadata(n),
    ...chatTemplateKeys(dir, tc),
    ...normalizerKeys(tj),
  ];
  notes.push(...special.notes);
  return { metadata, nVocab: n, pre: "default", notes };
}
