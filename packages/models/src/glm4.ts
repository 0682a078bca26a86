import type { GgufMetadata } from "@minfer/gguf";
import type { BuildOptions, BuiltGraph, LayerRope } from "./arch.js";
import { buildAttention } from "./attention.js";
import { buildFfn } from "./ffn.js";
import { declareInputs } from "./graph-inputs.js";
import { type ArchDefaults, type Hparams, readHparams } from "./hparams.js";
import { fullAttentionLayers, noSlidingWindow } from "./kv-layers.js";
import {
  attentionSettings,
  fusedGateUpWeights,
  outputLogits,
  qkvWeights,
  tokenEmbeddings,
} from "./layer-weights.js";
import { ModelGraph } from "./model-graph.js";
import { rmsNorm } from "./norm.js";
import { uniformRope } from "./rope.js";
import type { SynthKey } from "./synth.js";
import { hasFusedQkv, headSpecs, matrix, projectionSizes, qkvSpecs, vector } from "./tensor-specs.js";
import { checkModelTensors, type ModelTensors, type TensorInfo, type TensorSpec } from "./tensors.js";

/**
 * GLM-4 (0414): RMSNorms before and after attention and the feed-forward, Q/K/V with biases
 * (separate or fused in `attn_qkv`), gate and up fused in `ffn_up`, RoPE on the first half of each
 * head (`rope.dimension_count`), adjacent pairs rotated (GLM's interleaved layout).
 */
export const ARCH = "glm4";

/** Defaults of keys a glm4 file may omit: RMSNorm eps 1e-5, RoPE base 10000. */
export const DEFAULTS: ArchDefaults = { rmsEps: 1e-5, ropeFreqBase: 10000 };

/** A synthetic glm4 file rotates half of each head, as GLM-4 does. */
export const SYNTH_KEYS = (headDim: number): readonly SynthKey[] => [
  ["rope.dimension_count", "u32", headDim / 2],
];

export function loadHparams(meta: GgufMetadata): Hparams {
  return readHparams(meta, ARCH, DEFAULTS);
}

/** The tensors of a glm4 file (`output.weight` absent when tied). */
export function* tensorSpecs(hp: Hparams, fusedQkv = false): Generator<TensorSpec> {
  const { nO } = projectionSizes(hp);
  yield* headSpecs(hp);
  for (let il = 0; il < hp.nLayer; il++) {
    const p = `blk.${il}.`;
    yield vector(`${p}attn_norm.weight`, hp.nEmbd);
    yield* qkvSpecs(hp, il, fusedQkv);
    yield matrix(`${p}attn_output.weight`, nO, hp.nEmbd);
    yield vector(`${p}post_attention_norm.weight`, hp.nEmbd);
    yield vector(`${p}ffn_norm.weight`, hp.nEmbd);
    yield matrix(`${p}ffn_up.weight`, hp.nEmbd, 2 * hp.nFf);
    yield matrix(`${p}ffn_down.weight`, hp.nFf, hp.nEmbd);
    yield vector(`${p}post_ffw_norm.weight`, hp.nEmbd);
  }
}

export function loadTensors(hp: Hparams, infos: Iterable<TensorInfo>): ModelTensors {
  const table = [...infos];
  return checkModelTensors(ARCH, hp.nLayer, table, tensorSpecs(hp, hasFusedQkv(table)));
}

export const kvLayers = fullAttentionLayers;
export const slidingWindow = noSlidingWindow;

export function kRope(hp: Hparams, _il: number, o: { tensors?: ModelTensors }): LayerRope {
  return uniformRope(hp, "normal", o.tensors);
}

/** Per layer: norm → attention → norm → residual, norm → SwiGLU (fused gate-up) → norm → residual. */
export function buildGraph(hp: Hparams, o: BuildOptions): BuiltGraph {
  const g = new ModelGraph(o.tensors, o);
  const { b } = g;
  const inp = declareInputs(b, o, ["full"]);
  const rope = kRope(hp, 0, o);
  const { nO } = projectionSizes(hp);
  const attention = attentionSettings(g, hp, o, rope, inp.kv.full!);
  let cur = b.name(b.getRows(tokenEmbeddings(g, hp), inp.tokens), "inp_embd");
  for (let il = 0; il < hp.nLayer; il++) {
    const p = `blk.${il}.`;
    const w = (name: string) => g.weight(`${p}${name}`, [hp.nEmbd]);
    const weights = { ...qkvWeights(g, hp, il), wo: g.weight(`${p}attn_output.weight`, [nO, hp.nEmbd]) };
    const attnIn = rmsNorm(b, cur, w("attn_norm.weight"), hp.rmsEps, "attn_norm", il);
    const attn = buildAttention(b, attnIn, inp.positions, weights, attention, il);
    const attnOut = rmsNorm(b, attn, w("post_attention_norm.weight"), hp.rmsEps, "post_attn_norm", il);
    const ffnInp = b.name(b.add(attnOut, cur), "ffn_inp", il);
    const ffnIn = rmsNorm(b, ffnInp, w("ffn_norm.weight"), hp.rmsEps, "ffn_norm", il);
    const ffn = buildFfn(b, ffnIn, fusedGateUpWeights(g, hp, il), "silu", il);
    const ffnOut = rmsNorm(b, ffn, w("post_ffw_norm.weight"), hp.rmsEps, "post_mlp_norm", il);
    cur = b.name(b.add(ffnOut, ffnInp), "l_out", il);
  }
  return g.finish(outputLogits(g, hp, cur, inp.outIds));
}
