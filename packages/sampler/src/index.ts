/**
 * @module @minfer/sampler
 * Token sampling from logits: greedy (argmax) or top-k → top-p → temperature → a seeded draw, in
 * llama.cpp's sampler-chain order. The minimal sampler the full chain (penalties, min-p, mirostat,
 * grammars, ...) will grow from.
 */

export type { SampleResult, TokenLogprob } from "./chain/logprobs.js";
export type { ConstraintVocab, TokenConstraint } from "./constraint.js";
export type { SamplerErrorCode } from "./errors.js";
export { SamplerError } from "./errors.js";
export { Grammar, GrammarConstraint, GrammarError } from "./grammar/index.js";
export type { JsonSchemaToGbnfOptions } from "./json-schema/index.js";
export { jsonSchemaToGbnf, SchemaError } from "./json-schema/index.js";
export type { ResolvedSamplerOptions, SamplerOptions, SamplerVocab } from "./options.js";
export {
  DEFAULT_DRY_SEQUENCE_BREAKERS,
  DEFAULT_MIN_P,
  DEFAULT_TEMPERATURE,
  DEFAULT_TOP_K,
  DEFAULT_TOP_P,
  SAMPLER_DEFAULTS,
} from "./options.js";
export { Sampler } from "./sampler.js";
export { argmax } from "./select.js";
