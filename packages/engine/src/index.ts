/**
 * Model, Context, decode and greedy generation over the scheduler, KV cache and tokenizer.
 * @module @minfer/engine
 */

export type { ContextOptions, DecodeOptions, GraphParams } from "./context.js";
export { Context, KV_BUCKET } from "./context.js";
export type { EngineErrorCode } from "./errors.js";
export { EngineError } from "./errors.js";
export { argmax, greedy } from "./generate.js";
export type { ModelLoadOptions } from "./model.js";
export { Model } from "./model.js";
