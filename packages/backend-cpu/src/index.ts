/**
 * @module @minfer/backend-cpu
 * Not implemented yet.
 */
export {};
