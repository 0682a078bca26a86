import type { GgufMetadata } from "@minfer/gguf";
import type { BuildOptions, BuiltGraph, KvLayer, LayerRope } from "./arch.js";
import { ArchKeys } from "./arch-keys.js";
import { buildAttention } from "./attention.js";
import { buildFfn } from "./ffn.js";
import { declareInputs } from "./graph-inputs.js";
import { type ArchDefaults, type Hparams, readHparams } from "./hparams.js";
import { kvLayersOf } from "./kv-layers.js";
import {
  attentionSettings,
  attentionWeights,
  ffnWeights,
  outputLogits,
  tokenEmbeddings,
} from "./layer-weights.js";
import { ModelGraph } from "./model-graph.js";
import { rmsNorm } from "./norm.js";
import { ropeParams } from "./rope.js";
import type { SynthKey } from "./synth.js";
import { attentionSpecs, ffnSpecs, headSpecs, vector } from "./tensor-specs.js";
import { checkModelTensors, type ModelTensors, type TensorInfo, type TensorSpec } from "./tensors.js";

/**
 * Gemma 3 (text): Gemma 2's block with per-head RMSNorms of Q and K and no soft-capping; five
 * sliding-window layers to one global one (layers 5, 11, 17, … are global), the local layers with
 * their own RoPE base (10000, unscaled) and the global ones with the file's base and scaling.
 */
export const ARCH = "gemma3";

/** Defaults of keys a gemma3 file may omit: RMSNorm eps 1e-6, RoPE base 1e6. */
export const DEFAULTS: ArchDefaults = { rmsEps: 1e-6, ropeFreqBase: 1000000 };

/** Gemma 3's own hyperparameters. */
export interface Gemma3Hparams extends Hparams {
  /** `attention.sliding_window` (required). */
  readonly slidingWindow: number;
  /** `rope.freq_base_swa`: the sliding-window layers' RoPE base. Default: 10000. */
  readonly ropeFreqBaseSwa: number;
  /** The query scale: 1/√(nEmbd / nHead) for the 27B shape (62 layers), else 1/√headDim, as llama.cpp. */
  readonly attnScale: number;
}

export function loadHparams(meta: GgufMetadata): Gemma3Hparams {
  const hp = readHparams(meta, ARCH, DEFAULTS);
  const k = new ArchKeys(meta, ARCH);
  return {
    ...hp,
    slidingWindow: k.count("attention.sliding_window"),
    ropeFreqBaseSwa: k.optPositive("rope.freq_base_swa") ?? 10000,
    attnScale: 1 / Math.sqrt(hp.nLayer === 62 ? hp.nEmbd / hp.nHead : hp.headDimK),
  };
}

/** A synthetic gemma3 file's own keys: a short window, so tests cross it. */
export const SYNTH_KEYS: readonly SynthKey[] = [["attention.sliding_window", "u32", 16]];

/** Whether layer `il` attends through the sliding window (all but every sixth). */
export function isSliding(il: number): boolean {
  return il % 6 < 5;
}

/** The tensors of a gemma3 file (`output.weight` absent when tied). */
export function* tensorSpecs(hp: Hparams): Generator<TensorSpec> {
  yield* headSpecs(hp);
  for (let il = 0; il < hp.nLayer; il++) {
    const p = `blk.${il}.`;
    yield vector(`${p}attn_norm.weight`, hp.nEmbd);
    yield* attentionSpecs(hp, il);
    yield vector(`${p}attn_q_norm.weight`, hp.headDimK);
    yield vector(`${p}attn_k_norm.weight`, hp.headDimK);
    yield vector(`${p}post_attention_norm.weight`, hp.nEmbd);
    yield vector(`${p}ffn_norm.weight`, hp.nEmbd);
    yield* ffnSpecs(hp, il);
    yield vector(`${p}post_ffw_norm.weight`, hp.nEmbd);
  }
}

export function loadTensors(hp: Gemma3Hparams, infos: Iterable<TensorInfo>): ModelTensors {
  return checkModelTensors(ARCH, hp.nLayer, infos, tensorSpecs(hp));
}

export function kvLayers(hp: Gemma3Hparams): KvLayer[] {
  return kvLayersOf(hp, (il) => (isSliding(il) ? "swa" : "full"));
}

export function slidingWindow(hp: Gemma3Hparams): number {
  return hp.slidingWindow;
}

/** Local layers: base `rope.freq_base_swa`, no scaling; global layers: the file's base and scaling. */
export function kRope(hp: Gemma3Hparams, il: number): LayerRope {
  const global = ropeParams(hp, "neox");
  if (!isSliding(il)) return { params: global };
  return { params: { ...global, freqBase: hp.ropeFreqBaseSwa, freqScale: 1, extFactor: 0, attnFactor: 1 } };
}

/**
 * Scaled embeddings; per layer: norm → attention (Q/K per-head norms, the layer's RoPE, windowed
 * on local layers) → norm → residual, norm → GeGLU → norm → residual; final norm; logits of `out_ids`.
 */
export function buildGraph(hp: Gemma3Hparams, o: BuildOptions): BuiltGraph {
  const g = new ModelGraph(o.tensors, o);
  const { b } = g;
  const inp = declareInputs(
    b,
    o,
    kvLayers(hp).map((l) => l.group),
  );
  const embd = b.name(b.getRows(tokenEmbeddings(g, hp), inp.tokens), "inp_embd");
  let cur = b.name(b.scale(embd, Math.sqrt(hp.nEmbd)), "inp_scaled");
  for (let il = 0; il < hp.nLayer; il++) {
    const w = (name: string) => g.weight(`blk.${il}.${name}`, [hp.nEmbd]);
    const attention = attentionSettings(g, hp, o, kRope(hp, il), inp.kv[isSliding(il) ? "swa" : "full"]!, {
      scale: hp.attnScale,
    });
    const weights = attentionWeights(g, hp, il, { qkNorm: "head" });
    const attnIn = rmsNorm(b, cur, w("attn_norm.weight"), hp.rmsEps, "attn_norm", il);
    const attn = buildAttention(b, attnIn, inp.positions, weights, attention, il);
    const attnOut = rmsNorm(b, attn, w("post_attention_norm.weight"), hp.rmsEps, "attn_post_norm", il);
    const saOut = b.name(b.add(attnOut, cur), "sa_out", il);
    const ffnIn = rmsNorm(b, saOut, w("ffn_norm.weight"), hp.rmsEps, "ffn_norm", il);
    const ffn = buildFfn(b, ffnIn, ffnWeights(g, hp, il), "gelu", il);
    const ffnOut = rmsNorm(b, ffn, w("post_ffw_norm.weight"), hp.rmsEps, "ffn_post_norm", il);
    cur = b.name(b.add(ffnOut, saOut), "l_out", il);
  }
  return g.finish(outputLogits(g, hp, cur, inp.outIds));
}
