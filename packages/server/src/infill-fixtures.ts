import { join } from "node:path";
import {
  type GgufArray,
  type GgufKV,
  GgufValueType,
  readGguf,
  readTensorData,
  writeGguf,
} from "@minfer/gguf";
import { TokenType } from "@minfer/tokenizer";
import { STORIES } from "./test-helpers.js";

// Test models for /infill: stories260K with fill-in-the-middle tokens. Its vocabulary has none, so
// byte tokens no text ever uses (<0x00>, <0x01>, … at ids 3, 4, …) are renamed to FIM token texts
// and made control tokens; the weights are the same.

/** The first renamed token's id (stories260K's `<0x00>`). */
export const FIRST_RENAMED = 3;

/** Qwen2.5-Coder's FIM texts, in the order they get ids 3 to 8. */
export const QWEN_FIM = [
  "<|fim_prefix|>",
  "<|fim_suffix|>",
  "<|fim_middle|>",
  "<|fim_pad|>",
  "<|repo_name|>",
  "<|file_sep|>",
] as const;

export interface FimModel {
  /** Texts given to ids 3, 4, … (as control tokens). */
  readonly rename?: readonly string[];
  /** Metadata keys added (u32 token ids), e.g. `tokenizer.ggml.fim_pre_token_id`. */
  readonly keys?: Readonly<Record<string, number>>;
}

/** Writes stories260K with `o`'s renamed tokens and keys to `dir/name.gguf`; returns its path. */
export async function writeFimModel(dir: string, name: string, o: FimModel): Promise<string> {
  const file = await readGguf(STORIES);
  const rename = o.rename ?? [];
  const metadata: GgufKV[] = [];
  for (const kv of file.metadata.entries()) {
    if (kv.key === "tokenizer.ggml.tokens") {
      const items = [...((kv.value as GgufArray).items as string[])];
      rename.forEach((t, i) => {
        items[FIRST_RENAMED + i] = t;
      });
      metadata.push({ ...kv, value: { itemType: GgufValueType.STRING, items } });
    } else if (kv.key === "tokenizer.ggml.token_type") {
      const a = kv.value as GgufArray;
      const items = Int32Array.from(a.items as Int32Array);
      rename.forEach((_, i) => {
        items[FIRST_RENAMED + i] = TokenType.CONTROL;
      });
      metadata.push({ ...kv, value: { itemType: a.itemType, items } });
    } else metadata.push(kv);
  }
  for (const [key, value] of Object.entries(o.keys ?? {}))
    metadata.push({ key, type: GgufValueType.UINT32, value });
  const tensors = [];
  for (const t of file.tensors)
    tensors.push({ name: t.name, type: t.type, dims: t.dims, data: await readTensorData(file, t) });
  const path = join(dir, `${name}.gguf`);
  await writeGguf(path, metadata, tensors);
  return path;
}

/** The keys naming ids 3 to 8 as Qwen's FIM roles (pre, suf, mid, pad, rep, sep). */
export const QWEN_FIM_KEYS: Readonly<Record<string, number>> = {
  "tokenizer.ggml.fim_pre_token_id": 3,
  "tokenizer.ggml.fim_suf_token_id": 4,
  "tokenizer.ggml.fim_mid_token_id": 5,
  "tokenizer.ggml.fim_pad_token_id": 6,
  "tokenizer.ggml.fim_rep_token_id": 7,
  "tokenizer.ggml.fim_sep_token_id": 8,
};
