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
import { uniformRope } from "./rope.js";
import type { SynthKey } from "./synth.js";
import { attentionSpecs, ffnSpecs, headSpecs, vector } from "./tensor-specs.js";
import { checkModelTensors, type ModelTensors, type TensorInfo, type TensorSpec } from "./tensors.js";

/**
 * Gemma 2: Gemma's block with RMSNorms after attention and after the feed-forward too, attention
 * scores soft-capped (s → c·tanh(s/c)), the logits soft-capped, and a sliding window on every
 * other layer (0, 2, 4, …), the rest attending to the whole context.
 */
export const ARCH = "gemma2";

/** Defaults of keys a gemma2 file may omit: RMSNorm eps 1e-6, RoPE base 10000. */
export const DEFAULTS: ArchDefaults = { rmsEps: 1e-6, ropeFreqBase: 10000 };

/** Gemma 2's own hyperparameters. */
export interface Gemma2Hparams extends Hparams {
  /** `attention.sliding_window`. Default: 4096. */
  readonly slidingWindow: number;
  /** `attn_logit_softcapping`. Default: 50. */
  readonly attnSoftcap: number;
  /** `final_logit_softcapping`. Default: 30. */
  readonly finalSoftcap: number;
  /**
   * The query scale: 1/√(nEmbd / nHead) for the 27B shape (46 layers), else 1/√headDim — what
   * llama.cpp applies, from Gemma's reference configurations (the file has no key for it).
   */
  readonly attnScale: number;
}

export function loadHparams(meta: GgufMetadata): Gemma2Hparams {
  const hp = readHparams(meta, ARCH, DEFAULTS);
  const k = new ArchKeys(meta, ARCH);
  return {
    ...hp,
    slidingWindow: k.optCount("attention.sliding_window") ?? 4096,
    attnSoftcap: k.optPositive("attn_logit_softcapping") ?? 50,
    finalSoftcap: k.optPositive("final_logit_softcapping") ?? 30,
    attnScale: 1 / Math.sqrt(hp.nLayer === 46 ? hp.nEmbd / hp.nHead : hp.headDimK),
  };
}

/** A synthetic gemma2 file's own keys: a short window (so tests cross it), Gemma 2's soft-caps. */
export const SYNTH_KEYS: readonly SynthKey[] = [
  ["attention.sliding_window", "u32", 16],
  ["attn_logit_softcapping", "f32", 50],
  ["final_logit_softcapping", "f32", 30],
];

/** Whether layer `il` attends through the sliding window. */
export function isSliding(il: number): boolean {
  return il % 2 === 0;
}

/** The tensors of a gemma2 file: no `output.weight`, the output projection is always the token embeddings (as llama.cpp reads it). */
export function* tensorSpecs(hp: Hparams): Generator<TensorSpec> {
  yield* headSpecs(hp, { tied: true });
  for (let il = 0; il < hp.nLayer; il++) {
    const p = `blk.${il}.`;
    yield vector(`${p}attn_norm.weight`, hp.nEmbd);
    yield* attentionSpecs(hp, il);
    yield vector(`${p}post_attention_norm.weight`, hp.nEmbd);
    yield vector(`${p}ffn_norm.weight`, hp.nEmbd);
    yield* ffnSpecs(hp, il);
    yield vector(`${p}post_ffw_norm.weight`, hp.nEmbd);
  }
}

export function loadTensors(hp: Gemma2Hparams, infos: Iterable<TensorInfo>): ModelTensors {
  return { ...checkModelTensors(ARCH, hp.nLayer, infos, tensorSpecs(hp)), tiedOutput: true };
}

export function kvLayers(hp: Gemma2Hparams): KvLayer[] {
  return kvLayersOf(hp, (il) => (isSliding(il) ? "swa" : "full"));
}

export function slidingWindow(hp: Gemma2Hparams): number {
  return hp.slidingWindow;
}

export function kRope(hp: Gemma2Hparams, _il: number, o: { tensors?: ModelTensors }): LayerRope {
  return uniformRope(hp, "neox", o.tensors);
}

/**
 * Scaled embeddings; per layer: norm → attention (soft-capped, windowed on even layers) → norm →
 * residual, norm → GeGLU → norm → residual; final norm; logits of `out_ids`, soft-capped.
 */
export function buildGraph(hp: Gemma2Hparams, o: BuildOptions): BuiltGraph {
  const g = new ModelGraph(o.tensors, o);
  const { b } = g;
  const inp = declareInputs(
    b,
    o,
    kvLayers(hp).map((l) => l.group),
  );
  const rope = kRope(hp, 0, o);
  const embd = b.name(b.getRows(tokenEmbeddings(g, hp), inp.tokens), "inp_embd");
  let cur = b.name(b.scale(embd, Math.sqrt(hp.nEmbd)), "inp_scaled");
  for (let il = 0; il < hp.nLayer; il++) {
    const w = (name: string) => g.weight(`blk.${il}.${name}`, [hp.nEmbd]);
    const attention = attentionSettings(g, hp, o, rope, inp.kv[isSliding(il) ? "swa" : "full"]!, {
      scale: hp.attnScale,
      softcap: hp.attnSoftcap,
    });
    const attnIn = rmsNorm(b, cur, w("attn_norm.weight"), hp.rmsEps, "attn_norm", il);
    const attn = buildAttention(b, attnIn, inp.positions, attentionWeights(g, hp, il), attention, il);
    const attnOut = rmsNorm(b, attn, w("post_attention_norm.weight"), hp.rmsEps, "attn_post_norm", il);
    const saOut = b.name(b.add(attnOut, cur), "sa_out", il);
    const ffnIn = rmsNorm(b, saOut, w("ffn_norm.weight"), hp.rmsEps, "ffn_norm", il);
    const ffn = buildFfn(b, ffnIn, ffnWeights(g, hp, il), "gelu", il);
    const ffnOut = rmsNorm(b, ffn, w("post_ffw_norm.weight"), hp.rmsEps, "ffn_post_norm", il);
    cur = b.name(b.add(ffnOut, saOut), "l_out", il);
  }
  const logits = outputLogits(g, hp, cur, inp.outIds, "result_logits");
  if (g.output !== "logits") return g.finish(logits);
  const capped = b.tanh(b.scale(logits, 1 / hp.finalSoftcap), "result_tanh");
  return g.finish(b.name(b.scale(capped, hp.finalSoftcap), "result_output"));
}
