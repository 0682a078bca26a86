/** What can go wrong fetching a model by name. */
export type HubErrorCode =
  | "INVALID_ARGUMENT"
  | "NOT_FOUND"
  | "HTTP_ERROR"
  | "DOWNLOAD_FAILED"
  | "CHECKSUM_MISMATCH"
  | "AMBIGUOUS";

/** An error of `minfer pull` / `list` / `rm` and of `-m hf://…`: printed with its code, exit status 1. */
export class HubError extends Error {
  override readonly name = "HubError";
  constructor(
    readonly code: HubErrorCode,
    message: string,
  ) {
    super(message);
  }
}
