/**
 * @module @minfer/backend-cuda
 * Not implemented yet.
 */
export {};
