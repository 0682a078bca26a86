/** Ways the CUDA backend fails. */
export type CudaBackendErrorCode =
  /** The addon is not built here, or there is no driver or no device (the message says which). */
  | "NATIVE_UNAVAILABLE"
  /** A CUDA call failed (the message names it and CUDA's error). */
  | "CUDA_ERROR"
  /** The program is malformed (sizes, indices, record layout). */
  | "BAD_PROGRAM"
  /** An op code this build does not know. */
  | "UNSUPPORTED_OP"
  /** A kernel refused the node's dtypes, shapes or parameters. */
  | "UNSUPPORTED_SHAPE"
  /** A known op without a CUDA kernel. */
  | "NO_KERNEL"
  | "OUT_OF_MEMORY"
  /** A buffer or executor is in use by an execute in flight. */
  | "BUSY"
  | "INVALID_ARGUMENT"
  | "OUT_OF_RANGE"
  | "WRONG_DEVICE"
  | "DISPOSED"
  | "IO_ERROR";

/** The one error class of `@minfer/backend-cuda`; `code` is stable. */
export class CudaBackendError extends Error {
  override readonly name = "CudaBackendError";
  constructor(
    readonly code: CudaBackendErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const NATIVE_CODES = new Set<string>([
  "BAD_PROGRAM",
  "UNSUPPORTED_OP",
  "UNSUPPORTED_SHAPE",
  "NO_KERNEL",
  "OUT_OF_RANGE",
  "OUT_OF_MEMORY",
  "CUDA_ERROR",
  "BUSY",
  "DISPOSED",
  "WRONG_DEVICE",
]);

/** Maps an error thrown by the addon to a coded one (RangeError → OUT_OF_RANGE, TypeError → INVALID_ARGUMENT). */
export function fromNative(e: unknown, what: string): CudaBackendError {
  const message = `${what}: ${(e as Error)?.message ?? String(e)}`;
  const code = (e as { code?: unknown })?.code;
  if (typeof code === "string" && NATIVE_CODES.has(code))
    return new CudaBackendError(code as CudaBackendErrorCode, message, { cause: e });
  if (e instanceof RangeError) return new CudaBackendError("OUT_OF_RANGE", message, { cause: e });
  if (e instanceof TypeError) return new CudaBackendError("INVALID_ARGUMENT", message, { cause: e });
  return new CudaBackendError("CUDA_ERROR", message, { cause: e });
}
