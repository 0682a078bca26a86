// Test-only: tiny random Hugging Face checkpoints of the converter's new architectures
// (tiny-configs.json, the same configs scripts/hf-fidelity/reference_archs.py builds with
// transformers), with the tensors each Hugging Face class has — listed here from transformers'
// modeling code, independently of archs/*.ts — and the tokenizer files of the case's fixture
// vocabulary. Later tests (the models' graphs against these files) build checkpoints with it.
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fixtures } from "../test-helpers.js";
import { type Dtype, type HfTensor, normalRng, roundTo, writeSafetensors } from "./test-helpers.js";
import {
  type AddedToken,
  bpeTokenizerJson,
  fixturePieces,
  readFixtureVocab,
  writeJson,
  writeSpmTokenizer,
} from "./test-tokenizers.js";

export interface TinyCase {
  name: string;
  /** Hugging Face class (config.json `architectures`). */
  class: string;
  model_type: string;
  /** Fixture vocabulary: ../shared/fixtures/vocab/ggml-vocab-<vocab>.gguf. */
  vocab: "llama-spm" | "phi-3" | "gpt-2";
  /** Byte-level BPE pre-tokenizer rule written into tokenizer.json (test-tokenizers' BPE_PRE_TOKENIZERS). */
  pre?: string;
  seed: number;
  config: Record<string, unknown>;
}

export const TINY_CASES: readonly TinyCase[] = (
  JSON.parse(readFileSync(new URL("./tiny-configs.json", import.meta.url), "utf8")) as { cases: TinyCase[] }
).cases;

export function tinyCase(name: string): TinyCase {
  const c = TINY_CASES.find((x) => x.name === name);
  if (!c) throw new Error(`no tiny case ${name}`);
  return structuredClone(c);
}

/** A tensor of the checkpoint and how its random values are drawn. */
export interface TensorSpec {
  name: string;
  shape: number[];
  /** Normal(mean, std). */
  mean: number;
  std: number;
}

const num = (c: Record<string, unknown>, k: string, fallback?: number): number => {
  const v = c[k];
  if (typeof v === "number") return v;
  if (fallback !== undefined) return fallback;
  throw new Error(`tiny config lacks ${k}`);
};

