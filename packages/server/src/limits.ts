import { ServerError } from "./server-error.js";

/**
 * What one client or request may use: every bound the server enforces on its input, in one
 * place, with its default. docs/LIMITS.md lists them with the answer a client gets past each.
 */
export interface ServerLimits {
  /** Largest request body in bytes; beyond it, 413. */
  readonly bodyBytes: number;
  /** Deepest nesting of arrays and objects in a JSON body; beyond it, 400 `nesting_too_deep`. */
  readonly jsonDepth: number;
  /**
   * Largest prompt in UTF-8 bytes (a completion's prompt, a chat's rendered messages, `/tokenize`'s
   * content), checked before tokenizing; beyond it, 400 `prompt_too_large`.
   */
  readonly promptBytes: number;
  /**
   * Largest grammar in bytes: a request's GBNF `grammar`, or the one made from a JSON Schema
   * (`response_format`, forced tool calls), whose JSON is held to the same bound before it is
   * converted; beyond it, 400 `grammar_too_large`. Compiling takes a few microseconds per byte on the
   * event loop.
   */
  readonly grammarBytes: number;
  /** Largest header section in bytes; beyond it, 431. */
  readonly headerBytes: number;
  /** Time to receive a request's headers, ms; past it, 408 and the connection is closed. */
  readonly headersTimeoutMs: number;
  /** Time to receive a whole request (headers and body), ms; past it, 408 and the connection is closed. */
  readonly requestTimeoutMs: number;
  /** An idle kept-alive connection is closed after this many ms. */
  readonly keepAliveTimeoutMs: number;
  /** Open connections one client address may hold; one more is answered 429 and closed. */
  readonly connectionsPerClient: number;
}

/** The defaults of {@link ServerLimits}. */
export const SERVER_LIMITS: ServerLimits = Object.freeze({
  bodyBytes: 8 * 1024 * 1024,
  jsonDepth: 64,
  promptBytes: 4 * 1024 * 1024,
  grammarBytes: 32 * 1024,
  headerBytes: 16 * 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  connectionsPerClient: 64,
});

/** Characters of a bad value quoted in an error message; the rest is elided. */
export const QUOTE_CHARS = 80;

/** Prompts of more UTF-16 units than this are tokenized a slice at a time, yielding to other requests. */
export const ASYNC_TOKENIZE_CHARS = 16 * 1024;

/** Checks and completes the limits a caller gives (a ServerError INVALID_ARGUMENT names the bad one). */
export function resolveLimits(given: Partial<ServerLimits> = {}): ServerLimits {
  const out: Record<string, number> = { ...SERVER_LIMITS };
  for (const [key, value] of Object.entries(given)) {
    if (!(key in SERVER_LIMITS))
      throw new ServerError(
        "INVALID_ARGUMENT",
        `limits.${key} is not a server limit; limits: ${Object.keys(SERVER_LIMITS).join(", ")}`,
      );
    if (value === undefined) continue;
    if (!Number.isInteger(value) || value < 1)
      throw new ServerError(
        "INVALID_ARGUMENT",
        `limits.${key} must be a positive integer, got ${String(value)}`,
      );
    out[key] = value;
  }
  if (out.headersTimeoutMs! > out.requestTimeoutMs!)
    throw new ServerError(
      "INVALID_ARGUMENT",
      `limits.headersTimeoutMs (${out.headersTimeoutMs}) must not exceed limits.requestTimeoutMs (${out.requestTimeoutMs})`,
    );
  return Object.freeze(out as unknown as ServerLimits);
}
