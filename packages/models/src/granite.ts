import type { GgufMetadata } from "@minfer/gguf";
import type { Tensor } from "@minfer/ir";
import type { BuildOptions, BuiltGraph, LayerRope } from "./arch.js";
import { ArchKeys } from "./arch-keys.js";
import { buildAttention } from "./attention.js";
import { ModelError } from "./errors.js";
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
import { ROPE_FREQS, uniformRope } from "./rope.js";
import type { SynthKey } from "./synth.js";
import { attentionSpecs, ffnSpecs, headSpecs, vector } from "./tensor-specs.js";
import { checkModelTensors, type ModelTensors, type TensorInfo, type TensorSpec } from "./tensors.js";

/**
 * Granite 3.x (dense): llama's block with four multipliers — the embeddings (`embedding_scale`),
 * q·k (`attention.scale`, instead of 1/√headDim), each block's attention and feed-forward output
 * before its residual add (`residual_scale`), and the logits (divided by `logit_scale`).
 */
export const ARCH = "granite";

/** Defaults of keys a granite file may omit: RMSNorm eps 1e-5, RoPE base 10000. */
export const DEFAULTS: ArchDefaults = { rmsEps: 1e-5, ropeFreqBase: 10000 };

/** Granite's own hyperparameters. */
export interface GraniteHparams extends Hparams {
  /** `embedding_scale`. Default: 1 (none). */
  readonly embeddingScale: number;
  /** `attention.scale`. Default: 1/√headDim. */
  readonly attentionScale: number;
  /** `residual_scale`. Default: 1 (none). */
  readonly residualScale: number;
  /** `logit_scale` (required): the logits are divided by it. */
  readonly logitScale: number;
}

/** A synthetic granite file's multipliers (Granite-3.1-2B's). */
export const SYNTH_KEYS: readonly SynthKey[] = [
  ["embedding_scale", "f32", 12],
  ["attention.scale", "f32", 0.015625],
  ["residual_scale", "f32", 0.22],
  ["logit_scale", "f32", 8],
];

export function loadHparams(meta: GgufMetadata): GraniteHparams {
  const hp = readHparams(meta, ARCH, DEFAULTS);
  const k = new ArchKeys(meta, ARCH);
  const finetuned = k.optBool("rope.scaling.finetuned");
  if (finetuned === false)
    throw new ModelError(
      "BAD_KEY",
      `${k.key("rope.scaling.finetuned")} is false (a Granite without RoPE); minfer runs Granite with RoPE only`,
      { key: k.key("rope.scaling.finetuned") },
    );
  return {
    ...hp,
    embeddingScale: k.optPositive("embedding_scale") ?? 1,
    attentionScale: k.optPositive("attention.scale") ?? 1 / Math.sqrt(hp.headDimK),
    residualScale: k.optPositive("residual_scale") ?? 1,
    logitScale: k.positive("logit_scale"),
  };
}

/** The tensors of a granite file (biases of the output projection and feed-forward optional). */
export function* tensorSpecs(hp: Hparams): Generator<TensorSpec> {
  yield* headSpecs(hp);
  yield { ...vector(ROPE_FREQS, hp.nRot / 2), optional: true };
  for (let il = 0; il < hp.nLayer; il++) {
    const p = `blk.${il}.`;
    yield vector(`${p}attn_norm.weight`, hp.nEmbd);
    yield* attentionSpecs(hp, il);
    yield { ...vector(`${p}attn_output.bias`, hp.nEmbd), optional: true };
    yield vector(`${p}ffn_norm.weight`, hp.nEmbd);
    yield* ffnSpecs(hp, il);
    yield { ...vector(`${p}ffn_gate.bias`, hp.nFf), optional: true };
    yield { ...vector(`${p}ffn_up.bias`, hp.nFf), optional: true };
    yield { ...vector(`${p}ffn_down.bias`, hp.nEmbd), optional: true };
  }
}

export function loadTensors(hp: GraniteHparams, infos: Iterable<TensorInfo>): ModelTensors {
  return checkModelTensors(ARCH, hp.nLayer, infos, tensorSpecs(hp));
}

export const kvLayers = fullAttentionLayers;
export const slidingWindow = noSlidingWindow;

export function kRope(hp: GraniteHparams, _il: number, o: { tensors?: ModelTensors }): LayerRope {
  return uniformRope(hp, "normal", o.tensors);
}

/** llama's graph with the embedding, attention, residual and logit multipliers. */
export function buildGraph(hp: GraniteHparams, o: BuildOptions): BuiltGraph {
  const g = new ModelGraph(o.tensors, o);
  const { b } = g;
  const inp = declareInputs(b, o, ["full"]);
  const rope = kRope(hp, 0, o);
  const attention = attentionSettings(g, hp, o, rope, inp.kv.full!, { scale: hp.attentionScale });
  const scaled = (t: Tensor, by: number, name: string, il?: number) =>
    by === 1 ? t : b.name(b.scale(t, by), name, il);
  const opt = (name: string, n: number) => (g.has(name) ? g.weight(name, [n]) : undefined);
  const embd = b.name(b.getRows(tokenEmbeddings(g, hp), inp.tokens), "inp_embd");
  let cur = scaled(embd, hp.embeddingScale, "inp_scaled");
  for (let il = 0; il < hp.nLayer; il++) {
    const p = `blk.${il}.`;
    const w = (name: string) => g.weight(`${p}${name}`, [hp.nEmbd]);
    const bo = opt(`${p}attn_output.bias`, hp.nEmbd);
    const weights = { ...attentionWeights(g, hp, il), ...(bo ? { bo } : {}) };
    const attnIn = rmsNorm(b, cur, w("attn_norm.weight"), hp.rmsEps, "attn_norm", il);
    const attn = buildAttention(b, attnIn, inp.positions, weights, attention, il);
    const ffnInp = b.name(b.add(scaled(attn, hp.residualScale, "attn_scaled", il), cur), "ffn_inp", il);
    const ffnIn = rmsNorm(b, ffnInp, w("ffn_norm.weight"), hp.rmsEps, "ffn_norm", il);
    const [gateBias, upBias, downBias] = [
      opt(`${p}ffn_gate.bias`, hp.nFf),
      opt(`${p}ffn_up.bias`, hp.nFf),
      opt(`${p}ffn_down.bias`, hp.nEmbd),
    ];
    const ffnW = {
      ...ffnWeights(g, hp, il),
      ...(gateBias ? { gateBias } : {}),
      ...(upBias ? { upBias } : {}),
      ...(downBias ? { downBias } : {}),
    };
    const ffn = buildFfn(b, ffnIn, ffnW, "silu", il);
    cur = b.name(b.add(scaled(ffn, hp.residualScale, "ffn_scaled", il), ffnInp), "l_out", il);
  }
  const logits = outputLogits(g, hp, cur, inp.outIds, "result_logits");
  if (g.output !== "logits") return g.finish(logits);
  return g.finish(b.name(b.scale(logits, 1 / hp.logitScale), "result_output"));
}
