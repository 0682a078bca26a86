// How llama-perplexity cuts a text into chunks (tools/perplexity/perplexity.cpp, perplexity() and
// kl_divergence()): the whole text is tokenized once (with BOS when the vocabulary adds one);
// chunk i is tokens [i·n_ctx, (i+1)·n_ctx), decoded from an empty cache at positions 0…n_ctx-1,
// with its first token replaced by BOS when the vocabulary adds one; the logits at positions
// first = floor(n_ctx / 2) … n_ctx - 2 score the tokens at first + 1 … n_ctx - 1 (the first half
// only gives the model context).
import { PerplexityError } from "./errors.js";

/** The chunks of a text. */
export interface ChunkPlan {
  /** Tokens per chunk (the context of each decode). */
  readonly nCtx: number;
  /** Chunks evaluated. */
  readonly nChunk: number;
  /** The first position whose logits are used: floor(nCtx / 2). */
  readonly first: number;
  /** Tokens scored per chunk: nCtx - 1 - first. */
  readonly scored: number;
}

/**
 * The chunks of `nTokens` tokens at `nCtx` per chunk: every whole chunk, at most `maxChunks`
 * (undefined or negative: all). A text needs at least 2 × nCtx tokens, as llama-perplexity asks.
 */
export function planChunks(nTokens: number, nCtx: number, maxChunks?: number): ChunkPlan {
  if (nTokens < 2 * nCtx)
    throw new PerplexityError(
      "TEXT_TOO_SHORT",
      `the text tokenizes to ${nTokens} tokens; a context of ${nCtx} needs at least ${2 * nCtx} ` +
        `(two chunks): give a longer text or a smaller -c`,
    );
  return layout(nCtx, Math.floor(nTokens / nCtx), maxChunks);
}

/** The chunks of a base file of `nChunk` chunks of `nCtx` tokens (at most `maxChunks`). */
export function fileChunks(nCtx: number, nChunk: number, maxChunks?: number): ChunkPlan {
  return layout(nCtx, nChunk, maxChunks);
}

function layout(nCtx: number, all: number, maxChunks?: number): ChunkPlan {
  const nChunk = maxChunks === undefined || maxChunks < 0 ? all : Math.min(maxChunks, all);
  const first = Math.floor(nCtx / 2);
  return { nCtx, nChunk, first, scored: nCtx - 1 - first };
}

/**
 * Chunk `i`'s tokens as they are decoded, I32 [nCtx]: a copy, its first token replaced by `bos`
 * when given (the vocabulary adds BOS).
 */
export function chunkInput(tokens: ArrayLike<number>, plan: ChunkPlan, i: number, bos?: number): Int32Array {
  const start = i * plan.nCtx;
  const input = Int32Array.from({ length: plan.nCtx }, (_, k) => tokens[start + k]!);
  if (bos !== undefined) input[0] = bos;
  return input;
}

/** Which positions of a chunk want logits: first…nCtx-1. */
export function logitFlags(plan: ChunkPlan): boolean[] {
  return Array.from({ length: plan.nCtx }, (_, k) => k >= plan.first);
}

/** The token row `j` of chunk `i`'s scored logits predicts (the text's token, never the BOS). */
export function scoredToken(tokens: ArrayLike<number>, plan: ChunkPlan, i: number, j: number): number {
  return tokens[i * plan.nCtx + plan.first + j + 1]!;
}
