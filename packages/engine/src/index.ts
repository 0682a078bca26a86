/**
 * Model, Context, decode(batch) and text generation over the scheduler, KV cache, tokenizer and sampler.
 * @module @minfer/engine
 */

export type { Pooling } from "@minfer/models";
export { POOLINGS } from "@minfer/models";
/** The index of the largest logit, the lowest on ties (re-exported from `@minfer/sampler`). */
export { argmax } from "@minfer/sampler";
export type { Batch } from "./batch.js";
export type {
  ActivationSink,
  ContextOptions,
  ContextStats,
  DecodeTiming,
  GraphParams,
  KvCacheStats,
} from "./context.js";
export { Context, KV_BUCKET } from "./context.js";
export { contextSize, DEFAULT_N_CTX, DEFAULT_N_UBATCH, kvBytesPerLayer } from "./context-size.js";
export type { Embedding, EmbedInput, EmbedOptions } from "./embed.js";
export { embed, normalizeEmbedding } from "./embed.js";
export type { EngineErrorCode } from "./errors.js";
export { EngineError } from "./errors.js";
export type {
  FinishReason,
  GeneratedPiece,
  GenerateOptions,
  GenerationTimings,
  TokenSampler,
} from "./generate.js";
export { Generation, generate, greedy } from "./generate.js";
export type { ImatrixEntry, ImatrixOptions, ImatrixResult } from "./imatrix.js";
export { collectImatrix, ImatrixAccumulator } from "./imatrix.js";
export { Logits } from "./logits.js";
export type { ModelLoadOptions, WeightKept } from "./model.js";
export { Model } from "./model.js";
export type { LayerSizes, OffloadPlan, OffloadPlanOptions } from "./offload-plan.js";
export { DEVICE_OVERHEAD_BYTES, fitLayers, layerSizes, planOffload } from "./offload-plan.js";
export type { Offload } from "./placement.js";
export { Placement } from "./placement.js";
export { rerank, rerankInput } from "./rerank.js";
export {
  readSequenceFile,
  SEQUENCE_FILE_MAGIC,
  SEQUENCE_FILE_VERSION,
  writeSequenceFile,
} from "./sequence-file.js";
export type { BatchedModelDrafterOptions, DraftRequest } from "./speculative/batched-model-drafter.js";
export { BatchedModelDrafter } from "./speculative/batched-model-drafter.js";
export { DraftDepth } from "./speculative/depth.js";
export type { Drafter, SpeculativeStats } from "./speculative/drafter.js";
export type { ModelDrafterOptions } from "./speculative/model-drafter.js";
export { checkDraftVocabulary, DRAFT_VOCAB_SLACK, ModelDrafter } from "./speculative/model-drafter.js";
export type { NgramDrafterOptions } from "./speculative/ngram-drafter.js";
export { NgramDrafter } from "./speculative/ngram-drafter.js";
export type { SpeculativeOptions } from "./speculative/speculator.js";
export { StopMatcher } from "./stop-matcher.js";
