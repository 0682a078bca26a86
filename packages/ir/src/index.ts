/**
 * @module @minfer/ir
 * Not implemented yet.
 */
export {};
