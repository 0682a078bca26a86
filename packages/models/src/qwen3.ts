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
import { attentionSpecs, ffnSpecs, headSpecs, matrix, vector } from "./tensor-specs.js";
import { checkModelTensors, type ModelTensors, type TensorInfo, type TensorSpec } from "./tensors.js";

/** Qwen3 (dense): per-head RMSNorm of Q and K before RoPE, head size from `attention.key_length` (not nEmbd / nHead), NeoX RoPE, eps default 1e-6, RoPE base 1e6. */
export const ARCH = "qwen3";

/** Defaults of keys a qwen3 file may omit: RMSNorm eps 1e-6, RoPE base 1e6. */
export const DEFAULTS: ArchDefaults = { rmsEps: 1e-6, ropeFreqBase: 1000000 };

export function loadHparams(meta: GgufMetadata): Hparams {
  return readHparams(meta, ARCH, DEFAULTS);
}

/** The tensors of a qwen3 file (`output.weight` absent when tied). */
export function* tensorSpecs(hp: Hparams): Generator<TensorSpec> {
  yield* headSpecs(hp);
  for (let il = 0; il < hp.nLayer; il++) {
    yield vector(`blk.${il}.attn_norm.weight`, hp.nEmbd);
    yield* attentionSpecs(hp, il);
    yield vector(`blk.${il}.attn_q_norm.weight`, hp.headDimK);
    yield vector(`blk.${il}.attn_k_norm.weight`, hp.headDimK);
    yield vector(`blk.${il}.ffn_norm.weight`, hp.nEmbd);
    yield* ffnSpecs(hp, il);
  }
  // A reranker's classifier (Qwen3-Reranker as llama.cpp converts it: its answer tokens' output rows).
  yield { ...matrix("cls.output.weight", hp.nEmbd, hp.nClsOut ?? 1), optional: true };
}

export function loadTensors(hp: Hparams, infos: Iterable<TensorInfo>): ModelTensors {
  return checkModelTensors(ARCH, hp.nLayer, infos, tensorSpecs(hp));
}

export const kvLayers = fullAttentionLayers;
export const slidingWindow = noSlidingWindow;

export function kRope(hp: Hparams, _il: number, o: { tensors?: ModelTensors }): LayerRope {
  return uniformRope(hp, "neox", o.tensors);
}

/** llama's graph with Q and K RMS-normed per head before NeoX RoPE. */
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
      attentionWeights(g, hp, il, { qkNorm: "head" }),
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
