/**
 * @module @minfer/sampler
 * Not implemented yet.
 */
export {};
