// Olmo2ForCausalLM (OLMo 2) → "olmo2": no pre-norms; Q/K RMSNorm over the whole projection
// (attn_q_norm [heads × head_dim], attn_k_norm [kv heads × head_dim]), post-attention and
// post-feed-forward norms, NeoX RoPE (no permutation), an untied output.
import { readRope } from "../rope.js";
import { baseKeys, readDims, requireDerivedHeadDim, Slots } from "./common.js";
import type { ArchSpec } from "./types.js";

export const olmo2: ArchSpec = {
  arch: "olmo2",
  classes: ["Olmo2ForCausalLM"],
  modelTypes: ["olmo2"],
  defaults: {
    vocab_size: 50304,
    max_position_embeddings: 2048,
    rms_norm_eps: 1e-5,
    rope_theta: 10000,
    tie_word_embeddings: false,
  },
  plan(r) {
    const d = readDims(r);
    requireDerivedHeadDim(r, d, "olmo2");
    if (d.tied)
      throw r.unsupported("tie_word_embeddings true: llama.cpp's olmo2 needs its own output.weight");
    if (r.bool("attention_bias", false))
      throw r.unsupported("attention_bias true: llama.cpp's olmo2 has no attention biases");
    if (r.has("sliding_window") || r.has("layer_types"))
      throw r.unsupported(
        "sliding_window / layer_types (OLMo 3's sliding-window attention) on Olmo2ForCausalLM, which has none",
      );
    const rope = readRope(r);
    return {
      tied: false,
      vocabSize: d.vocabSize,
      notes: [],
      tokenizer: { mode: "bpe", prePrefer: ["dbrx"] },
      metadata: () => baseKeys("olmo2", r, d, rope, ["linear", "yarn"]),
      tensors: (nVocab) => {
        const s = new Slots().outer(nVocab, d.nEmbd);
        for (let i = 0; i < d.nLayer; i++) {
          s.attention(i, d);
          s.layer(i, "self_attn.q_norm.weight", "attn_q_norm.weight", [d.nHead * d.headDim]);
          s.layer(i, "self_attn.k_norm.weight", "attn_k_norm.weight", [d.nHeadKv * d.headDim]);
          s.layer(i, "post_attention_layernorm.weight", "post_attention_norm.weight", [d.nEmbd]);
          s.mlp(i, d);
          s.layer(i, "post_feedforward_layernorm.weight", "post_ffw_norm.weight", [d.nEmbd]);
        }
        return s.map;
      },
    };
  },
};
