// What Gemma, Gemma 2 and Gemma 3 share: RMSNorm weights stored as w + 1, the attention scale
// llama.cpp derives (it has no key for query_pre_attn_scalar), the sliding-window layer pattern,
// and the end-of-turn token of Gemma's converter.
import type { ConfigReader } from "../hf-config.js";
import type { TokenizerPolicy } from "../hf-tokenizer.js";
import type { Dims } from "./common.js";

/**
 * llama.cpp scales Gemma's queries by 1/√(hidden_size / num_attention_heads) for the 27B model
 * (recognised by its layer count, `bigLayers`) and by 1/√head_dim otherwise; Hugging Face by
 * 1/√query_pre_attn_scalar. A config where the two differ cannot be represented.
 */
export function checkQueryScale(r: ConfigReader, d: Dims, arch: string, bigLayers: number): void {
  const qpas = r.num("query_pre_attn_scalar");
  const big = d.nLayer === bigLayers;
  const llama = big ? Math.floor(d.nEmbd / d.nHead) : d.headDim;
  if (Math.abs(qpas - llama) > 1e-9 * llama)
    throw r.unsupported(
      `query_pre_attn_scalar ${qpas} differs from the ${big ? `hidden_size / num_attention_heads (${llama}) of a ${bigLayers}-layer` : `head_dim (${llama}) of a`} ${arch}, by which llama.cpp scales the queries (GGUF has no key for it)`,
    );
}

/**
 * Which layers use sliding-window attention in Hugging Face's model: `layer_types`, else every
 * layer but each `period`-th (Gemma 2: 2, Gemma 3: `sliding_window_pattern`).
 */
export function slidingLayers(r: ConfigReader, nLayer: number, period: number): boolean[] {
  const types = r.value("layer_types");
  if (types !== undefined && types !== null) {
    if (
      !Array.isArray(types) ||
      types.length !== nLayer ||
      !types.every((t) => t === "sliding_attention" || t === "full_attention")
    )
      throw r.bad("layer_types", `is not a list of ${nLayer} "sliding_attention" / "full_attention"`);
    return types.map((t) => t === "sliding_attention");
  }
  return Array.from({ length: nLayer }, (_, i) => (i + 1) % period !== 0);
}

/** Refuses a layer pattern other than llama.cpp's (every layer sliding but each `period`-th). */
export function requirePattern(r: ConfigReader, sliding: boolean[], period: number, arch: string): void {
  const want = sliding.map((_, i) => (i + 1) % period !== 0);
  if (sliding.some((s, i) => s !== want[i]))
    throw r.unsupported(
      `the sliding-window layers (${sliding.map((s) => (s ? "S" : "F")).join("")}) are not llama.cpp's ${arch} pattern (each ${period}th layer global: ${want.map((s) => (s ? "S" : "F")).join("")})`,
    );
}

/** Gemma's tokenizer: SentencePiece, no ▁ prefix (Gemma's converter writes add_space_prefix false). */
export const gemmaTokenizer = (mode: TokenizerPolicy["mode"]): TokenizerPolicy => ({
  mode,
  spmAddSpacePrefix: false,
});
