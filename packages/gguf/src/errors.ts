/**
 * Every way a GGUF operation can fail. Stable: code that handles errors may switch on these.
 * The file's own faults have codes of their own; a caller's bad argument is `INVALID_ARGUMENT`;
 * an operating-system failure is `IO_ERROR` (docs/ERRORS.md holds the shared vocabulary).
 */
export type GgufErrorCode =
  // The file's bytes.
  | "TRUNCATED"
  | "BAD_MAGIC"
  | "UNSUPPORTED_VERSION"
  | "COUNT_TOO_LARGE"
  | "INVALID_UTF8"
  | "UNKNOWN_VALUE_TYPE"
  /** A metadata value its type does not allow (a bool stored as 2). */
  | "MALFORMED_VALUE"
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
  | "BAD_SPLIT"
  /** An importance matrix (llama-imatrix's GGUF or legacy .dat file) whose contents do not make sense. */
  | "BAD_IMATRIX"
  // Typed metadata access.
  | "MISSING_KEY"
  | "WRONG_KEY_TYPE"
  // The caller and the host.
  /** A ggml type this operation has no kernel for (quantize, dequantize, synth); the message lists the supported ones. */
  | "UNSUPPORTED_DTYPE"
  /** A bad argument or option (the message names it and its value). */
  | "INVALID_ARGUMENT"
  /** The operating system refused a read, write or open (the message names the path; `cause` is the system error). */
  | "IO_ERROR"
  /** This host cannot run the operation (a big-endian host reading a typed array). */
  | "UNSUPPORTED_HOST";

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