/** The tensors a Hugging Face checkpoint of this class and config holds (save_pretrained drops tied lm_head). */
export function hfTensors(cls: string, c: Record<string, unknown>): TensorSpec[] {
  const E = num(c, "hidden_size");
  const F = num(c, "intermediate_size");
  const L = num(c, "num_hidden_layers");
  const H = num(c, "num_attention_heads");
  const KV = num(c, "num_key_value_heads", H);
  const D = num(c, "head_dim", E / H);
  const V = num(c, "vocab_size");
  const gemma = cls.startsWith("Gemma");
  // Gemma's RMSNorm scales by (1 + w): draw w around 0 (the others around 1).
  const norm = (name: string, n = E): TensorSpec => ({ name, shape: [n], mean: gemma ? 0 : 1, std: 0.1 });
  const mat = (name: string, rows: number, cols: number, std = 0.2): TensorSpec => ({
    name,
    shape: [rows, cols],
    mean: 0,
    std,
  });
  const bias = (name: string, n: number): TensorSpec => ({ name, shape: [n], mean: 0, std: 0.2 });
  const out: TensorSpec[] = [mat("model.embed_tokens.weight", V, E, 0.5)];
  for (let i = 0; i < L; i++) {
    const p = `model.layers.${i}.`;
    const qkvo = () => [
      mat(`${p}self_attn.q_proj.weight`, H * D, E),
      mat(`${p}self_attn.k_proj.weight`, KV * D, E),
      mat(`${p}self_attn.v_proj.weight`, KV * D, E),
      mat(`${p}self_attn.o_proj.weight`, E, H * D, 0.1),
    ];
    const mlp = () => [
      mat(`${p}mlp.gate_proj.weight`, F, E),
      mat(`${p}mlp.up_proj.weight`, F, E),
      mat(`${p}mlp.down_proj.weight`, E, F, 0.1),
    ];
    switch (cls) {
      case "GemmaForCausalLM":
      case "GraniteForCausalLM":
        out.push(
          norm(`${p}input_layernorm.weight`),
          ...qkvo(),
          norm(`${p}post_attention_layernorm.weight`),
          ...mlp(),
        );
        break;
      case "Gemma2ForCausalLM":
      case "Gemma3ForCausalLM":
        out.push(norm(`${p}input_layernorm.weight`), ...qkvo());
        if (cls === "Gemma3ForCausalLM")
          out.push(norm(`${p}self_attn.q_norm.weight`, D), norm(`${p}self_attn.k_norm.weight`, D));
        out.push(
          norm(`${p}post_attention_layernorm.weight`),
          norm(`${p}pre_feedforward_layernorm.weight`),
          ...mlp(),
          norm(`${p}post_feedforward_layernorm.weight`),
        );
        break;
      case "Phi3ForCausalLM":
        out.push(
          norm(`${p}input_layernorm.weight`),
          mat(`${p}self_attn.qkv_proj.weight`, (H + 2 * KV) * D, E),
          mat(`${p}self_attn.o_proj.weight`, E, H * D, 0.1),
          norm(`${p}post_attention_layernorm.weight`),
          mat(`${p}mlp.gate_up_proj.weight`, 2 * F, E),
          mat(`${p}mlp.down_proj.weight`, E, F, 0.1),
        );
        break;
      case "Glm4ForCausalLM":
        out.push(
          norm(`${p}input_layernorm.weight`),
          ...qkvo(),
          bias(`${p}self_attn.q_proj.bias`, H * D),
          bias(`${p}self_attn.k_proj.bias`, KV * D),
          bias(`${p}self_attn.v_proj.bias`, KV * D),
          norm(`${p}post_self_attn_layernorm.weight`),
          norm(`${p}post_attention_layernorm.weight`),
          mat(`${p}mlp.gate_up_proj.weight`, 2 * F, E),
          mat(`${p}mlp.down_proj.weight`, E, F, 0.1),
          norm(`${p}post_mlp_layernorm.weight`),
        );
        break;
      case "Olmo2ForCausalLM":
        out.push(
          ...qkvo(),
          norm(`${p}self_attn.q_norm.weight`, H * D),
          norm(`${p}self_attn.k_norm.weight`, KV * D),
          norm(`${p}post_attention_layernorm.weight`),
          ...mlp(),
          norm(`${p}post_feedforward_layernorm.weight`),
        );
        break;
      default:
        throw new Error(`hfTensors: no tensor list for ${cls}`);
    }
  }
  out.push(norm("model.norm.weight"));
  if (c.tie_word_embeddings !== true) out.push(mat("lm_head.weight", V, E, 0.3));
  return out;
}

/** Writes the tokenizer files of `vocab` (a fixture) into `dir`, as that model family ships them. */
export async function writeTokenizerFiles(dir: string, c: TinyCase): Promise<void> {
  const v = await readFixtureVocab(join(fixtures, `vocab/ggml-vocab-${c.vocab}.gguf`));
  if (c.vocab === "llama-spm") {
    const added: AddedToken[] = [
      { id: 0, content: "<unk>", special: true },
      { id: 1, content: "<s>", special: true },
      { id: 2, content: "</s>", special: true },
    ];
    writeSpmTokenizer(
      dir,
      fixturePieces(v, v.tokens.length),
      added,
      {
        bos_token: "<s>",
        eos_token: "</s>",
        unk_token: "<unk>",
        pad_token: null,
        add_bos_token: true,
        add_eos_token: false,
        tokenizer_class: "LlamaTokenizer",
      },
      // Llama 2's tokenizer_config.json predates added_tokens_decoder (so <unk> stays UNKNOWN).
      { bos: "<s>", decoder: false },
    );
  } else if (c.vocab === "phi-3") {
    // Phi-3's tokenizer.model is Llama 2's (32000 pieces); the GGUF's first three are its added tokens.
    const pieces = fixturePieces(v, 32000).map((p, i) =>
      i < 3 ? { ...p, score: 0, type: i === 0 ? 2 : 3 } : p,
    );
    const added: AddedToken[] = [
      { id: 0, content: "<unk>", special: true },
      { id: 1, content: "<s>", special: true },
      { id: 2, content: "</s>", special: false },
    ];
    for (let id = 32000; id < v.tokens.length; id++)
      if (v.types[id] === 3) added.push({ id, content: v.tokens[id]!, special: true });
    writeSpmTokenizer(
      dir,
      pieces,
      added,
      {
        bos_token: "<s>",
        eos_token: "<|endoftext|>",
        unk_token: "<unk>",
        pad_token: "<|endoftext|>",
        add_bos_token: true,
        add_eos_token: false,
        chat_template: v.md.optString("tokenizer.chat_template"),
        tokenizer_class: "LlamaTokenizer",
      },
      { bos: "<s>" },
    );
  } else {
    writeJson(join(dir, "tokenizer.json"), bpeTokenizerJson(v, c.pre ?? "gpt-2"));
    writeJson(join(dir, "tokenizer_config.json"), {
      bos_token: "<|endoftext|>",
      eos_token: "<|endoftext|>",
      unk_token: "<|endoftext|>",
      add_bos_token: false,
      tokenizer_class: "GPT2Tokenizer",
    });
  }
}

