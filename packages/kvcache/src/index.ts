/**
 * @module @minfer/kvcache
 * Not implemented yet.
 */
export {};
