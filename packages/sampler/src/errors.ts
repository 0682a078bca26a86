/**
 * Every way a `@minfer/sampler` call can fail. Stable: code that handles errors may switch on these.
 */
export type SamplerErrorCode =
  /** An option or argument is out of range (`argument` names it): a bad option, empty or NaN logits. */
  "INVALID_ARGUMENT";

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
