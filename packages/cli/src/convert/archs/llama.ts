// LlamaForCausalLM → "llama": Q/K rows permuted to GGUF's interleaved RoPE pairs, llama3 RoPE
// scaling as the rope_freqs.weight tensor.
import { u32 } from "../kv.js";
import { llama3RopeFactors, readRope } from "../rope.js";
import { baseKeys, readDims, Slots } from "./common.js";
import type { ArchSpec } from "./types.js";

export const llama: ArchSpec = {
  arch: "llama",
  classes: ["LlamaForCausalLM"],
  modelTypes: ["llama"],
  defaults: { rms_norm_eps: 1e-6, rope_theta: 10000, max_position_embeddings: 2048 },
  plan(r) {
    const d = readDims(r);
    const rope = readRope(r);
    return {
      tied: d.tied,
      vocabSize: d.vocabSize,
      notes: [],
      tokenizer: { mode: "auto", addPrefixFromConfig: true },
      metadata: (nVocab) => [
        ...baseKeys("llama", r, d, rope, ["linear", "yarn", "llama3"]),
        u32("llama.vocab_size", nVocab),
        u32("llama.rope.dimension_count", d.headDim),
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
