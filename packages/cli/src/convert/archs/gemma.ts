// GemmaForCausalLM → "gemma": every RMSNorm weight stored as w + 1, the output tied to
// token_embd (lm_head.weight is dropped), no RoPE keys (llama.cpp's default base 10000).
import { f32, u32 } from "../kv.js";
import { readRope } from "../rope.js";
import { readDims, Slots } from "./common.js";
import { gemmaTokenizer } from "./gemma-shared.js";
import type { ArchSpec } from "./types.js";

/** Keys of GemmaModel.set_gguf_parameters (Gemma 2 adds to them). */
export function gemmaKeys(arch: string, d: ReturnType<typeof readDims>) {
  return [
    u32(`${arch}.context_length`, d.nCtx),
    u32(`${arch}.embedding_length`, d.nEmbd),
    u32(`${arch}.block_count`, d.nLayer),
    u32(`${arch}.feed_forward_length`, d.nFf),
    u32(`${arch}.attention.head_count`, d.nHead),
    u32(`${arch}.attention.head_count_kv`, d.nHeadKv),
    f32(`${arch}.attention.layer_norm_rms_epsilon`, d.rmsEps),
    u32(`${arch}.attention.key_length`, d.headDim),
    u32(`${arch}.attention.value_length`, d.headDim),
  ];
}

/** Refusals Gemma and Gemma 2 share: llama.cpp's converter writes no RoPE keys and ties the output. */
export function gemmaRefusals(r: Parameters<ArchSpec["plan"]>[0], arch: string, tied: boolean): void {
  const rope = readRope(r);
  if (rope.scaling)
    throw r.unsupported(
      `rope scaling ${JSON.stringify(rope.scaling.type)}: llama.cpp's ${arch} converter writes no RoPE keys`,
    );
  if (rope.theta !== undefined && rope.theta !== 10000)
    throw r.unsupported(
      `rope_theta ${rope.theta}: llama.cpp's ${arch} converter writes no rope.freq_base (10000 is assumed)`,
    );
  if (!tied)
    throw r.unsupported(
      `tie_word_embeddings false: llama.cpp's ${arch} always uses token_embd as the output`,
    );
}

export const gemma: ArchSpec = {
  arch: "gemma",
  classes: ["GemmaForCausalLM"],
  modelTypes: ["gemma"],
  defaults: {
    vocab_size: 256000,
    head_dim: 256,
    max_position_embeddings: 8192,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    tie_word_embeddings: true,
  },
  plan(r) {
    const d = readDims(r);
    gemmaRefusals(r, "gemma", d.tied);
    return {
      tied: true,
      vocabSize: d.vocabSize,
      notes: [],
      tokenizer: {
        ...gemmaTokenizer("spm"),
        // CodeGemma's special tokens: of prefix/suffix/middle/fsep/eot (ids 67, 69, 68, 70, 107)
        // llama.cpp's writer keeps only eot.
        specials: (s, _find, tokens) => {
          if (tokens[107] === "<end_of_turn>") s.setIfAbsent("eot", 107);
        },
      },
      rename: (n) =>
        n === "lm_head.weight" ? { skip: "lm_head.weight (Gemma ties the output to token_embd)" } : n,
      metadata: () => gemmaKeys("gemma", d),
      tensors: (nVocab) => {
        const plus1 = { addOne: true };
        const s = new Slots().outer(nVocab, d.nEmbd, plus1);
        for (let i = 0; i < d.nLayer; i++) {
          s.layer(i, "input_layernorm.weight", "attn_norm.weight", [d.nEmbd], plus1);
          s.attention(i, d);
          s.layer(i, "post_attention_layernorm.weight", "ffn_norm.weight", [d.nEmbd], plus1);
          s.mlp(i, d);
        }
        return s.map;
      },
    };
  },
};
