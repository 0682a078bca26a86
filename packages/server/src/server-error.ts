// The server's own errors: everything but the answer to a client (that is ApiError, in errors.ts).
// A file of its own with no imports, so that limits.ts and the batcher can use it without a cycle
// through errors.ts → quote.ts → limits.ts.

/**
 * Ways the server fails outside the answer to one request: a bad option, a call made too early, a
 * job the batcher refuses, the template worker stopping, a broken invariant. Stable: code that
 * handles errors may switch on these (docs/ERRORS.md holds the vocabulary shared by the packages).
 */
export type ServerErrorCode =
  /** A bad option or argument (`limits`, `parallel`, `timeoutSeconds`, an empty prompt…); the message names it and its value. */
  | "INVALID_ARGUMENT"
  /** The model is not loaded yet (`await server.ready` first). */
  | "NOT_READY"
  /** Every slot is busy and the queue is full (a 503 with Retry-After to a client). */
  | "QUEUE_FULL"
  /** The prompt does not fit a slot's context (a 400 `context_length_exceeded` to a client). */
  | "PROMPT_TOO_LONG"
  /** The server is draining or closed and takes no more jobs (a 503 `shutting_down` to a client). */
  | "CLOSED"
  /**
   * A unified KV pool (`kvUnified`) filled while requests were generating: the one holding the
   * most cells is ended with this (a 503 with Retry-After to a client).
   */
  | "CONTEXT_FULL"
  /** A slot action (save, restore, erase) on a slot that runs a request or another action. */
  | "SLOT_BUSY"
  /** The chat-template worker thread could not start or stopped (not the template's fault). */
  | "WORKER_STOPPED"
  /** A broken internal invariant: a bug in this package. */
  | "INTERNAL";

/** The error class of `@minfer/server` for everything but the answer to a client (`ApiError`). */
export class ServerError extends Error {
  override readonly name = "ServerError";
  constructor(
    readonly code: ServerErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
