// NomicBertModel (nomic-embed-text v1 / v1.5) → "nomic-bert": a post-LayerNorm encoder with a
// fused Wqkv, NeoX RoPE (rotary_emb_base), a SwiGLU MLP (fc11 up, fc12 gate, fc2 down) and no
// biases; token types but no position table. Its config is nomic's own (GPT-2-style keys: n_embd,
// n_head, n_layer, n_inner, n_positions), read as config.json gives it — llama.cpp's converter
// cannot load the remote-code config class, so it has no defaults either — and checked as
// llama.cpp's converter checks it. The vocabulary is WordPiece (or Unigram, as llama.cpp allows).
import { dirname, join } from "node:path";
import { readJsonObject } from "../bert-special.js";
import { readUnigramVocab } from "../tokenizer-ugm.js";
import { readWordPieceVocab } from "../tokenizer-wpm.js";
import { Slots } from "./common.js";
import { checkHeads, type EncoderDims, encoderKeys, encoderPooling } from "./encoder.js";
import type { ArchSpec, Rename } from "./types.js";

export const nomicBert: ArchSpec = {
  arch: "nomic-bert",
  classes: ["NomicBertModel"],
  modelTypes: ["nomic_bert"],
  defaults: {},
  plan(r) {
    if (r.has("moe_every_n_layers"))
      throw r.unsupported(
        "moe_every_n_layers: nomic-embed-text-v2-moe is llama.cpp's nomic-bert-moe, not converted here",
      );
    const want = (key: string, value: unknown, why: string) => {
      const v = r.value(key);
      if (v !== value)
        throw r.unsupported(
          `${key} ${JSON.stringify(v ?? null)}: llama.cpp's nomic-bert needs ${JSON.stringify(value)} (${why})`,
        );
    };
    want("activation_function", "swiglu", "a SwiGLU MLP");
    want("causal", false, "an encoder");
    want("qkv_proj_bias", false, "no biases");
    want("mlp_fc1_bias", false, "no biases");
    want("mlp_fc2_bias", false, "no biases");
    want("prenorm", false, "LayerNorm after each block");
    want("rotary_emb_fraction", 1, "RoPE over whole heads");
    want("rotary_emb_interleaved", false, "NeoX RoPE");
    if (r.value("rotary_emb_scale_base") !== null)
      throw r.unsupported(
        "rotary_emb_scale_base is set: llama.cpp's nomic-bert has plain RoPE (it must be null)",
      );
    if (r.value("use_rms_norm") === true)
      throw r.unsupported("use_rms_norm: llama.cpp's nomic-bert has LayerNorm");
    if (r.value("parallel_block") === true)
      throw r.unsupported("parallel_block: llama.cpp's nomic-bert is sequential");
    // nomic-embed-text v1 / v1.5 are trained for 2048 tokens (llama.cpp's converter accepts only
    // this pair of n_positions and max_trained_positions for a dense model).
    const nPos = r.int("n_positions");
    const trained = r.optInt("max_trained_positions") ?? 2048;
    if (nPos !== 8192 || trained !== 2048)
      throw r.unsupported(
        `n_positions ${nPos} with max_trained_positions ${trained}: llama.cpp's converter knows nomic-embed-text's 8192 / 2048 (context 2048) only`,
      );
    const notes: string[] = [];
    if (r.value("rotary_scaling_factor") !== undefined && r.value("rotary_scaling_factor") !== null)
      notes.push(
        `rotary_scaling_factor ${JSON.stringify(r.value("rotary_scaling_factor"))} (dynamic NTK past ${trained} tokens) is not written: the context is ${trained}`,
      );
    const nEmbd = r.int("n_embd");
    const nHead = r.int("n_head");
    checkHeads(r, "n_embd", nEmbd, nHead);
    const typeVocab = r.value("type_vocab_size");
    const d: EncoderDims = {
      nEmbd,
      nFf: r.int("n_inner"),
      nLayer: r.int("n_layer"),
      nHead,
      nCtx: 2048,
      eps: r.num("layer_norm_epsilon"),
      vocabSize: r.int("vocab_size"),
      // llama.cpp's converter writes type_vocab_size, default 1.
      typeVocabSize: typeof typeVocab === "number" ? typeVocab : 1,
    };
    if (!Number.isInteger(d.typeVocabSize) || d.typeVocabSize < 0)
      throw r.bad("type_vocab_size", `is ${JSON.stringify(typeVocab)}; expected a non-negative integer`);
    const ropeBase = r.optNum("rotary_emb_base");
    const pooling = encoderPooling(dirname(r.path), false, notes);
    return {
      tied: false,
      vocabSize: d.vocabSize,
      notes,
      vocab: (dir) => {
        const o = { config: r.file, vocabSize: d.vocabSize, typeVocabSize: d.typeVocabSize };
        const model = (readJsonObject(join(dir, "tokenizer.json"))?.model as { type?: unknown } | undefined)
          ?.type;
        return model === "Unigram" ? readUnigramVocab(dir, o) : readWordPieceVocab(dir, o);
      },
      metadata: () => encoderKeys("nomic-bert", d, { ropeBase, pooling }),
      tensors: () => {
        const E = d.nEmbd;
        const F = d.nFf;
        const s = new Slots().add("embeddings.word_embeddings.weight", "token_embd.weight", [d.vocabSize, E]);
        if (d.typeVocabSize > 0)
          s.add("embeddings.token_type_embeddings.weight", "token_types.weight", [d.typeVocabSize, E], {
            f32: true,
          });
        s.add("emb_ln.weight", "token_embd_norm.weight", [E]).add("emb_ln.bias", "token_embd_norm.bias", [E]);
        for (let i = 0; i < d.nLayer; i++) {
          const hf = (n: string) => `encoder.layers.${i}.${n}`;
          const gg = (n: string) => `blk.${i}.${n}`;
          s.add(hf("attn.Wqkv.weight"), gg("attn_qkv.weight"), [3 * E, E])
            .add(hf("attn.out_proj.weight"), gg("attn_output.weight"), [E, E])
            .add(hf("norm1.weight"), gg("attn_output_norm.weight"), [E])
            .add(hf("norm1.bias"), gg("attn_output_norm.bias"), [E])
            .add(hf("mlp.fc11.weight"), gg("ffn_up.weight"), [F, E])
            .add(hf("mlp.fc12.weight"), gg("ffn_gate.weight"), [F, E])
            .add(hf("mlp.fc2.weight"), gg("ffn_down.weight"), [E, F])
            .add(hf("norm2.weight"), gg("layer_output_norm.weight"), [E])
            .add(hf("norm2.bias"), gg("layer_output_norm.bias"), [E]);
        }
        return s.map;
      },
      rename: (name): Rename => {
        if (name === "embeddings.position_ids") return { skip: "the position id buffer" };
        return name;
      },
    };
  },
};
