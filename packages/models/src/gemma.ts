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

/**
 * Gemma (1): llama's block with GeGLU (GELU, tanh approximation), embeddings scaled by √nEmbd,
 * NeoX RoPE and tied output. The file's RMSNorm weights already hold Gemma's (1 + w).
 */
export const ARCH = "gemma";

/** Defaults of keys a gemma file may omit: RMSNorm eps 1e-6, RoPE base 10000. */
export const DEFAULTS: ArchDefaults = { rmsEps: 1e-6, ropeFreqBase: 10000 };

export function loadHparams(meta: GgufMetadata): Hparams {
  return readHparams(meta, ARCH, DEFAULTS);
}

/** The tensors of a gemma file: no `output.weight`, the output projection is always the token embeddings (as llama.cpp reads it). */
export function* tensorSpecs(hp: Hparams): Generator<TensorSpec> {
  yield* headSpecs(hp, { tied: true });
  for (let il = 0; il < hp.nLayer; il++) {
    yield vector(`blk.${il}.attn_norm.weight`, hp.nEmbd);
    yield* attentionSpecs(hp, il);
    yield vector(`blk.${il}.ffn_norm.weight`, hp.nEmbd);
    yield* ffnSpecs(hp, il);
  }
}

export function loadTensors(hp: Hparams, infos: Iterable<TensorInfo>): ModelTensors {
  return { ...checkModelTensors(ARCH, hp.nLayer, infos, tensorSpecs(hp)), tiedOutput: true };
}

export const kvLayers = fullAttentionLayers;
export const slidingWindow = noSlidingWindow;

export function kRope(hp: Hparams, _il: number, o: { tensors?: ModelTensors }): LayerRope {
  return uniformRope(hp, "neox", o.tensors);
}

/** Scaled embeddings, nLayer pre-norm blocks of attention and GeGLU with residuals, final norm, logits of `out_ids`. */
export function buildGraph(hp: Hparams, o: BuildOptions): BuiltGraph {
  const g = new ModelGraph(o.tensors, o);
  const { b } = g;
  const inp = declareInputs(b, o, ["full"]);
  const rope = kRope(hp, 0, o);
  const attention = attentionSettings(g, hp, o, rope, inp.kv.full!);
  const embd = b.name(b.getRows(tokenEmbeddings(g, hp), inp.tokens), "inp_embd");
  let cur = b.name(b.scale(embd, Math.sqrt(hp.nEmbd)), "inp_scaled");
  for (let il = 0; il < hp.nLayer; il++) {
    const w = (name: string) => g.weight(`blk.${il}.${name}`, [hp.nEmbd]);
    const attnIn = rmsNorm(b, cur, w("attn_norm.weight"), hp.rmsEps, "attn_norm", il);
    const attn = buildAttention(b, attnIn, inp.positions, attentionWeights(g, hp, il), attention, il);
    const ffnInp = b.name(b.add(attn, cur), "sa_out", il);
    const ffnIn = rmsNorm(b, ffnInp, w("ffn_norm.weight"), hp.rmsEps, "ffn_norm", il);
    const ffn = buildFfn(b, ffnIn, ffnWeights(g, hp, il), "gelu", il);
    cur = b.name(b.add(ffn, ffnInp), "l_out", il);
  }
  return g.finish(outputLogits(g, hp, cur, inp.outIds));
}
