/**
 * Every way a `@minfer/sampler` call can fail. Stable: code that handles errors may switch on these.
 */
export type SamplerErrorCode =
  /** An option or argument is out of range (`argument` names it): a bad option, empty or NaN logits. */
  | "INVALID_ARGUMENT"
  /** A GBNF grammar does not parse; the message names the line, the column and what was expected. */
  | "GRAMMAR_SYNTAX"
  /** A GBNF grammar references a rule it does not define (or lacks its root rule); the message names it. */
  | "GRAMMAR_UNDEFINED_RULE"
  /** A GBNF rule can reach itself again before matching any character (left recursion: it would loop). */
  | "GRAMMAR_LEFT_RECURSION"
  /**
   * A GBNF grammar is too large to match safely: groups nested too deeply, more rule elements than the
   * bound once repetitions are unrolled, or one matching step that could open more parses than the
   * bound (repetitions of optional items inside each other). The message states the bound.
   */
  | "GRAMMAR_TOO_LARGE"
  /** A token the grammar does not allow was accepted. */
  | "GRAMMAR_REJECTED"
  /** A JSON Schema uses a keyword (or keyword value) the JSON Schema → GBNF converter does not support. */
  | "SCHEMA_UNSUPPORTED"
  /** A JSON Schema is malformed (a bad keyword value, an unresolvable `$ref`) or no document satisfies it. */
  | "SCHEMA_INVALID"
  /** The sampler's constraint (a grammar) allows none of the tokens whose logit is not -Infinity. */
  | "GRAMMAR_DEAD_END";

/** The one error class `@minfer/sampler` throws. `code` is stable. */
export class SamplerError extends Error {
  override readonly name = "SamplerError";
  readonly code: SamplerErrorCode;
  /** The option or argument at fault (`"topP"`, `"logits"`, ...). */
  readonly argument: string | undefined;

  constructor(code: SamplerErrorCode, message: string, argument?: string) {
    super(message);
    this.code = code;
    this.argument = argument;
  }
}

/** An INVALID_ARGUMENT error naming `argument`. */
export function invalidArgument(argument: string, message: string): SamplerError {
  return new SamplerError("INVALID_ARGUMENT", `${argument}: ${message}`, argument);
}
