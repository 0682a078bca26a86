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

/** nomic-bert (nomic-embed-text): rotary positions (NeoX), fused Q/K/V, SwiGLU feed-forward, no biases. */
export const ARCH = "nomic-bert";

export const ENCODER = true;

/** A synthetic file's own keys: LayerNorm eps (llama.cpp requires it) and mean pooling. */
export const SYNTH_KEYS: readonly SynthKey[] = [
  ["attention.layer_norm_epsilon", "f32", 1e-12],
  ["pooling_type", "u32", 1],
];

const KIND: EncoderKind = { arch: ARCH, positions: "rotary", ffn: "swiglu" };

export function loadHparams(meta: GgufMetadata): EncoderHparams {
  return readEncoderHparams(meta, ARCH);
}

export function tensorSpecs(hp: EncoderHparams): Iterable<TensorSpec> {
  return encoderSpecs(KIND, hp, true);
}

export function loadTensors(hp: EncoderHparams, infos: Iterable<TensorInfo>): ModelTensors {
  return loadEncoderTensors(KIND, hp, infos);
}

export const kvLayers = fullAttentionLayers;
export const slidingWindow = noSlidingWindow;

export function kRope(hp: EncoderHparams): LayerRope {
  return encoderRope(KIND, hp);
}

export function buildGraph(hp: EncoderHparams, o: BuildOptions): BuiltGraph {
  return buildEncoderGraph(KIND, hp, o);
}
