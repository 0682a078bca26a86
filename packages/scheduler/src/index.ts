/**
 * @module @minfer/scheduler
 * Not implemented yet.
 */
export {};
