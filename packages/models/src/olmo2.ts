import type { GgufMetadata } from "@minfer/gguf";
import type { BuildOptions, BuiltGraph, LayerRope } from "./arch.js";
import { buildAttention } from "./attention.js";
import { buildFfn } from "./ffn.js";
import { declareInputs } from "./graph-inputs.js";
import { type ArchDefaults, type Hparams, readHparams } from "./hparams.js";
import { fullAttentionLayers, noSlidingWindow } from "./kv-layers.js";
import {
  attentionSettings,
  attentionWeights,
  ffnWeights,
  outputLogits,
  tokenEmbeddings,
} from "./layer-weights.js";
import { ModelGraph } from "./model-graph.js";
import { rmsNorm } from "./norm.js";
import { uniformRope } from "./rope.js";
import { attentionSpecs, ffnSpecs, headSpecs, projectionSizes, vector } from "./tensor-specs.js";
import { checkModelTensors, type ModelTensors, type TensorInfo, type TensorSpec } from "./tensors.js";

/**
 * OLMo 2: no norm before attention or the feed-forward, RMSNorms after them instead (before the
 * residual add); RMSNorms of Q and K over the whole projection (not per head) before NeoX RoPE.
 */
export const ARCH = "olmo2";

/** Defaults of keys an olmo2 file may omit: RMSNorm eps 1e-6, RoPE base 500000. */
export const DEFAULTS: ArchDefaults = { rmsEps: 1e-6, ropeFreqBase: 500000 };

export function loadHparams(meta: GgufMetadata): Hparams {
  return readHparams(meta, ARCH, DEFAULTS);
}

/** The tensors of an olmo2 file (`output.weight` absent when tied). */
export function* tensorSpecs(hp: Hparams): Generator<TensorSpec> {
  const { nQ, nK } = projectionSizes(hp);
  yield* headSpecs(hp);
  for (let il = 0; il < hp.nLayer; il++) {
    const p = `blk.${il}.`;
    yield* attentionSpecs(hp, il);
    yield vector(`${p}attn_q_norm.weight`, nQ);
    yield vector(`${p}attn_k_norm.weight`, nK);
    yield vector(`${p}post_attention_norm.weight`, hp.nEmbd);
    yield* ffnSpecs(hp, il);
    yield vector(`${p}post_ffw_norm.weight`, hp.nEmbd);
  }
}

export function loadTensors(hp: Hparams, infos: Iterable<TensorInfo>): ModelTensors {
  return checkModelTensors(ARCH, hp.nLayer, infos, tensorSpecs(hp), (il) => `blk.${il}.attn_q.weight`);
}

export const kvLayers = fullAttentionLayers;
export const slidingWindow = noSlidingWindow;

export function kRope(hp: Hparams, _il: number, o: { tensors?: ModelTensors }): LayerRope {
  return uniformRope(hp, "neox", o.tensors);
}

/** Per layer: attention (Q/K normed over the projection) → norm → residual, SwiGLU → norm → residual. */
export function buildGraph(hp: Hparams, o: BuildOptions): BuiltGraph {
  const g = new ModelGraph(o.tensors, o);
  const { b } = g;
  const inp = declareInputs(b, o, ["full"]);
  const rope = kRope(hp, 0, o);
  const attention = attentionSettings(g, hp, o, rope, inp.kv.full!);
  let cur = b.name(b.getRows(tokenEmbeddings(g, hp), inp.tokens), "inp_embd");
  for (let il = 0; il < hp.nLayer; il++) {
    const w = (name: string) => g.weight(`blk.${il}.${name}`, [hp.nEmbd]);
    const weights = attentionWeights(g, hp, il, { qkNorm: "projection" });
    const attn = buildAttention(b, cur, inp.positions, weights, attention, il);
    const attnOut = rmsNorm(b, attn, w("post_attention_norm.weight"), hp.rmsEps, "attn_post_norm", il);
    const ffnInp = b.name(b.add(attnOut, cur), "ffn_inp", il);
    const ffn = buildFfn(b, ffnInp, ffnWeights(g, hp, il), "silu", il);
    const ffnOut = rmsNorm(b, ffn, w("post_ffw_norm.weight"), hp.rmsEps, "ffn_post_norm", il);
    cur = b.name(b.add(ffnOut, ffnInp), "l_out", il);
  }
  return g.finish(outputLogits(g, hp, cur, inp.outIds));
}
