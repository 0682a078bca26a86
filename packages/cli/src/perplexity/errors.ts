/** Why `minfer perplexity` could not run. */
export type PerplexityErrorCode =
  /** A file it must read is absent or unreadable. */
  | "MISSING_FILE"
  /** The base file does not start with llama-perplexity's `_logits_` magic. */
  | "BAD_MAGIC"
  /** The base file ends before its header or its last chunk does. */
  | "TRUNCATED"
  /** The base file's header is impossible (n_ctx, n_vocab or n_chunk out of range) or data follows its last chunk. */
  | "BAD_FILE"
  /** The base file was computed with another vocabulary size than the model's. */
  | "VOCAB_MISMATCH"
  /** -c differs from the context the base file was computed with. */
  | "CTX_MISMATCH"
  /** The text tokenizes to fewer than 2 × n_ctx tokens. */
  | "TEXT_TOO_SHORT"
  /** The vocabulary appends EOS to every text, which llama-perplexity refuses too. */
  | "UNSUPPORTED_VOCAB";

/** A refusal of `minfer perplexity`: printed as one line with its code, exit status 1. */
export class PerplexityError extends Error {
  override readonly name = "PerplexityError";
  constructor(
    readonly code: PerplexityErrorCode,
    message: string,
  ) {
    super(message);
  }
}
