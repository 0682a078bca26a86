/**
 * Every way a `@minfer/kvcache` operation can fail. Stable: code that handles errors may switch on
 * these. An expected outcome (no free cells for a micro-batch) is a return value, never an error.
 */
export type KvCacheErrorCode =
  /** A constructor or method option or argument is out of range or of the wrong kind (`argument` names it). */
  | "INVALID_ARGUMENT"
  /** A sequence id is not an integer in [0, nSeqMax). */
  | "BAD_SEQ_ID"
  /** A position is not an integer in [0, 2^31). */
  | "BAD_POSITION"
  /** A position range is inverted (p0 > p1) or p1 is neither -1 nor an integer. */
  | "BAD_RANGE"
  /** A seqAdd delta is not an integer, or moves a position past 2^31 - 1. */
  | "BAD_DELTA"
  /** A seqDiv divisor is not an integer ≥ 1. */
  | "BAD_DIVISOR"
  /** A micro-batch is malformed (a token without sequences, cells of the wrong length, …). */
  | "BAD_BATCH"
  /** A cell index is out of [0, nCtx), repeated, or not in the state the call needs. */
  | "BAD_CELL"
  /** A token's (sequence, position) already has a cell. */
  | "DUPLICATE_POSITION"
  /** seqAdd/seqDiv on a cell another sequence also owns (its one K row cannot move for one owner only). */
  | "SHARED_CELL"
  /** seqCp would give the destination two cells at one position. */
  | "SEQ_CONFLICT"
  /** mask/spans for a batch whose cells do not hold the batch's tokens. */
  | "NOT_COMMITTED"
  /** A visible cell lies outside the KV window the graph attends over. */
  | "WINDOW_TOO_SMALL"
  /** A defragmentation plan does not fit the cache (overlap, an empty source, a used target). */
  | "BAD_PLAN"
  /** State written while position shifts are pending (K rows are not yet re-roped). */
  | "PENDING_SHIFT"
  /** An unknown KV dtype. */
  | "BAD_DTYPE"
  /** A row length the KV dtype cannot hold (q8_0 needs whole 32-element blocks). */
  | "BAD_ROW_SIZE"
  /** State bytes end early. */
  | "STATE_TRUNCATED"
  /** State bytes do not start with the magic. */
  | "STATE_BAD_MAGIC"
  /** State bytes of a version this reader does not know. */
  | "STATE_UNSUPPORTED_VERSION"
  /** State bytes whose checksum does not match (corrupted). */
  | "STATE_CHECKSUM"
  /** State bytes that are well formed but inconsistent (cells out of order or range, bad positions). */
  | "STATE_MALFORMED"
  /** State that does not fit this cache (too many cells, the sequence is not empty). */
  | "STATE_MISMATCH"
  /** A broken internal invariant: a bug in this package. */
  | "INTERNAL";

/** Structured details carried by a {@link KvCacheError}. */
export interface KvCacheErrorDetails {
  /** The argument (or option, or `batch[i].pos`-style path) at fault. */
  argument?: string;
  /** The cell concerned. */
  cell?: number;
  /** Byte offset in state bytes where the problem was found. */
  offset?: number;
}

/** The one error class `@minfer/kvcache` throws. `code` is stable. */
export class KvCacheError extends Error {
  override readonly name = "KvCacheError";
  readonly code: KvCacheErrorCode;
  readonly argument: string | undefined;
  readonly cell: number | undefined;
  readonly offset: number | undefined;

  constructor(code: KvCacheErrorCode, message: string, details: KvCacheErrorDetails = {}) {
    super(message);
    this.code = code;
    this.argument = details.argument;
    this.cell = details.cell;
    this.offset = details.offset;
  }
}

/** Throws INVALID_ARGUMENT unless `v` is an integer in [min, max]. */
export function checkInt(v: unknown, argument: string, min: number, max: number): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    throw new KvCacheError(
      "INVALID_ARGUMENT",
      `${argument} must be an integer in [${min}, ${max}], got ${String(v)}`,
      {
        argument,
      },
    );
  }
  return v;
}
