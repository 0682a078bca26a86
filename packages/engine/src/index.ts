/**
 * @module @minfer/engine
 * Not implemented yet.
 */
export {};
