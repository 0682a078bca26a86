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
  fusedGateUpWeights,
  outputLogits,
  qkvWeights,
  tokenEmbeddings,
} from "./layer-weights.js";
import { ModelGraph } from "./model-graph.js";
import { rmsNorm } from "./norm.js";
import { ropeParams } from "./rope.js";
import type { SynthKey } from "./synth.js";
import { hasFusedQkv, headSpecs, matrix, projectionSizes, qkvSpecs, vector } from "./tensor-specs.js";
import { checkModelTensors, type ModelTensors, type TensorInfo, type TensorSpec } from "./tensors.js";

/**
 * Phi-3 / Phi-3.5 / Phi-4-mini: llama's block with Q, K, V fused in `attn_qkv` and gate and up
 * fused in `ffn_up`, NeoX RoPE over `rope.dimension_count` dims (partial rotary in Phi-4-mini),
 * LongRoPE frequency factors (`rope_factors_short` / `_long`: the long ones when the context exceeds
 * the original one) and, when the file gives one, a sliding window on every layer.
 */
export const ARCH = "phi3";

/** Defaults of keys a phi3 file may omit: RMSNorm eps 1e-5, RoPE base 10000; LongRoPE among its scalings. */
export const DEFAULTS: ArchDefaults = {
  rmsEps: 1e-5,
  ropeFreqBase: 10000,
  scalings: ["none", "linear", "yarn", "longrope"],
};

/** Phi-3's own hyperparameters. */
export interface Phi3Hparams extends Hparams {
  /** `attention.sliding_window`, 0 when absent, 0, or not shorter than the training context. */
  readonly slidingWindow: number;
}

/** The LongRoPE factor tensors (F32 [nRot / 2] each). */
export const ROPE_FACTORS = { long: "rope_factors_long.weight", short: "rope_factors_short.weight" } as const;

/** A synthetic phi3 file rotates three quarters of each head, as Phi-4-mini does. */
export const SYNTH_KEYS = (headDim: number): readonly SynthKey[] => [
  ["rope.dimension_count", "u32", (headDim * 3) / 4],
];

export function loadHparams(meta: GgufMetadata): Phi3Hparams {
  const hp = readHparams(meta, ARCH, DEFAULTS);
  // 0 is what llama.cpp's converter writes for "no window" (Phi-4-mini).
  const window = new ArchKeys(meta, ARCH).optCountOrZero("attention.sliding_window") ?? 0;
  return { ...hp, slidingWindow: window < hp.nCtxTrain ? window : 0 };
}

/** The tensors of a phi3 file: fused or separate Q/K/V, fused gate-up, LongRoPE factors optional. */
export function* tensorSpecs(hp: Hparams, fusedQkv = true): Generator<TensorSpec> {
  const { nO } = projectionSizes(hp);
  yield* headSpecs(hp);
  yield { ...vector(ROPE_FACTORS.long, hp.nRot / 2), optional: true };
  yield { ...vector(ROPE_FACTORS.short, hp.nRot / 2), optional: true };
  for (let il = 0; il < hp.nLayer; il++) {
    const p = `blk.${il}.`;
    yield vector(`${p}attn_norm.weight`, hp.nEmbd);
    yield* qkvSpecs(hp, il, fusedQkv);
    yield matrix(`${p}attn_output.weight`, nO, hp.nEmbd);
    yield vector(`${p}ffn_norm.weight`, hp.nEmbd);
    yield matrix(`${p}ffn_up.weight`, hp.nEmbd, 2 * hp.nFf);
    yield matrix(`${p}ffn_down.weight`, hp.nFf, hp.nEmbd);
  }
}

export function loadTensors(hp: Phi3Hparams, infos: Iterable<TensorInfo>): ModelTensors {
  const table = [...infos];
  return checkModelTensors(ARCH, hp.nLayer, table, tensorSpecs(hp, hasFusedQkv(table)));
}

export function kvLayers(hp: Phi3Hparams): KvLayer[] {
  return kvLayersOf(hp, () => (hp.slidingWindow > 0 ? "swa" : "full"));
}

export function slidingWindow(hp: Phi3Hparams): number {
  return hp.slidingWindow;
}

/** NeoX RoPE with the long LongRoPE factors when the context exceeds the original one, else the short ones. */
export function kRope(hp: Phi3Hparams, _il: number, o: { tensors?: ModelTensors; nCtx: number }): LayerRope {
  const params = ropeParams(hp, "neox");
  const which = o.nCtx > hp.ropeScaling.originalContextLength ? ROPE_FACTORS.long : ROPE_FACTORS.short;
  return o.tensors?.byName.has(which) ? { params, factors: { weight: which } } : { params };
}

/** Embeddings, nLayer pre-norm blocks of attention (fused QKV) and SwiGLU (fused gate-up), final norm, logits. */
export function buildGraph(hp: Phi3Hparams, o: BuildOptions): BuiltGraph {
  const g = new ModelGraph(o.tensors, o);
  const { b } = g;
  const group = hp.slidingWindow > 0 ? "swa" : "full";
  const inp = declareInputs(b, o, [group]);
  const rope = kRope(hp, 0, { ...o, nCtx: o.contextSize ?? o.nCtx ?? o.nKv });
  const { nO } = projectionSizes(hp);
  const attention = attentionSettings(g, hp, o, rope, inp.kv[group]!);
  let cur = b.name(b.getRows(tokenEmbeddings(g, hp), inp.tokens), "inp_embd");
  for (let il = 0; il < hp.nLayer; il++) {
    const p = `blk.${il}.`;
    const w = (name: string) => g.weight(`${p}${name}`, [hp.nEmbd]);
    const weights = { ...qkvWeights(g, hp, il), wo: g.weight(`${p}attn_output.weight`, [nO, hp.nEmbd]) };
    const attnIn = rmsNorm(b, cur, w("attn_norm.weight"), hp.rmsEps, "attn_norm", il);
    const attn = buildAttention(b, attnIn, inp.positions, weights, attention, il);
    const ffnInp = b.name(b.add(attn, cur), "ffn_inp", il);
    const ffnIn = rmsNorm(b, ffnInp, w("ffn_norm.weight"), hp.rmsEps, "ffn_norm", il);
    const ffn = buildFfn(b, ffnIn, fusedGateUpWeights(g, hp, il), "silu", il);
    cur = b.name(b.add(ffn, ffnInp), "l_out", il);
  }
  return g.finish(outputLogits(g, hp, cur, inp.outIds));
}
