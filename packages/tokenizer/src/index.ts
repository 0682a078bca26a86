/**
 * @module @minfer/tokenizer
 * Not implemented yet.
 */
export {};
