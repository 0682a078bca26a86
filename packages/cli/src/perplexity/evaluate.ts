// The model's side of a perplexity run: each chunk decoded by @minfer/engine from an empty cache,
// one decode call of nCtx tokens that the Context cuts into micro-batches of nUbatch, logits asked
// for the scored half only (positions first…nCtx-1), then scored as llama-perplexity scores them.
import type { Context } from "@minfer/engine";
import { type ChunkPlan, chunkInput, logitFlags, scoredToken } from "./chunks.js";
import { KldAccumulator } from "./kld.js";
import {
  decodeRow,
  encodeLogProbRow,
  type LogitsFileReader,
  type LogitsFileWriter,
  rowStride,
} from "./logits-file.js";
import { PerplexityAccumulator, type PerplexityEstimate, tokenNll } from "./ppl.js";

/** What both kinds of run take besides the context and the tokens. */
export interface RunOptions {
  /** The BOS that replaces each chunk's first token (when the vocabulary adds BOS). */
  readonly bos?: number;
  /** Stops between chunks. */
  readonly signal?: AbortSignal;
}

/**
 * Decodes chunk `i` and returns its logits from position `first` on: F32 [nCtx - first, nVocab]
 * (row j is position first + j; the last row predicts past the chunk and is not scored).
 */
export async function chunkLogits(
  ctx: Context,
  tokens: ArrayLike<number>,
  plan: ChunkPlan,
  i: number,
  bos?: number,
): Promise<Float32Array> {
  ctx.clear();
  const input = chunkInput(tokens, plan, i, bos);
  const out = await ctx.decode({ tokens: input, seq: 0, logits: logitFlags(plan) });
  // The rows come in batch order, one per position asked for: first…nCtx-1, contiguous.
  const nRows = plan.nCtx - plan.first;
  if (out.count !== nRows || out.indices[0] !== plan.first || out.indices[nRows - 1] !== plan.nCtx - 1)
    throw new Error(`decode returned logits for ${out.count} positions, ${nRows} asked for`);
  return out.data.subarray(0, nRows * out.nVocab);
}

/**
 * Perplexity over `plan`'s chunks of `tokens`; with `writer`, each chunk's scored rows go to the
 * base file (and the NLLs are those of the rows written, as llama.cpp's are). `onChunk` gets the
 * running perplexity after each chunk.
 */
export async function runPerplexity(
  ctx: Context,
  tokens: ArrayLike<number>,
  plan: ChunkPlan,
  options: RunOptions & { writer?: LogitsFileWriter; onChunk?: (i: number, ppl: number) => void } = {},
): Promise<PerplexityEstimate> {
  const nVocab = ctx.model.hparams.nVocab;
  const stride = rowStride(nVocab);
  const acc = new PerplexityAccumulator();
  const rows = options.writer ? new Uint16Array(plan.scored * stride) : undefined;
  for (let i = 0; i < plan.nChunk; i++) {
    options.signal?.throwIfAborted();
    const logits = await chunkLogits(ctx, tokens, plan, i, options.bos);
    for (let j = 0; j < plan.scored; j++) {
      const row = logits.subarray(j * nVocab, (j + 1) * nVocab);
      const token = scoredToken(tokens, plan, i, j);
      acc.add(
        rows
          ? encodeLogProbRow(row, token, rows.subarray(j * stride, (j + 1) * stride))
          : tokenNll(row, token),
      );
    }
    if (rows) await options.writer!.writeChunk(rows);
    options.onChunk?.(i, acc.ppl);
  }
  return acc.estimate();
}

/**
 * KL divergence and the other statistics of the model against a base file, over `plan`'s chunks
 * of the file's tokens. `onChunk` gets the accumulator after each chunk.
 */
export async function runKld(
  ctx: Context,
  reader: LogitsFileReader,
  plan: ChunkPlan,
  options: RunOptions & { onChunk?: (i: number, acc: KldAccumulator) => void } = {},
): Promise<KldAccumulator> {
  const { nVocab, tokens } = reader.header;
  const acc = new KldAccumulator(plan.nChunk * plan.scored);
  for (let i = 0; i < plan.nChunk; i++) {
    options.signal?.throwIfAborted();
    const [logits, base] = await Promise.all([
      chunkLogits(ctx, tokens, plan, i, options.bos),
      reader.readChunk(i),
    ]);
    for (let j = 0; j < plan.scored; j++)
      acc.add(
        logits.subarray(j * nVocab, (j + 1) * nVocab),
        decodeRow(base, j, nVocab),
        scoredToken(tokens, plan, i, j),
      );
    options.onChunk?.(i, acc);
  }
  return acc;
}
