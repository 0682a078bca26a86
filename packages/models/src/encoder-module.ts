import type { GgufMetadata } from "@minfer/gguf";
import type { BuildOptions, BuiltGraph, LayerRope } from "./arch.js";
import {
  buildEncoderGraph,
  type EncoderHparams,
  type EncoderKind,
  encoderRope,
  encoderSpecs,
  loadEncoderTensors,
  readEncoderHparams,
} from "./encoder.js";
import { fullAttentionLayers, noSlidingWindow } from "./kv-layers.js";
import type { SynthKey } from "./synth.js";
import type { ModelTensors, TensorInfo, TensorSpec } from "./tensors.js";

/** A synthetic encoder file's own keys: LayerNorm eps (llama.cpp requires it) and mean pooling. */
const SYNTH_KEYS: readonly SynthKey[] = [
  ["attention.layer_norm_epsilon", "f32", 1e-12],
  ["pooling_type", "u32", 1],
];

/**
 * The architecture module (registry.ts's `ArchModule` members) of an encoder of the BERT family:
 * every member is encoder.ts's shared code with this `kind`; `fusedQkv` says whether the file holds
 * one fused Q/K/V matrix (nomic-bert) or three (bert).
 */
export function encoderModule(kind: EncoderKind, fusedQkv: boolean) {
  return {
    ARCH: kind.arch,
    ENCODER: true,
    SYNTH_KEYS,
    loadHparams: (meta: GgufMetadata): EncoderHparams => readEncoderHparams(meta, kind.arch),
    tensorSpecs: (hp: EncoderHparams): Iterable<TensorSpec> => encoderSpecs(kind, hp, fusedQkv),
    loadTensors: (hp: EncoderHparams, infos: Iterable<TensorInfo>): ModelTensors =>
      loadEncoderTensors(kind, hp, infos),
    kvLayers: fullAttentionLayers,
    slidingWindow: noSlidingWindow,
    kRope: (hp: EncoderHparams): LayerRope => encoderRope(kind, hp),
    buildGraph: (hp: EncoderHparams, o: BuildOptions): BuiltGraph => buildEncoderGraph(kind, hp, o),
  } as const;
}
