/**
 * Model architectures (llama, qwen2, qwen3): hyperparameters, tensors and graph builders.
 * @module @minfer/models
 */

export type {
  ArchFeatures,
  AttentionLayer,
  BuildOptions,
  BuiltGraph,
  GraphInputs,
  GraphShape,
} from "./builders.js";
export {
  buildAttention,
  buildDecoder,
  buildFfn,
  buildNorm,
  decoderTensorSpecs,
  ROPE_FREQS,
  ropeFactors,
} from "./builders.js";
export type { ModelErrorCode, ModelErrorDetails } from "./errors.js";
export { ModelError } from "./errors.js";
export type { ArchDefaults, Hparams, RopeScaling } from "./hparams.js";
export { HPARAM_LIMITS, readHparams } from "./hparams.js";
export type { KvGraph, KvLayout } from "./kv-graphs.js";
export { buildKvMove, buildKvShift, shiftRopeParams } from "./kv-graphs.js";
export * as llama from "./llama.js";
export * as qwen2 from "./qwen2.js";
export * as qwen3 from "./qwen3.js";
export type { ArchModule } from "./registry.js";
export { architecture, SUPPORTED_ARCHS } from "./registry.js";
export type { Llama3Scaling } from "./rope.js";
export { llama3FreqFactors, llama3RopeFreqs, ropeParams, usesRopeFreqs } from "./rope.js";
export type { ModelTensor, ModelTensors, TensorInfo, TensorSpec } from "./tensors.js";
export { blocksInFile, checkBlockCount, checkTensor, checkTensors } from "./tensors.js";
