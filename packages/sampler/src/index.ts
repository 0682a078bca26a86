/**
 * @module @minfer/sampler
 * Everything between logits and the next token: the sampler chain in llama.cpp's order (logit
 * bias → penalties → DRY → grammar/constraint → top-k → typical → top-p → min-p → XTC →
 * top-n-sigma → temperature → draw, or mirostat v1/v2), log-probabilities, GBNF grammars as
 * token constraints, and JSON Schema → GBNF.
 */

export type { CandidateIds } from "./candidate-ids.js";
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
  LLAMA_CPP_SAMPLING,
  SAMPLER_DEFAULTS,
} from "./options.js";
export { Sampler } from "./sampler.js";
export { argmax } from "./select.js";
