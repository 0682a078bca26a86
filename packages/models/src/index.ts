/**
 * @module @minfer/models
 * Not implemented yet.
 */
export {};
