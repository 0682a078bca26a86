import type { GgufKV } from "../metadata.js";
import { GgufValueType } from "../value-types.js";

/** SentencePiece token types (llama.cpp `llama_token_type`). */
const NORMAL_UNKNOWN = 2;
const CONTROL = 3;
const BYTE = 6;

/**
 * The smallest complete vocabulary: a SentencePiece (`llama`) vocabulary of `<unk>`, `<s>`, `</s>`
 * and the 256 byte tokens `<0x00>`…`<0xFF>`, so every text encodes (one token per UTF-8 byte).
 * Used when no vocabulary GGUF is given.
 */
export function byteVocabulary(): GgufKV[] {
  const tokens = ["<unk>", "<s>", "</s>"];
  for (let b = 0; b < 256; b++) tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
  const types = new Int32Array(tokens.length).fill(BYTE);
  types[0] = NORMAL_UNKNOWN;
  types[1] = CONTROL;
  types[2] = CONTROL;
  const arr = (itemType: number, items: unknown) => ({ itemType, items }) as never;
  return [
    { key: "tokenizer.ggml.model", type: GgufValueType.STRING, value: "llama" },
    { key: "tokenizer.ggml.tokens", type: GgufValueType.ARRAY, value: arr(GgufValueType.STRING, tokens) },
    {
      key: "tokenizer.ggml.scores",
      type: GgufValueType.ARRAY,
      value: arr(GgufValueType.FLOAT32, new Float32Array(tokens.length)),
    },
    { key: "tokenizer.ggml.token_type", type: GgufValueType.ARRAY, value: arr(GgufValueType.INT32, types) },
    { key: "tokenizer.ggml.bos_token_id", type: GgufValueType.UINT32, value: 1 },
    { key: "tokenizer.ggml.eos_token_id", type: GgufValueType.UINT32, value: 2 },
    { key: "tokenizer.ggml.unknown_token_id", type: GgufValueType.UINT32, value: 0 },
    { key: "tokenizer.ggml.add_bos_token", type: GgufValueType.BOOL, value: true },
    { key: "tokenizer.ggml.add_eos_token", type: GgufValueType.BOOL, value: false },
  ];
}
