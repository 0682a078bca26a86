/** Ways finding backends, planning or running a graph can fail. */
export type SchedulerErrorCode =
  /** A backend or device that was asked for is not available (the message says why and what to do). */
  | "BACKEND_MISSING"
  /** A backend entry was refused (wrong API version, malformed entry). */
  | "BACKEND_REFUSED"
  /** No candidate device supports an op with these dtypes and layouts. */
  | "UNSUPPORTED_OP"
  /** A graph needs more arena than was reserved, or a reservation would shrink one in use. */
  | "ARENA_TOO_SMALL"
  /** A weight or state tensor has no buffer bound to it. */
  | "UNBOUND_TENSOR"
  /** A caller's bad argument: run inputs missing, extra or of the wrong size, an alignment, a size. */
  | "INVALID_ARGUMENT"
  /** A file could not be read as asked (the reference device's mapFile). */
  | "IO_ERROR"
  /** A program could not be executed (reference device) or is inconsistent with its buffers. */
  | "BAD_PROGRAM"
  /** An index (row, cell, position, expert) is out of range at run time. */
  | "OUT_OF_RANGE"
  /** Use of an object after `dispose()`. */
  | "DISPOSED"
  /** A graph the scheduler cannot plan (an input never written, a cycle, …). */
  | "BAD_GRAPH";

/** The error class of `@minfer/scheduler`: a stable `code` and a message that says what to do. */
export class SchedulerError extends Error {
  override readonly name = "SchedulerError";
  readonly code: SchedulerErrorCode;
  /** Structured details (device, op, sizes, …) for programs that handle the error. */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(
    code: SchedulerErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.code = code;
    this.details = details;
  }
}
