/**
 * What a speculative generation asks of a drafter: guesses of the tokens that follow. The engine
 * verifies every guess with one batched decode of the target and keeps only what the target's own
 * sampling agrees with, so a drafter can be wrong at no cost to correctness — only to speed.
 *
 * A drafter sees the whole token history of the sequence (prompt and generated tokens, the last
 * one not yet decoded by the target) and returns at most `max` tokens to follow it. Draft models
 * ({@link ModelDrafter}), n-gram lookup ({@link NgramDrafter}) and later MTP heads or EAGLE-style
 * drafters all fit this one call.
 */
export interface Drafter {
  /** A short name for reports ("ngram", "draft"). */
  readonly kind: string;
  /**
   * Up to `max` token ids to follow `history` (possibly none). `history` grows by appending between
   * calls of one generation; a history that does not extend the previous one starts over.
   */
  draft(history: readonly number[], max: number): number[] | Promise<number[]>;
  /**
   * Whether a draft's cost grows with its length (a draft model decodes each token) rather than
   * being one lookup whatever its length (n-grams). The adaptive depth weighs drafts by it.
   */
  readonly costPerToken: boolean;
  /**
   * Of the last {@link draft} call, the milliseconds spent catching up with the history rather than
   * drafting (a draft model decoding the tokens accepted since its last draft); optional.
   */
  readonly lastSyncMs?: number;
  /**
   * Called once with the prompt before generation starts, within the prompt's time (optional): a
   * draft model decodes it then, as llama.cpp's speculative example does, rather than at the first
   * draft.
   */
  prefill?(prompt: readonly number[]): void | Promise<void>;
  /**
   * Told after each verification how many of the `drafted` tokens the target accepted (optional:
   * a drafter may adapt to it).
   */
  accepted?(drafted: number, accepted: number): void;
}

/** Counters of a speculative generation. */
export interface SpeculativeStats {
  /** Which drafter ({@link Drafter.kind}). */
  readonly kind: string;
  /** Verification decodes of the target (each of the pending token and its drafts). */
  readonly steps: number;
  /** Tokens the drafter proposed and the target verified. */
  readonly drafted: number;
  /** Of those, the ones the target's sampling agreed with. */
  readonly accepted: number;
  /** Wall time inside the drafter (milliseconds). */
  readonly draftMs: number;
}
