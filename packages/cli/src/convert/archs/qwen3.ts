// Qwen3ForCausalLM → "qwen3": per-head Q/K RMSNorm, NeoX RoPE (no permutation).
import { llama3RopeFactors, readRope } from "../rope.js";
import { baseKeys, readDims, Slots } from "./common.js";
import type { ArchSpec } from "./types.js";

export const qwen3: ArchSpec = {
  arch: "qwen3",
  classes: ["Qwen3ForCausalLM"],
  modelTypes: ["qwen3"],
  defaults: { rms_norm_eps: 1e-6, rope_theta: 10000, max_position_embeddings: 32768 },
  plan(r) {
    const d = readDims(r);
    const rope = readRope(r);
    return {
      tied: d.tied,
      vocabSize: d.vocabSize,
      notes: [],
      tokenizer: { mode: "bpe" },
      metadata: () => baseKeys("qwen3", r, d, rope, ["linear", "yarn", "llama3"]),
      tensors: (nVocab) => {
        const s = new Slots().outer(nVocab, d.nEmbd);
        for (let i = 0; i < d.nLayer; i++) {
          s.layer(i, "input_layernorm.weight", "attn_norm.weight", [d.nEmbd]);
          s.attention(i, d);
          s.layer(i, "self_attn.q_norm.weight", "attn_q_norm.weight", [d.headDim]);
          s.layer(i, "self_attn.k_norm.weight", "attn_k_norm.weight", [d.headDim]);
          s.layer(i, "post_attention_layernorm.weight", "ffn_norm.weight", [d.nEmbd]);
          s.mlp(i, d);
        }
        return s.map;
      },
      extraTensors: () =>
        rope.scaling?.type === "llama3"
          ? [{ name: "rope_freqs.weight", values: llama3RopeFactors(rope.scaling, rope.theta!, d.headDim) }]
          : [],
    };
  },
};
