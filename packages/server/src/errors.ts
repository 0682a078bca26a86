import { clip } from "./quote.js";

// The errors a client gets: OpenAI's error object, with an HTTP status.

const MAX_MESSAGE = 2000;
const MAX_PARAM = 200;

/** An OpenAI-style error: the HTTP status and the body's `error` object. */
export class ApiError extends Error {
  /** The field at fault (a client's key, so cut to a bounded length). */
  readonly param: string | null;

  constructor(
    readonly status: number,
    message: string,
    readonly type: string = "invalid_request_error",
    param: string | null = null,
    readonly code: string | null = null,
    /** Extra response headers (e.g. Retry-After on a 503). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    // Messages quote client values through quote(); this bound is the last guard.
    super(message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message);
    this.param = param !== null && param.length > MAX_PARAM ? `${param.slice(0, MAX_PARAM)}…` : param;
  }

  body(): { error: { message: string; type: string; param: string | null; code: string | null } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** A 400 naming the request field at fault (`param`) and what is wrong with it. */
export function invalidField(param: string, message: string, code = "invalid_value"): ApiError {
  return new ApiError(400, `${clip(param)}: ${message}`, "invalid_request_error", param, code);
}
