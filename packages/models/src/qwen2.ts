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

/** Qwen2 (and Qwen2.5): Q/K/V biases, NeoX RoPE, RMSNorm eps default 1e-6, RoPE base default 1e6. */
export const ARCH = "qwen2";

/** Defaults of keys a qwen2 file may omit. */
export const DEFAULTS: ArchDefaults = { rmsEps: 1e-6, ropeFreqBase: 1000000 };

/** What this architecture's decoder uses (RoPE layout, biases, Q/K norms). */
export const FEATURES: ArchFeatures = { ropeMode: "neox", qkvBias: true, qkNorm: false };

/** Hyperparameters from `qwen2.*` keys; a missing required key is MISSING_KEY naming it. */
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
