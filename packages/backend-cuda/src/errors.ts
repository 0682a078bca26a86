/** Ways the CUDA backend fails. */
export type CudaBackendErrorCode =
  /** The addon is not built here, or there is no driver or no device (the message says which). */
  | "NATIVE_UNAVAILABLE"
  /** A CUDA call failed (the message names it and CUDA's error). */
  | "CUDA_ERROR"
  /** This build has no kernels yet: programs cannot run on CUDA. */
  | "UNSUPPORTED"
  | "BAD_ARGUMENT"
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

/** Maps an error thrown by the addon to a coded one (RangeError → OUT_OF_RANGE, TypeError → BAD_ARGUMENT). */
export function fromNative(e: unknown, what: string): CudaBackendError {
  const message = `${what}: ${(e as Error)?.message ?? String(e)}`;
  if (e instanceof RangeError) return new CudaBackendError("OUT_OF_RANGE", message, { cause: e });
  if (e instanceof TypeError) return new CudaBackendError("BAD_ARGUMENT", message, { cause: e });
  return new CudaBackendError("CUDA_ERROR", message, { cause: e });
}
