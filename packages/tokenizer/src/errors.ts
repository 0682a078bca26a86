/** Every way building or using a tokenizer or a chat template can fail. */
export type TokenizerErrorCode =
  | "MISSING_KEY"
  | "BAD_VOCAB"
  | "UNKNOWN_MODEL"
  | "UNKNOWN_PRE_TOKENIZER"
  | "BAD_SPECIAL_ID"
  | "MISSING_MERGES"
  | "BAD_TOKEN_ID"
  | "TEMPLATE_MISSING"
  | "TEMPLATE_UNSUPPORTED"
  | "TEMPLATE_RENDER"
  | "INVALID_ARGUMENT";

/** The error class of `@minfer/tokenizer`; `code` is stable. */
export class TokenizerError extends Error {
  override readonly name = "TokenizerError";
  readonly code: TokenizerErrorCode;
  /** The metadata key, token id, or template line concerned, when there is one. */
  readonly detail: string | number | undefined;

  constructor(
    code: TokenizerErrorCode,
    message: string,
    options: { detail?: string | number; cause?: unknown } = {},
  ) {
    super(message, options.cause !== undefined ? { cause: options.cause } : {});
    this.code = code;
    this.detail = options.detail;
  }
}
