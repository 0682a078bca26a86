/** Something that restricts which token may come next (a grammar, a JSON Schema). */
export interface TokenConstraint {
  /** Whether `token` may come next (cheap: the sampler checks the sampled token first). */
  allows(token: number): boolean;
  /** Sets the logit of every token that may not come next to -Infinity (the slow path). */
  mask(logits: Float32Array): void;
  /** Advances past `token`; throws SamplerError GRAMMAR_REJECTED if it is not allowed. */
  accept(token: number): void;
  /** Whether the text so far is a complete match (end-of-generation is allowed only then). */
  isComplete(): boolean;
  /** Whether no further token can extend the match (generation must end). */
  isExhausted(): boolean;
  /** Back to the start. */
  reset(): void;
}

/** What a constraint needs to know about the vocabulary (`@minfer/tokenizer`'s Tokenizer fits). */
export interface ConstraintVocab {
  readonly size: number;
  /** The bytes token `id` decodes to (empty for control tokens). */
  tokenBytes(id: number): Uint8Array;
  /** End-of-generation tokens: allowed exactly when the constraint isComplete(). */
  isEog(id: number): boolean;
}
