/** Ways using a model or a context can fail. */
export type EngineErrorCode =
  /** A bad argument (the message names it and its value). */
  | "INVALID_ARGUMENT"
  /** The context has no free KV cells for the batch. */
  | "NO_KV_ROOM"
  /** The model file lacks something the engine needs. */
  | "BAD_MODEL"
  /** The context or model was disposed. */
  | "DISPOSED"
  /** Generation was aborted through its AbortSignal. */
  | "ABORTED"
  /** Logits of a `reuseLogits` context read after a later decode call overwrote them. */
  | "STALE_LOGITS"
  /** A logits row of a `candidatesOnly` decode asked for synchronously (it stayed on the device). */
  | "LOGITS_NOT_READ"
  /** A draft model whose vocabulary differs from the target's (speculative decoding). */
  | "DRAFT_MISMATCH"
  /** A bug in minfer (the message says what broke). */
  | "INTERNAL";

/** The error class of `@minfer/engine`; `code` is stable. */
export class EngineError extends Error {
  override readonly name = "EngineError";
  constructor(
    readonly code: EngineErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
