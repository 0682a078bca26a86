/** Why a Hugging Face checkpoint could not be converted. */
export type ConvertErrorCode =
  | "MISSING_FILE"
  | "BAD_FILE"
  | "UNKNOWN_ARCH"
  | "MISSING_CONFIG_KEY"
  | "BAD_CONFIG_KEY"
  | "UNSUPPORTED_CONFIG"
  | "UNSUPPORTED_DTYPE"
  | "UNKNOWN_TENSOR"
  | "MISSING_TENSOR"
  | "BAD_SHAPE"
  | "UNSUPPORTED_TOKENIZER"
  | "UNKNOWN_PRE_TOKENIZER"
  | "BAD_TOKENIZER";

/** A checkpoint minfer convert refuses: printed as one line with its code, exit status 1. */
export class ConvertError extends Error {
  override readonly name = "ConvertError";
  constructor(
    readonly code: ConvertErrorCode,
    message: string,
  ) {
    super(message);
  }
}
