// Hugging Face tensor names → GGUF's, with the shape each must have and the Q/K row permutation
// that Llama needs.
import { ConvertError } from "./errors.js";
import type { HfConfig } from "./hf-config.js";
import type { SafeTensor } from "./safetensors.js";

/** One GGUF tensor to write and where its values come from. */
export interface PlannedTensor {
  /** GGUF name. */
  readonly name: string;
  /** GGUF dims (innermost first): the safetensors shape reversed. */
  readonly dims: readonly number[];
  /** The checkpoint tensor (absent for values computed by the converter). */
  readonly src?: SafeTensor;
  /** Values computed by the converter (llama3 `rope_freqs.weight`). */
  readonly values?: Float32Array;
  /**
   * Llama Q/K: rows are permuted within each of `heads` heads of `headDim` rows (see
   * {@link permuteRows}).
   */
  readonly permute?: { heads: number; headDim: number };
}

/**
 * The row permutation Llama's Q and K weights get. Hugging Face's Llama applies RoPE to the two
 * halves of each head (dimension i is paired with i + d/2: NeoX style); GGUF's llama pairs
 * adjacent dimensions (2i, 2i + 1). So within each head of d rows, GGUF row 2i + j (j = 0, 1) is
 * Hugging Face row j·d/2 + i. `rows` holds whole heads (a multiple of `headDim` rows of `rowLen`).
 */
export function permuteRows(rows: Float32Array, rowLen: number, headDim: number): Float32Array {
  const out = new Float32Array(rows.length);
  const half = headDim / 2;
  const nRows = rows.length / rowLen;
  for (let h = 0; h < nRows; h += headDim) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const from = (h + j * half + i) * rowLen;
        out.set(rows.subarray(from, from + rowLen), (h + 2 * i + j) * rowLen);
      }
    }
  }
  return out;
}

interface Slot {
  gguf: string;
  shape: number[];
  permute?: { heads: number; headDim: number };
}

/** The tensors a checkpoint of this config has, by Hugging Face name. */
function expected(c: HfConfig, nVocab: number): Map<string, Slot> {
  const m = new Map<string, Slot>();
  const nQ = c.nHead * c.headDim;
  const nKv = c.nHeadKv * c.headDim;
  const llama = c.arch === "llama";
  m.set("model.embed_tokens.weight", { gguf: "token_embd.weight", shape: [nVocab, c.nEmbd] });
  m.set("model.norm.weight", { gguf: "output_norm.weight", shape: [c.nEmbd] });
  m.set("lm_head.weight", { gguf: "output.weight", shape: [nVocab, c.nEmbd] });
  for (let i = 0; i < c.nLayer; i++) {
    const hf = `model.layers.${i}.`;
    const g = `blk.${i}.`;
    const add = (name: string, gguf: string, shape: number[], permute?: Slot["permute"]) =>
      m.set(hf + name, { gguf: g + gguf, shape, ...(permute ? { permute } : {}) });
    add("input_layernorm.weight", "attn_norm.weight", [c.nEmbd]);
    add(
      "self_attn.q_proj.weight",
      "attn_q.weight",
      [nQ, c.nEmbd],
      llama ? { heads: c.nHead, headDim: c.headDim } : undefined,
    );
    add(
      "self_attn.k_proj.weight",
      "attn_k.weight",
      [nKv, c.nEmbd],
      llama ? { heads: c.nHeadKv, headDim: c.headDim } : undefined,
    );
    add("self_attn.v_proj.weight", "attn_v.weight", [nKv, c.nEmbd]);
    add("self_attn.o_proj.weight", "attn_output.weight", [c.nEmbd, nQ]);
    if (c.arch === "qwen2") {
      add("self_attn.q_proj.bias", "attn_q.bias", [nQ]);
      add("self_attn.k_proj.bias", "attn_k.bias", [nKv]);
      add("self_attn.v_proj.bias", "attn_v.bias", [nKv]);
    }
    if (c.arch === "qwen3") {
      add("self_attn.q_norm.weight", "attn_q_norm.weight", [c.headDim]);
      add("self_attn.k_norm.weight", "attn_k_norm.weight", [c.headDim]);
    }
    add("post_attention_layernorm.weight", "ffn_norm.weight", [c.nEmbd]);
    add("mlp.gate_proj.weight", "ffn_gate.weight", [c.nFf, c.nEmbd]);
    add("mlp.up_proj.weight", "ffn_up.weight", [c.nFf, c.nEmbd]);
    add("mlp.down_proj.weight", "ffn_down.weight", [c.nEmbd, c.nFf]);
  }
  return m;
}

/** Checkpoint tensors that carry nothing GGUF needs (recomputed RoPE tables). */
const IGNORED = /(^|\.)rotary_emb\.inv_freq$/;

/**
 * Maps every checkpoint tensor to its GGUF tensor, checking names and shapes. An unknown tensor,
 * a missing one or one of the wrong shape is refused by name. With tied embeddings (or no
 * lm_head.weight) there is no output.weight: the output projection reuses token_embd.weight.
 */
export function planTensors(c: HfConfig, nVocab: number, tensors: Map<string, SafeTensor>): PlannedTensor[] {
  const want = expected(c, nVocab);
  for (const name of tensors.keys()) {
    if (!want.has(name) && !IGNORED.test(name))
      throw new ConvertError(
        "UNKNOWN_TENSOR",
        `tensor "${name}" (in ${tensors.get(name)!.file}) is not one a ${c.source} checkpoint of this config has`,
      );
  }
  const plan: PlannedTensor[] = [];
  for (const [hf, slot] of want) {
    const src = tensors.get(hf);
    if (hf === "lm_head.weight" && (c.tied || !src)) continue;
    if (!src) throw new ConvertError("MISSING_TENSOR", `tensor "${hf}" is missing from the checkpoint`);
    if (src.shape.length !== slot.shape.length || src.shape.some((d, i) => d !== slot.shape[i]))
      throw new ConvertError(
        "BAD_SHAPE",
        `tensor "${hf}" (in ${src.file}) has shape [${src.shape.join(", ")}]; config.json implies [${slot.shape.join(", ")}]`,
      );
    plan.push({
      name: slot.gguf,
      dims: [...slot.shape].reverse(),
      src,
      ...(slot.permute ? { permute: slot.permute } : {}),
    });
  }
  return plan;
}
