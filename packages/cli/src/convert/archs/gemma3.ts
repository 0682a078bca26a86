// Gemma3ForCausalLM, and the text model of Gemma3ForConditionalGeneration (its tensors under
// `language_model.`; the vision tower and projector are skipped) → "gemma3": Gemma 2's layout with
// per-head Q/K RMSNorm, every norm stored as w + 1, five sliding-window layers to each global one,
// a separate RoPE base for the sliding layers, linear RoPE scaling on the global ones.
import { f32, u32 } from "../kv.js";
import { readRope } from "../rope.js";
import { baseKeys, readDims, Slots } from "./common.js";
import { checkQueryScale, gemmaTokenizer, requirePattern, slidingLayers } from "./gemma-shared.js";
import type { ArchSpec } from "./types.js";

const VISION = "vision tower and multimodal projector (text model only)";

export const gemma3: ArchSpec = {
  arch: "gemma3",
  classes: ["Gemma3ForCausalLM", "Gemma3ForConditionalGeneration"],
  modelTypes: ["gemma3_text", "gemma3"],
  // Gemma3TextConfig's: a Gemma3ForConditionalGeneration text_config lists only what differs.
  defaults: {
    vocab_size: 262208,
    hidden_size: 2304,
    intermediate_size: 9216,
    num_hidden_layers: 26,
    num_attention_heads: 8,
    num_key_value_heads: 4,
    head_dim: 256,
    max_position_embeddings: 131072,
    rms_norm_eps: 1e-6,
    rope_theta: 1_000_000,
    rope_local_base_freq: 10000,
    sliding_window: 4096,
    sliding_window_pattern: 6,
    query_pre_attn_scalar: 256,
    tie_word_embeddings: true,
  },
  plan(r) {
    const d = readDims(r);
    const rope = readRope(r);
    checkQueryScale(r, d, "gemma3", 62);
    if (r.value("attn_logit_softcapping") !== undefined && r.value("attn_logit_softcapping") !== null)
      throw r.unsupported(
        `attn_logit_softcapping ${JSON.stringify(r.value("attn_logit_softcapping"))}: Gemma 3 has none, llama.cpp's gemma3 cannot apply it`,
      );
    if (rope.localScaling)
      throw r.unsupported(
        `rope scaling ${JSON.stringify(rope.localScaling.type)} on the sliding-window layers is not supported (llama.cpp scales only the global ones)`,
      );
    const sliding = slidingLayers(r, d.nLayer, r.int("sliding_window_pattern"));
    const anySliding = sliding.some((s) => s);
    if (anySliding) requirePattern(r, sliding, 6, "gemma3");
    const window = anySliding ? r.int("sliding_window") : undefined;
    const finalCap = r.optNum("final_logit_softcapping");
    const notes: string[] = [];
    if (!anySliding) notes.push("no sliding-window layers: attention.sliding_window is not written");
    return {
      tied: d.tied,
      vocabSize: d.vocabSize,
      notes,
      tokenizer: gemmaTokenizer("auto"),
      rename: (n) => {
        if (/(^|\.)(vision_tower|multi_modal_projector|vision_model)\./.test(n)) return { skip: VISION };
        if (n.startsWith("language_model.")) return n.slice("language_model.".length);
        if (n.startsWith("model.language_model.")) return `model.${n.slice("model.language_model.".length)}`;
        return n;
      },
      metadata: () => [
        ...baseKeys("gemma3", r, d, rope, ["linear"]),
        ...(finalCap ? [f32("gemma3.final_logit_softcapping", finalCap)] : []),
        ...(window !== undefined ? [u32("gemma3.attention.sliding_window", window)] : []),
      ],
      tensors: (nVocab) => {
        const plus1 = { addOne: true };
        const s = new Slots().outer(nVocab, d.nEmbd, plus1);
        // llama.cpp keeps only the embedding rows of real tokens.
        s.map.get("model.embed_tokens.weight")!.trimRows = true;
        for (let i = 0; i < d.nLayer; i++) {
          s.layer(i, "input_layernorm.weight", "attn_norm.weight", [d.nEmbd], plus1);
          s.attention(i, d);
          s.layer(i, "self_attn.q_norm.weight", "attn_q_norm.weight", [d.headDim], plus1);
          s.layer(i, "self_attn.k_norm.weight", "attn_k_norm.weight", [d.headDim], plus1);
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
