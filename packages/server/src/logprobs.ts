import type { Tokenizer } from "@minfer/tokenizer";
import type { TokenEvent } from "./batcher.js";

/** One token of OpenAI's chat `logprobs.content`. */
export interface ChatLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

/** One token of llama-server's native `completion_probabilities`. */
export interface NativeLogprob {
  id: number;
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { id: number; token: string; logprob: number; bytes: number[] }[];
}

/** One token of llama-server's `completion_probabilities` with post_sampling_probs. */
export interface NativePostProb {
  id: number;
  token: string;
  prob: number;
  bytes: number[];
  top_probs: { id: number; token: string; prob: number; bytes: number[] }[];
}

/** Legacy completions' `logprobs` object. */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: number[];
  top_logprobs: Record<string, number>[];
  text_offset: number[];
}

/** Builds OpenAI's log-probability objects from token events (token text as its UTF-8 bytes decode). */
export class LogprobFormatter {
  readonly #tokenizer: Tokenizer;
  readonly #decoder = new TextDecoder("utf-8", { fatal: false });

  constructor(tokenizer: Tokenizer) {
    this.#tokenizer = tokenizer;
  }

  #entry(id: number, logprob: number) {
    const bytes = this.#tokenizer.tokenBytes(id);
    // -Infinity (a banned token) is not JSON: OpenAI's floor is -9999.
    return { token: this.#decoder.decode(bytes), logprob: Math.max(logprob, -9999), bytes: [...bytes] };
  }

  chat(e: TokenEvent): ChatLogprob {
    return {
      ...this.#entry(e.token, e.logprob ?? 0),
      top_logprobs: (e.top ?? []).map((t) => this.#entry(t.token, t.logprob)),
    };
  }

  /** One token of llama-server's `completion_probabilities` as post-sampling probabilities. */
  nativePost(e: TokenEvent): NativePostProb {
    const entry = (id: number, prob: number) => {
      const { token, bytes } = this.#entry(id, 0);
      return { id, token, bytes, prob };
    };
    return {
      ...entry(e.token, e.post?.p ?? 1),
      top_probs: (e.post?.top ?? []).map((t) => entry(t.token, t.p)),
    };
  }

  /** One token of llama-server's `completion_probabilities` (its /completion format). */
  native(e: TokenEvent): NativeLogprob {
    const entry = (id: number, logprob: number) => ({ id, ...this.#entry(id, logprob) });
    return {
      ...entry(e.token, e.logprob ?? 0),
      top_logprobs: (e.top ?? []).map((t) => entry(t.token, t.logprob)),
    };
  }

  /** Appends one token to a completions logprobs object; `offset` is the text length before it. */
  completion(into: CompletionLogprobs, e: TokenEvent, offset: number): void {
    const x = this.#entry(e.token, e.logprob ?? 0);
    into.tokens.push(x.token);
    into.token_logprobs.push(x.logprob);
    const top: Record<string, number> = {};
    for (const t of e.top ?? []) {
      const y = this.#entry(t.token, t.logprob);
      if (!(y.token in top)) top[y.token] = y.logprob;
    }
    into.top_logprobs.push(top);
    into.text_offset.push(offset);
  }
}

export function emptyCompletionLogprobs(): CompletionLogprobs {
  return { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
}
