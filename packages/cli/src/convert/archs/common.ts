// Shared pieces of the converter architectures: the dimensions every config has, the keys
// llama.cpp's base converter (TextModel.set_gguf_parameters) writes, and tensor slot builders.
import type { GgufKV } from "@minfer/gguf";
import type { ConfigReader } from "../hf-config.js";
import { f32, u32 } from "../kv.js";
import { type Rope, ropeScalingKeys } from "../rope.js";
import type { Slot } from "./types.js";

export interface Dims {
  nEmbd: number;
  nFf: number;
  nLayer: number;
  nHead: number;
  nHeadKv: number;
  headDim: number;
  /** The config (or class) gives head_dim: llama.cpp writes attention.key_length/value_length. */
  explicitHeadDim: boolean;
  rmsEps: number;
  nCtx: number;
  vocabSize?: number;
  tied: boolean;
}

/** The dimensions of `r`; `headDim: false` ignores a head_dim key (Granite). */
export function readDims(r: ConfigReader, opts: { headDim?: boolean } = {}): Dims {
  const nEmbd = r.int("hidden_size");
  const nHead = r.int("num_attention_heads");
  const given = opts.headDim === false ? undefined : r.optInt("head_dim");
  const headDim = given ?? nEmbd / nHead;
  if (!Number.isInteger(headDim))
    throw r.bad(
      "hidden_size",
      `${nEmbd} is not a multiple of num_attention_heads ${nHead}, and there is no head_dim`,
    );
  const nHeadKv = r.optInt("num_key_value_heads") ?? nHead;
  if (nHead % nHeadKv !== 0)
    throw r.bad("num_attention_heads", `${nHead} is not a multiple of num_key_value_heads ${nHeadKv}`);
  return {
    nEmbd,
    nFf: r.int("intermediate_size"),
    nLayer: r.int("num_hidden_layers"),
    nHead,
    nHeadKv,
    headDim,
    explicitHeadDim: given !== undefined,
    rmsEps: r.num("rms_norm_eps"),
    nCtx: r.int("max_position_embeddings"),
    vocabSize: r.optInt("vocab_size"),
    tied: r.bool("tie_word_embeddings", false),
  };
}

/** Refuses a head_dim other than hidden_size / num_attention_heads (llama.cpp's loader derives it). */
export function requireDerivedHeadDim(r: ConfigReader, d: Dims, arch: string): void {
  if (d.headDim * d.nHead !== d.nEmbd)
    throw r.unsupported(
      `head_dim ${d.headDim} × num_attention_heads ${d.nHead} ≠ hidden_size ${d.nEmbd}: llama.cpp's ${arch} takes the head size as hidden_size / num_attention_heads`,
    );
}

/**
 * The keys llama.cpp's base converter writes: counts and lengths, the RoPE scaling keys of the
 * types in `scalings`, rope.freq_base (and freq_base_swa when the sliding layers have their own),
 * the RMSNorm epsilon, and attention.key_length / value_length when head_dim is given.
 */
export function baseKeys(
  arch: string,
  r: ConfigReader,
  d: Dims,
  rope: Rope,
  scalings: readonly string[],
): GgufKV[] {
  const kv: GgufKV[] = [
    u32(`${arch}.block_count`, d.nLayer),
    u32(`${arch}.context_length`, d.nCtx),
    u32(`${arch}.embedding_length`, d.nEmbd),
    u32(`${arch}.feed_forward_length`, d.nFf),
    u32(`${arch}.attention.head_count`, d.nHead),
    u32(`${arch}.attention.head_count_kv`, d.nHeadKv),
    ...ropeScalingKeys(arch, r, rope.scaling, scalings),
  ];
  if (rope.theta !== undefined) kv.push(f32(`${arch}.rope.freq_base`, rope.theta));
  if (rope.localTheta !== undefined) kv.push(f32(`${arch}.rope.freq_base_swa`, rope.localTheta));
  kv.push(f32(`${arch}.attention.layer_norm_rms_epsilon`, d.rmsEps));
  if (d.explicitHeadDim)
    kv.push(u32(`${arch}.attention.key_length`, d.headDim), u32(`${arch}.attention.value_length`, d.headDim));
  return kv;
}

/** Builds a slot map: `layer(i)` adds `model.layers.i.<hf>` → `blk.i.<gguf>`. */
export class Slots {
  readonly map = new Map<string, Slot>();

  add(hf: string, gguf: string, shape: number[], extra: Omit<Slot, "gguf" | "shape"> = {}): this {
    this.map.set(hf, { gguf, shape, ...extra });
    return this;
  }

  layer(
    i: number,
    hf: string,
    gguf: string,
    shape: number[],
    extra: Omit<Slot, "gguf" | "shape"> = {},
  ): this {
    return this.add(`model.layers.${i}.${hf}`, `blk.${i}.${gguf}`, shape, extra);
  }

  /** token_embd, output_norm and output (the output is left out when tied or absent). */
  outer(nVocab: number, nEmbd: number, norm: Omit<Slot, "gguf" | "shape"> = {}): this {
    return this.add("model.embed_tokens.weight", "token_embd.weight", [nVocab, nEmbd])
      .add("model.norm.weight", "output_norm.weight", [nEmbd], norm)
      .add("lm_head.weight", "output.weight", [nVocab, nEmbd], { lmHead: true });
  }

  /** q/k/v/o projections as separate tensors (with their biases when `bias`). */
  attention(i: number, d: Dims, opts: { bias?: boolean; permute?: boolean } = {}): this {
    const nQ = d.nHead * d.headDim;
    const nKv = d.nHeadKv * d.headDim;
    const perm = (heads: number) => (opts.permute ? { permute: { heads, headDim: d.headDim } } : {});
    this.layer(i, "self_attn.q_proj.weight", "attn_q.weight", [nQ, d.nEmbd], perm(d.nHead));
    this.layer(i, "self_attn.k_proj.weight", "attn_k.weight", [nKv, d.nEmbd], perm(d.nHeadKv));
    this.layer(i, "self_attn.v_proj.weight", "attn_v.weight", [nKv, d.nEmbd]);
    this.layer(i, "self_attn.o_proj.weight", "attn_output.weight", [d.nEmbd, nQ]);
    if (opts.bias) {
      this.layer(i, "self_attn.q_proj.bias", "attn_q.bias", [nQ]);
      this.layer(i, "self_attn.k_proj.bias", "attn_k.bias", [nKv]);
      this.layer(i, "self_attn.v_proj.bias", "attn_v.bias", [nKv]);
    }
    return this;
  }

  /** gate/up/down projections as separate tensors. */
  mlp(i: number, d: Dims): this {
    this.layer(i, "mlp.gate_proj.weight", "ffn_gate.weight", [d.nFf, d.nEmbd]);
    this.layer(i, "mlp.up_proj.weight", "ffn_up.weight", [d.nFf, d.nEmbd]);
    this.layer(i, "mlp.down_proj.weight", "ffn_down.weight", [d.nEmbd, d.nFf]);
    return this;
  }
}

/** Whether config.json gives a value for `key` that is not null (a feature switched on). */
export function isSet(r: ConfigReader, key: string): boolean {
  const v = r.value(key);
  return v !== undefined && v !== null && v !== false;
}
