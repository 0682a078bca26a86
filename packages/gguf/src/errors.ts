/** Every way a GGUF operation can fail. Stable: code that handles errors may switch on these. */
export type GgufErrorCode =
  | "TRUNCATED"
  | "BAD_MAGIC"
  | "UNSUPPORTED_VERSION"
  | "COUNT_TOO_LARGE"
  | "INVALID_UTF8"
  | "UNKNOWN_VALUE_TYPE"
  | "BAD_VALUE"
  | "NESTING_TOO_DEEP"
  | "DUPLICATE_KEY"
  | "BAD_ALIGNMENT"
  | "UNKNOWN_TENSOR_TYPE"
  | "TOO_MANY_DIMS"
  | "BAD_SHAPE"
  | "DUPLICATE_TENSOR"
  | "MISALIGNED_TENSOR"
  | "OVERLAPPING_TENSORS"
  | "TENSOR_OUT_OF_BOUNDS"
  | "MISSING_KEY"
  | "WRONG_KEY_TYPE"
  | "BAD_SPLIT"
  | "UNSUPPORTED_TYPE"
  | "INVALID_ARGUMENT"
  | "IO";

/** Structured details carried by a {@link GgufError}. */
export interface GgufErrorDetails {
  /** Byte offset in the file (or buffer) where the problem was found. */
  offset?: number;
  /** The file the problem is in, when reading from a path. */
  path?: string;
  /** The metadata key or tensor name concerned. */
  key?: string;
  /** The underlying error, for I/O failures. */
  cause?: unknown;
}

/**
 * The one error class `@minfer/gguf` throws. `code` is stable; `offset` is the byte offset of the
 * problem when it comes from the file's bytes.
 */
export class GgufError extends Error {
  override readonly name = "GgufError";
  readonly code: GgufErrorCode;
  readonly offset: number | undefined;
  readonly path: string | undefined;
  readonly key: string | undefined;

  constructor(code: GgufErrorCode, message: string, details: GgufErrorDetails = {}) {
    const where = [
      details.path !== undefined ? details.path : undefined,
      details.offset !== undefined ? `at byte ${details.offset}` : undefined,
    ]
      .filter(Boolean)
      .join(" ");
    super(
      where ? `${message} (${where})` : message,
      details.cause !== undefined ? { cause: details.cause } : {},
    );
    this.code = code;
    this.offset = details.offset;
    this.path = details.path;
    this.key = details.key;
  }
}