export interface TinyCheckpoint {
  dir: string;
  case: TinyCase;
  /** config.json as written. */
  config: Record<string, unknown>;
  /** The tensors as written (values rounded to the dtype), by checkpoint name. */
  tensors: Map<string, HfTensor>;
}

export interface TinyOptions {
  dtype?: Dtype;
  /** Edits the case's config before anything is written. */
  edit?: (config: Record<string, unknown>) => void;
  /**
   * Gemma 3 only: as Gemma3ForConditionalGeneration (text config under text_config, tensors
   * under language_model., a vision tower and projector beside them).
   */
  multimodal?: boolean;
}

/**
 * Writes the tiny checkpoint `name` (a tiny-configs.json case) into `dir`: config.json, the
 * tokenizer files, model.safetensors with random weights (seeded).
 */
export async function tinyCheckpoint(
  name: string,
  dir: string,
  o: TinyOptions = {},
): Promise<TinyCheckpoint> {
  const c = tinyCase(name);
  o.edit?.(c.config);
  mkdirSync(dir, { recursive: true });
  const dtype = o.dtype ?? "F32";
  const torchDtype = dtype === "F32" ? "float32" : dtype === "F16" ? "float16" : "bfloat16";
  const specs = hfTensors(c.class, c.config);
  const rnd = normalRng(c.seed);
  const tensors: HfTensor[] = specs.map((s) => {
    const n = s.shape.reduce((a, b) => a * b, 1);
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) v[i] = s.mean + s.std * rnd();
    return { name: s.name, shape: s.shape, values: roundTo(v, dtype) };
  });
  let config: Record<string, unknown> = {
    architectures: [c.class],
    model_type: c.model_type,
    ...c.config,
    torch_dtype: torchDtype,
  };
  let written = tensors;
  if (o.multimodal) {
    const { bos_token_id, eos_token_id, pad_token_id } = c.config;
    config = {
      architectures: ["Gemma3ForConditionalGeneration"],
      model_type: "gemma3",
      text_config: { model_type: c.model_type, ...c.config },
      vision_config: {
        model_type: "siglip_vision_model",
        hidden_size: 8,
        num_hidden_layers: 1,
        patch_size: 4,
      },
      mm_tokens_per_image: 4,
      bos_token_id,
      eos_token_id,
      pad_token_id,
      torch_dtype: torchDtype,
    };
    const lm = tensors.map((t) => ({ ...t, name: `language_model.${t.name}` }));
    const E = c.config.hidden_size as number;
    const extra = (name: string, shape: number[]): HfTensor => ({
      name,
      shape,
      values: roundTo(
        new Float32Array(shape.reduce((a, b) => a * b, 1)).map(() => 0.1 * rnd()),
        dtype,
      ),
    });
    written = [
      extra("vision_tower.vision_model.embeddings.patch_embedding.weight", [8, 3, 4, 4]),
      extra("vision_tower.vision_model.post_layernorm.weight", [8]),
      ...lm,
      extra("multi_modal_projector.mm_input_projection_weight", [8, E]),
      extra("multi_modal_projector.mm_soft_emb_norm.weight", [8]),
    ];
  }
  writeJson(join(dir, "config.json"), config);
  await writeTokenizerFiles(dir, c);
  writeSafetensors(join(dir, "model.safetensors"), written, dtype);
  return { dir, case: c, config, tensors: new Map(tensors.map((t) => [t.name, t])) };
}
