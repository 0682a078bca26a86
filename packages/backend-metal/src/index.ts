/**
 * @module @minfer/backend-metal
 * Not implemented yet.
 */
export {};
