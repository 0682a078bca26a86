/** Ways using a model or a context can fail. */
export type EngineErrorCode = "INVALID_ARGUMENT" | "NO_KV_ROOM" | "BAD_MODEL";

/** The error class of `@minfer/engine`; `code` is stable. */
export class EngineError extends Error {
  override readonly name = "EngineError";
  constructor(
    readonly code: EngineErrorCode,
    message: string,
  ) {
    super(message);
  }
}
