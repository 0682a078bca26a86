import type { GgufMetadata } from "@minfer/gguf";
import {
  type ArchFeatures,
  type BuildOptions,
  type BuiltGraph,
  buildDecoder,
  decoderTensorSpecs,
} from "./builders.js";
import { type ArchDefaults, type Hparams, readHparams } from "./hparams.js";
import { checkTensors, type ModelTensors, type TensorInfo } from "./tensors.js";

/** Llama (1, 2, 3): RMSNorm eps default 1e-5, RoPE base 10000, normal (adjacent-pair) RoPE as llama.cpp's converter permutes Q/K, optional llama3 scaling via `rope_freqs`. */
export const ARCH = "llama";

/** Defaults of keys a llama file may omit. */
export const DEFAULTS: ArchDefaults = { rmsEps: 1e-5, ropeFreqBase: 10000 };

/** What this architecture's decoder uses (RoPE layout, biases, Q/K norms). */
export const FEATURES: ArchFeatures = { ropeMode: "normal", qkvBias: false, qkNorm: false };

/** Hyperparameters from `llama.*` keys; a missing required key is MISSING_KEY naming it. */
export function loadHparams(meta: GgufMetadata): Hparams {
  return readHparams(meta, ARCH, DEFAULTS);
}

/** Checks the file's tensors (presence, shape, dtype class); `output.weight` may be absent (tied). */
export function loadTensors(hp: Hparams, infos: Iterable<TensorInfo>): ModelTensors {
  return checkTensors(infos, decoderTensorSpecs(hp, FEATURES));
}

/** The graph of one micro-batch: logits F32 [nVocab, nOutputs]. */
export function buildGraph(hp: Hparams, options: BuildOptions): BuiltGraph {
  return buildDecoder(hp, FEATURES, options);
}
