// Phi3ForCausalLM (Phi-3 mini/medium 4k and 128k, Phi-3.5-mini, Phi-4-mini) → "phi3": fused
// attn_qkv and ffn_up (gate then up) kept fused, NeoX RoPE over the first
// partial_rotary_factor of each head, LongRoPE as the rope_factors_long/short tensors with
// rope.scaling.attn_factor.
import { f32, u32 } from "../kv.js";
import { readRope } from "../rope.js";
import { readDims, requireDerivedHeadDim, Slots } from "./common.js";
import type { ArchSpec } from "./types.js";

export const phi3: ArchSpec = {
  arch: "phi3",
  classes: ["Phi3ForCausalLM"],
  modelTypes: ["phi3"],
  defaults: {
    vocab_size: 32064,
    max_position_embeddings: 4096,
    original_max_position_embeddings: 4096,
    rms_norm_eps: 1e-5,
    rope_theta: 10000,
    tie_word_embeddings: false,
  },
  plan(r) {
    const d = readDims(r);
    requireDerivedHeadDim(r, d, "phi3");
    const rope = readRope(r);
    const rot = rope.partialRotaryFactor ?? 1;
    const ropeDims = Math.floor(Math.floor(rot * d.nEmbd) / d.nHead);
    const s = rope.scaling;
    const orig = s?.originalContextLength ?? r.int("original_max_position_embeddings");
    let attnFactor: number | undefined;
    if (s) {
      if (s.type !== "longrope" && s.type !== "su")
        throw r.unsupported(
          `rope scaling ${JSON.stringify(s.type)} is not supported for phi3; supported: longrope (su)`,
        );
      for (const [k, f] of [
        ["long_factor", s.longFactor],
        ["short_factor", s.shortFactor],
      ] as const)
        if (!f || f.length !== ropeDims / 2)
          throw r.bad(
            `rope_scaling.${k}`,
            `has ${f?.length ?? "no"} values; LongRoPE needs ${ropeDims / 2} (rope dimensions / 2)`,
          );
      const scale = d.nCtx / orig;
      attnFactor = scale > 1 ? Math.sqrt(1 + Math.log(scale) / Math.log(orig)) : 1;
      if (s.attentionFactor !== undefined && Math.abs(s.attentionFactor - attnFactor) > 1e-6)
        throw r.unsupported(
          `rope_scaling.attention_factor ${s.attentionFactor}: llama.cpp's converter computes ${attnFactor} from the context lengths and has no key for another`,
        );
    }
    const notes: string[] = [];
    const window = r.optInt("sliding_window");
    if (window)
      notes.push(
        `sliding_window ${window} is written, but llama.cpp runs phi3 without sliding-window attention`,
      );
    const nQ = d.nHead * d.headDim;
    const nKv = d.nHeadKv * d.headDim;
    return {
      tied: d.tied,
      vocabSize: d.vocabSize,
      notes,
      tokenizer: { mode: "phi3" },
      metadata: () => [
        u32("phi3.context_length", d.nCtx),
        u32("phi3.rope.scaling.original_context_length", orig),
        u32("phi3.embedding_length", d.nEmbd),
        u32("phi3.feed_forward_length", d.nFf),
        u32("phi3.block_count", d.nLayer),
        u32("phi3.attention.head_count", d.nHead),
        u32("phi3.attention.head_count_kv", d.nHeadKv),
        f32("phi3.attention.layer_norm_rms_epsilon", d.rmsEps),
        u32("phi3.rope.dimension_count", ropeDims),
        f32("phi3.rope.freq_base", rope.theta ?? 10000),
        u32("phi3.attention.sliding_window", window ?? 0),
        ...(attnFactor !== undefined ? [f32("phi3.rope.scaling.attn_factor", attnFactor)] : []),
      ],
      tensors: (nVocab) => {
        const sl = new Slots().outer(nVocab, d.nEmbd);
        for (let i = 0; i < d.nLayer; i++) {
          sl.layer(i, "input_layernorm.weight", "attn_norm.weight", [d.nEmbd]);
          sl.layer(i, "self_attn.qkv_proj.weight", "attn_qkv.weight", [nQ + 2 * nKv, d.nEmbd]);
          sl.layer(i, "self_attn.o_proj.weight", "attn_output.weight", [d.nEmbd, nQ]);
          sl.layer(i, "post_attention_layernorm.weight", "ffn_norm.weight", [d.nEmbd]);
          sl.layer(i, "mlp.gate_up_proj.weight", "ffn_up.weight", [2 * d.nFf, d.nEmbd]);
          sl.layer(i, "mlp.down_proj.weight", "ffn_down.weight", [d.nEmbd, d.nFf]);
        }
        return sl.map;
      },
      extraTensors: () =>
        s
          ? [
              { name: "rope_factors_long.weight", values: Float32Array.from(s.longFactor!) },
              { name: "rope_factors_short.weight", values: Float32Array.from(s.shortFactor!) },
            ]
          : [],
    };
  },
};
