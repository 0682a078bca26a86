/**
 * @module @minfer/server
 * Not implemented yet.
 */
export {};
