/**
 * Model architectures — one file each (llama, qwen2, qwen3, gemma, gemma2, gemma3, phi3, glm4, granite, olmo2; the encoders bert and nomic-bert): hyperparameters, tensors, the graph
 * builder and the KV layout, over shared builders (norms, attention, feed-forward, RoPE).
 * @module @minfer/models
 */

export type {
  ArchModule,
  BuildOptions,
  BuiltGraph,
  GraphOutput,
  GraphShape,
  KvCacheShape,
  KvGroup,
  KvLayer,
  LayerRope,
} from "./arch.js";
export type { AttentionOptions, AttentionWeights, HeadShape } from "./attention.js";
export { buildAttention } from "./attention.js";
export * as bert from "./bert.js";
export type { EncoderHparams } from "./encoder.js";
export { TOKEN_TYPES_INPUT } from "./encoder.js";
export type { ModelErrorCode, ModelErrorDetails } from "./errors.js";
export { ModelError } from "./errors.js";
export type { FfnActivation, FfnWeights } from "./ffn.js";
export { buildFfn } from "./ffn.js";
export * as gemma from "./gemma.js";
export * as gemma2 from "./gemma2.js";
export * as gemma3 from "./gemma3.js";
export * as glm4 from "./glm4.js";
export * as granite from "./granite.js";
export type { DecoderInputs, KvInputs } from "./graph-inputs.js";
export {
  CANDIDATE_LOGITS_OUTPUT,
  CANDIDATES_OUTPUT,
  declareInputs,
  kvInputNames,
  STEP_INPUTS,
} from "./graph-inputs.js";
export type { ArchDefaults, Hparams, RopeScaling } from "./hparams.js";
export { HPARAM_LIMITS, readHparams } from "./hparams.js";
export type { KvGraph, KvLayout } from "./kv-graphs.js";
export { buildKvMove, buildKvShift, shiftRopeParams } from "./kv-graphs.js";
export * as llama from "./llama.js";
export { ModelGraph } from "./model-graph.js";
export * as nomicBert from "./nomic-bert.js";
export { layerNorm, rmsNorm } from "./norm.js";
export * as olmo2 from "./olmo2.js";
export * as phi3 from "./phi3.js";
export type { Pooling } from "./pooling.js";
export { POOLING_BY_ID, POOLINGS, readPooling } from "./pooling.js";
export * as qwen2 from "./qwen2.js";
export * as qwen3 from "./qwen3.js";
export { architecture, SUPPORTED_ARCHS } from "./registry.js";
export type { Llama3Scaling } from "./rope.js";
export {
  llama3FreqFactors,
  llama3RopeFreqs,
  ROPE_FREQS,
  ropeParams,
  uniformRope,
  usesRopeFreqs,
} from "./rope.js";
export type { SynthKey, SynthShape } from "./synth.js";
export { MODEL_SYNTH_PRESETS, synthLayout, synthShape } from "./synth.js";
export type { ModelTensor, ModelTensors, TensorInfo, TensorSpec } from "./tensors.js";
export { blocksInFile, checkBlockCount, checkModelTensors, checkTensor, checkTensors } from "./tensors.js";
export type { WeightTap } from "./weight-taps.js";
export { weightTaps } from "./weight-taps.js";
