// Glm4ForCausalLM (GLM-4-0414) → "glm4": Q/K/V biases, post-attention and post-MLP norms, the
// fused gate_up_proj kept as ffn_up, RoPE on the first partial_rotary_factor of each head in
// GPT-J (interleaved) order, which is already GGUF's (no permutation).
import { u32 } from "../kv.js";
import { readRope } from "../rope.js";
import { baseKeys, readDims, requireDerivedHeadDim, Slots } from "./common.js";
import type { ArchSpec } from "./types.js";

export const glm4: ArchSpec = {
  arch: "glm4",
  classes: ["Glm4ForCausalLM"],
  modelTypes: ["glm4"],
  defaults: {
    vocab_size: 151552,
    num_key_value_heads: 2,
    head_dim: 128,
    max_position_embeddings: 131072,
    rms_norm_eps: 1.5625e-7,
    rope_theta: 10000,
    partial_rotary_factor: 0.5,
    attention_bias: true,
    tie_word_embeddings: false,
  },
  plan(r) {
    const d = readDims(r);
    requireDerivedHeadDim(r, d, "glm4");
    const rope = readRope(r);
    const params = r.value("rope_parameters") ?? r.value("rope_scaling");
    if (params && typeof params === "object" && "mrope_section" in params)
      throw r.unsupported("rope mrope_section (GLM-4V's multimodal RoPE) is not supported");
    const ropeDims = Math.floor(d.headDim * (rope.partialRotaryFactor ?? 0.5));
    const bias = r.bool("attention_bias", true);
    return {
      tied: d.tied,
      vocabSize: d.vocabSize,
      notes: [],
      tokenizer: {
        mode: "bpe",
        prePrefer: ["glm4"],
        // Glm4Model.set_vocab: <|endoftext|> as EOS, UNK and BOS, <|user|> as EOT.
        specials: (s, find) => {
          s.setIfAbsent("eos", find("<|endoftext|>"));
          s.setIfAbsent("eot", find("<|user|>"));
          s.setIfAbsent("unk", find("<|endoftext|>"));
          s.setIfAbsent("bos", find("<|endoftext|>"));
        },
      },
      metadata: () => [
        ...baseKeys("glm4", r, d, rope, ["linear", "yarn"]),
        u32("glm4.rope.dimension_count", ropeDims),
      ],
      tensors: (nVocab) => {
        const s = new Slots().outer(nVocab, d.nEmbd);
        for (let i = 0; i < d.nLayer; i++) {
          s.layer(i, "input_layernorm.weight", "attn_norm.weight", [d.nEmbd]);
          s.attention(i, d, { bias });
          s.layer(i, "post_self_attn_layernorm.weight", "post_attention_norm.weight", [d.nEmbd]);
          s.layer(i, "post_attention_layernorm.weight", "ffn_norm.weight", [d.nEmbd]);
          s.layer(i, "mlp.gate_up_proj.weight", "ffn_up.weight", [2 * d.nFf, d.nEmbd]);
          s.layer(i, "mlp.down_proj.weight", "ffn_down.weight", [d.nEmbd, d.nFf]);
          s.layer(i, "post_mlp_layernorm.weight", "post_ffw_norm.weight", [d.nEmbd]);
        }
        return s.map;
      },
    };
  },
};
