// Gemma2ForCausalLM → "gemma2": Gemma's layout with post-attention and pre/post-feed-forward
// norms (all stored as w + 1), attention and final logit soft-capping, and sliding-window
// attention on every other layer.
import { f32, u32 } from "../kv.js";
import { readDims, Slots } from "./common.js";
import { gemmaKeys, gemmaRefusals } from "./gemma.js";
import { checkQueryScale, gemmaTokenizer, requirePattern, slidingLayers } from "./gemma-shared.js";
import type { ArchSpec } from "./types.js";

export const gemma2: ArchSpec = {
  arch: "gemma2",
  classes: ["Gemma2ForCausalLM"],
  modelTypes: ["gemma2"],
  defaults: {
    vocab_size: 256000,
    head_dim: 256,
    max_position_embeddings: 8192,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    tie_word_embeddings: true,
    query_pre_attn_scalar: 256,
    sliding_window: 4096,
    attn_logit_softcapping: 50,
    final_logit_softcapping: 30,
  },
  plan(r) {
    const d = readDims(r);
    gemmaRefusals(r, "gemma2", d.tied);
    checkQueryScale(r, d, "gemma2", 46);
    // llama.cpp's gemma2 always soft-caps both and always slides every other layer.
    for (const k of ["attn_logit_softcapping", "final_logit_softcapping", "sliding_window"])
      if (r.value(k) === null) throw r.unsupported(`"${k}" is null: llama.cpp's gemma2 always applies it`);
    requirePattern(r, slidingLayers(r, d.nLayer, 2), 2, "gemma2");
    const attnCap = r.num("attn_logit_softcapping");
    const finalCap = r.num("final_logit_softcapping");
    const window = r.int("sliding_window");
    return {
      tied: true,
      vocabSize: d.vocabSize,
      notes: [],
      tokenizer: gemmaTokenizer("spm"),
      rename: (n) =>
        n === "lm_head.weight" ? { skip: "lm_head.weight (Gemma ties the output to token_embd)" } : n,
      metadata: () => [
        ...gemmaKeys("gemma2", d),
        f32("gemma2.attn_logit_softcapping", attnCap),
        f32("gemma2.final_logit_softcapping", finalCap),
        u32("gemma2.attention.sliding_window", window),
      ],
      tensors: (nVocab) => {
        const plus1 = { addOne: true };
        const s = new Slots().outer(nVocab, d.nEmbd, plus1);
        for (let i = 0; i < d.nLayer; i++) {
          s.layer(i, "input_layernorm.weight", "attn_norm.weight", [d.nEmbd], plus1);
          s.attention(i, d);
          s.layer(i, "post_attention_layernorm.weight", "post_attention_norm.weight", [d.nEmbd], plus1);
          s.layer(i, "pre_feedforward_layernorm.weight", "ffn_norm.weight", [d.nEmbd], plus1);
          s.mlp(i, d);
          s.layer(i, "post_feedforward_layernorm.weight", "post_ffw_norm.weight", [d.nEmbd], plus1);
        }
        return s.map;
      },
    };
  },
};
