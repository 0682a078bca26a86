/** Ways the CPU backend fails; native codes come through unchanged. */
export type CpuBackendErrorCode =
  | "NATIVE_UNAVAILABLE"
  | "BAD_PROGRAM"
  | "UNSUPPORTED_OP"
  | "UNSUPPORTED_SHAPE"
  | "OUT_OF_RANGE"
  | "NO_KERNEL"
  | "INVALID_ARGUMENT"
  | "DISPOSED"
  | "BUSY"
  | "READ_ONLY"
  | "IO_ERROR"
  | "OUT_OF_MEMORY"
  | "SIMD_UNAVAILABLE"
  | "WRONG_DEVICE"
  | "INTERNAL";

const CODES = new Set<string>([
  "NATIVE_UNAVAILABLE",
  "BAD_PROGRAM",
  "UNSUPPORTED_OP",
  "UNSUPPORTED_SHAPE",
  "OUT_OF_RANGE",
  "NO_KERNEL",
  "INVALID_ARGUMENT",
  "DISPOSED",
  "BUSY",
  "READ_ONLY",
  "IO_ERROR",
  "OUT_OF_MEMORY",
  "SIMD_UNAVAILABLE",
  "WRONG_DEVICE",
  "INTERNAL",
]);

/** The error class of `@minfer/backend-cpu`, with a stable `code`. */
export class CpuBackendError extends Error {
  override readonly name = "CpuBackendError";
  readonly code: CpuBackendErrorCode;

  constructor(code: CpuBackendErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** The one place native errors become CpuBackendErrors (native code sets `code` on each). */
export function fromNative(e: unknown): CpuBackendError {
  if (e instanceof CpuBackendError) return e;
  const code = (e as { code?: unknown } | null)?.code;
  const message = e instanceof Error ? e.message : String(e);
  return new CpuBackendError(
    typeof code === "string" && CODES.has(code) ? (code as CpuBackendErrorCode) : "INTERNAL",
    message,
    { cause: e },
  );
}

/** Runs a native call, turning what it throws into a CpuBackendError. */
export function callNative<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw fromNative(e);
  }
}
