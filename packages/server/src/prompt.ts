import type { Tokenizer } from "@minfer/tokenizer";
import { ApiError, contextExceeded } from "./errors.js";
import { ASYNC_TOKENIZE_CHARS, type ServerLimits } from "./limits.js";

/**
 * The most UTF-8 bytes of input one token can stand for: the longest token text (byte-level BPE
 * and SentencePiece store a token's bytes in at least as many UTF-8 bytes) or a character of up to
 * 4 bytes mapped to the unknown token. Undefined for WordPiece and Unigram, where one unknown token
 * can stand for a whole word (a run of characters) of any length.
 */
const maxBytesPerToken = new WeakMap<Tokenizer, number | undefined>();

function bytesPerToken(tokenizer: Tokenizer): number | undefined {
  if (maxBytesPerToken.has(tokenizer)) return maxBytesPerToken.get(tokenizer);
  let max: number | undefined;
  // (WordPiece's unknown token and Unigram's — with its normaliser dropping characters — can each
  // stand for any number of bytes)
  if (tokenizer.vocab.model !== "bert" && tokenizer.vocab.model !== "t5") {
    max = 4;
    for (const t of tokenizer.vocab.tokens) {
      const n = Buffer.byteLength(t);
      if (n > max) max = n;
    }
  }
  maxBytesPerToken.set(tokenizer, max);
  return max;
}

export interface PromptCheck {
  /** The request field the text came from (named in errors). */
  readonly param: string;
  /** Tokens the prompt must stay under (a slot's context), when there is such a bound. */
  readonly maxTokens?: number;
  readonly addSpecial: boolean;
  readonly parseSpecial: boolean;
}

/**
 * Tokenizes a client's text without holding the event loop: its size is checked first, in bytes
 * (against `limits.promptBytes`, and against the slot's context where even the longest tokens
 * could not make it fit), so an oversized prompt is refused before any tokenizing; a long one is
 * then encoded a slice at a time, yielding to other requests between slices.
 */
export async function tokenizePrompt(
  tokenizer: Tokenizer,
  text: string,
  check: PromptCheck,
  limits: ServerLimits,
): Promise<number[]> {
  const bytes = Buffer.byteLength(text);
  if (bytes > limits.promptBytes)
    throw new ApiError(
      400,
      `the ${check.param} is ${bytes} bytes; the server takes at most ${limits.promptBytes}`,
      "invalid_request_error",
      check.param,
      "prompt_too_large",
    );
  const per = bytesPerToken(tokenizer);
  if (check.maxTokens !== undefined && per !== undefined) {
    const atLeast = Math.ceil(bytes / per);
    if (atLeast >= check.maxTokens)
      throw contextExceeded(
        `the ${check.param} (${bytes} bytes, at least ${atLeast} tokens) exceeds the available context size ` +
          `(${check.maxTokens} tokens a slot, prompt and completion together); shorten it or start the server with a larger -c / fewer -np`,
        check.param,
        atLeast,
        check.maxTokens,
      );
  }
  const options = { addSpecial: check.addSpecial, parseSpecial: check.parseSpecial };
  return text.length > ASYNC_TOKENIZE_CHARS
    ? tokenizer.encodeAsync(text, options)
    : tokenizer.encode(text, options);
}

/** Tokens decoded between two yields of {@link detokenize}. */
const DECODE_SLICE = 32 * 1024;

/**
 * `tokenizer.decode(ids)` as llama-server's `/detokenize` gives it (each token's text, the first
 * piece's SentencePiece space kept), a slice at a time, yielding to other requests between slices.
 */
export async function detokenize(tokenizer: Tokenizer, ids: readonly number[]): Promise<string> {
  if (ids.length <= DECODE_SLICE) return tokenizer.decode(ids, { keepLeadingSpace: true });
  const d = tokenizer.streamDecoder({ keepLeadingSpace: true });
  const parts: string[] = [];
  for (let i = 0; i < ids.length; i += DECODE_SLICE) {
    if (i > 0) await new Promise<void>((r) => setImmediate(r));
    parts.push(d.pushMany(ids, i, Math.min(ids.length, i + DECODE_SLICE)));
  }
  parts.push(d.flush());
  return parts.join("");
}
