/**
 * Tokenizers built from GGUF metadata (byte-level BPE, SentencePiece BPE and Unigram, WordPiece),
 * streaming detokenization and chat templates.
 * @module @minfer/tokenizer
 */

export type { ChatMessage, ChatTemplateMetadata, ChatTemplateRenderOptions } from "./chat-template.js";
export { ChatTemplate, chatTemplatesFromMetadata } from "./chat-template.js";
export type { TokenizerErrorCode } from "./errors.js";
export { TokenizerError } from "./errors.js";
export type { FimLookup, FimRole, FimTokens } from "./fim.js";
export { FIM_ROLES, FIM_TEXTS, fimTokens } from "./fim.js";
export { PRE_TOKENIZERS } from "./pre-tokenizers.js";
export { StreamDecoder } from "./stream-decoder.js";
export type { DecodeOptions, EncodeOptions, TokenizerOptions } from "./tokenizer.js";
export { Tokenizer } from "./tokenizer.js";
export type { SpecialIds, TokenizerModel, Vocab } from "./vocab.js";
export { loadVocab, TOKENIZER_MODELS, TokenType } from "./vocab.js";
