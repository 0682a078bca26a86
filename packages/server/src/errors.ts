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
    /** Extra fields of the error object (llama-server's n_prompt_tokens and n_ctx on a context overflow). */
    readonly fields: Readonly<Record<string, number>> = {},
  ) {
    // Messages quote client values through quote(); this bound is the last guard.
    super(message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message);
    this.param = param !== null && param.length > MAX_PARAM ? `${param.slice(0, MAX_PARAM)}…` : param;
  }

  body(): { error: { message: string; type: string; param: string | null; code: string | null } } {
    return {
      error: { message: this.message, type: this.type, param: this.param, code: this.code, ...this.fields },
    };
  }
}

/**
 * A prompt that does not fit a slot's context (`nCtx` tokens): llama-server's error type and its
 * `n_prompt_tokens` / `n_ctx` (the count, or its lower bound when refused by size), OpenAI's code,
 * and OpenAI's words "maximum context length" after llama-server's (clients such as LangChain
 * recognise a context overflow by them).
 */
export function contextExceeded(
  message: string,
  param: string,
  nPromptTokens: number,
  nCtx: number,
): ApiError {
  return new ApiError(
    400,
    `${message} (maximum context length: ${nCtx} tokens)`,
    "exceed_context_size_error",
    param,
    "context_length_exceeded",
    {},
    {
      n_prompt_tokens: nPromptTokens,
      n_ctx: nCtx,
    },
  );
}

/** A 400 naming the request field at fault (`param`) and what is wrong with it. */
export function invalidField(param: string, message: string, code = "invalid_value"): ApiError {
  return new ApiError(400, `${clip(param)}: ${message}`, "invalid_request_error", param, code);
}
