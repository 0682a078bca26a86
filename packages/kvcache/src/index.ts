/**
 * @module @minfer/kvcache
 * The KV cache's bookkeeping: cells with positions and owning sequences, slots for micro-batches,
 * attention masks and spans, sequence operations, defragmentation plans, sequence state, KV dtypes.
 * No tensors: the engine turns these outputs into graph inputs.
 */
export type { KvCacheErrorCode, KvCacheErrorDetails } from "./errors.js";
export { KvCacheError } from "./errors.js";
export type { KvBatch, KvToken } from "./kv-batch.js";
export type { FindSlotResult, KvCacheOptions } from "./kv-cache.js";
export { KvCache } from "./kv-cache.js";
export { KvCells, MAX_POS, MAX_SEQ } from "./kv-cells.js";
export type { KvMove } from "./kv-defrag.js";
export { applyDefrag, defragPlan, fragmentation } from "./kv-defrag.js";
export type { KvDtype } from "./kv-dtype.js";
export { DEFAULT_KV_DTYPE, isKvDtype, kvDtypeId, kvRowBytes, parseKvDtype } from "./kv-dtype.js";
export type { MaskOptions, SpanOptions, VisibilityOptions } from "./kv-mask.js";
export { attentionMask, attentionSpans, F16_NEG_INF } from "./kv-mask.js";
export type { KvSequenceState } from "./kv-state.js";
export { crc32, readSequenceState, STATE_MAGIC, STATE_VERSION, writeSequenceState } from "./kv-state.js";
