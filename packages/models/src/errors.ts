/** Stable codes of {@link ModelError}. */
export type ModelErrorCode =
  | "UNKNOWN_ARCH"
  | "MISSING_KEY"
  | "BAD_KEY"
  | "MISSING_TENSOR"
  | "BAD_SHAPE"
  | "BAD_DTYPE"
  | "INVALID_ARGUMENT";

/** Structured fields of a {@link ModelError}; each is set where it applies. */
export interface ModelErrorDetails {
  /** The GGUF metadata key at fault. */
  readonly key?: string;
  /** The tensor at fault. */
  readonly tensor?: string;
  /** The expected shape (ggml order, innermost first). */
  readonly expected?: readonly number[];
  /** The shape found in the file. */
  readonly got?: readonly number[];
  /** The architectures this package supports (UNKNOWN_ARCH). */
  readonly supported?: readonly string[];
}

/** A model that cannot be loaded or built as it is: the message says what to fix. */
export class ModelError extends Error {
  readonly code: ModelErrorCode;
  readonly details: ModelErrorDetails;

  constructor(code: ModelErrorCode, message: string, details: ModelErrorDetails = {}) {
    super(message);
    this.name = "ModelError";
    this.code = code;
    this.details = details;
  }
}
