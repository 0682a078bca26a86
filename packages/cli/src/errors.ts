/** Ways the command line itself can be misused. */
export type CliErrorCode =
  | "UNKNOWN_COMMAND"
  | "UNKNOWN_OPTION"
  | "MISSING_VALUE"
  | "INVALID_ARGUMENT"
  | "MISSING_ARGUMENT"
  | "EXTRA_ARGUMENT";

/** A usage error: printed with the command's usage, exit status 2. */
export class CliError extends Error {
  override readonly name = "CliError";
  constructor(
    readonly code: CliErrorCode,
    message: string,
  ) {
    super(message);
  }
}
