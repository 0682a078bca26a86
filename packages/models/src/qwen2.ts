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
import { attentionSpecs, ffnSpecs, headSpecs, vector } from "./tensor-specs.js";
import { checkModelTensors, type ModelTensors, type TensorInfo, type TensorSpec } from "./tensors.js";

/** Qwen2 / Qwen2.5: llama's block with Q/K/V biases and NeoX (half-split) RoPE; eps default 1e-6, RoPE base 1e6. */
export const ARCH = "qwen2";

/** Defaults of keys a qwen2 file may omit: RMSNorm eps 1e-6, RoPE base 1e6. */
export const DEFAULTS: ArchDefaults = { rmsEps: 1e-6, ropeFreqBase: 1000000 };

export function loadHparams(meta: GgufMetadata): Hparams {
  return readHparams(meta, ARCH, DEFAULTS);
}

/** The tensors of a qwen2 file (`output.weight` absent when tied). */
export function* tensorSpecs(hp: Hparams): Generator<TensorSpec> {
  yield* headSpecs(hp);
  for (let il = 0; il < hp.nLayer; il++) {
    yield vector(`blk.${il}.attn_norm.weight`, hp.nEmbd);
    yield* attentionSpecs(hp, il);
    yield vector(`blk.${il}.attn_q.bias`, hp.nHead * hp.headDimK);
    yield vector(`blk.${il}.attn_k.bias`, hp.nHeadKv * hp.headDimK);
    yield vector(`blk.${il}.attn_v.bias`, hp.nHeadKv * hp.headDimV);
    yield vector(`blk.${il}.ffn_norm.weight`, hp.nEmbd);
    yield* ffnSpecs(hp, il);
  }
}

export function loadTensors(hp: Hparams, infos: Iterable<TensorInfo>): ModelTensors {
  return checkModelTensors(ARCH, hp.nLayer, infos, tensorSpecs(hp));
}

export const kvLayers = fullAttentionLayers;
export const slidingWindow = noSlidingWindow;

export function kRope(hp: Hparams, _il: number, o: { tensors?: ModelTensors }): LayerRope {
  return uniformRope(hp, "neox", o.tensors);
}

/** llama's graph with the Q/K/V biases added after the projections and NeoX RoPE. */
export function buildGraph(hp: Hparams, o: BuildOptions): BuiltGraph {
  const g = new ModelGraph(o.tensors, o);
  const { b } = g;
  const inp = declareInputs(b, o, ["full"]);
  const rope = kRope(hp, 0, o);
  const attention = attentionSettings(g, hp, o, rope, inp.kv.full!);
  let cur = b.name(b.getRows(tokenEmbeddings(g, hp), inp.tokens), "inp_embd");
  for (let il = 0; il < hp.nLayer; il++) {
    const w = (name: string) => g.weight(`blk.${il}.${name}`, [hp.nEmbd]);
    const attnIn = rmsNorm(b, cur, w("attn_norm.weight"), hp.rmsEps, "attn_norm", il);
    const attn = buildAttention(
      b,
      attnIn,
      inp.positions,
      attentionWeights(g, hp, il, { qkvBias: true }),
      attention,
      il,
    );
    const ffnInp = b.name(b.add(attn, cur), "ffn_inp", il);
    const ffnIn = rmsNorm(b, ffnInp, w("ffn_norm.weight"), hp.rmsEps, "ffn_norm", il);
    const ffn = buildFfn(b, ffnIn, ffnWeights(g, hp, il), "silu", il);
    cur = b.name(b.add(ffn, ffnInp), "l_out", il);
  }
  return g.finish(outputLogits(g, hp, cur, inp.outIds));
}
