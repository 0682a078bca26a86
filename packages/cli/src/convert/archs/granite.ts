// GraniteForCausalLM (Granite 3.x) → "granite": Llama's layout (Q/K permuted), with the
// embedding, residual, attention and logit multipliers as keys; head_dim is ignored (as
// llama.cpp's converter does), so one other than hidden_size / num_attention_heads is refused.
import { f32, u32 } from "../kv.js";
import { llama3RopeFactors, readRope } from "../rope.js";
import { baseKeys, readDims, requireDerivedHeadDim, Slots } from "./common.js";
import type { ArchSpec } from "./types.js";

export const granite: ArchSpec = {
  arch: "granite",
  classes: ["GraniteForCausalLM"],
  modelTypes: ["granite"],
  defaults: {
    vocab_size: 32000,
    max_position_embeddings: 2048,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    tie_word_embeddings: false,
    embedding_multiplier: 1,
    logits_scaling: 1,
    residual_multiplier: 1,
    attention_multiplier: 1,
  },
  plan(r) {
    const d = readDims(r, { headDim: false });
    if (r.has("head_dim")) requireDerivedHeadDim(r, readDims(r), "granite");
    for (const k of ["attention_bias", "mlp_bias"])
      if (r.bool(k, false)) throw r.unsupported(`${k} true: minfer converts Granite without biases`);
    const rope = readRope(r);
    const scales: [string, string][] = [
      ["attention_multiplier", "attention.scale"],
      ["embedding_multiplier", "embedding_scale"],
      ["residual_multiplier", "residual_scale"],
      ["logits_scaling", "logit_scale"],
    ];
    return {
      tied: d.tied,
      vocabSize: d.vocabSize,
      notes: [],
      tokenizer: { mode: "auto", addPrefixFromConfig: true, prePrefer: ["refact"], noBosForVocabSize: 49152 },
      metadata: (nVocab) => [
        ...baseKeys("granite", r, d, rope, ["linear", "yarn", "llama3"]),
        u32("granite.vocab_size", nVocab),
        u32("granite.rope.dimension_count", d.headDim),
        ...scales.map(([k, key]) => f32(`granite.${key}`, r.num(k))),
      ],
      tensors: (nVocab) => {
        const s = new Slots().outer(nVocab, d.nEmbd);
        for (let i = 0; i < d.nLayer; i++) {
          s.layer(i, "input_layernorm.weight", "attn_norm.weight", [d.nEmbd]);
          s.attention(i, d, { permute: true });
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
