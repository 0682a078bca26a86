import type { Pooling } from "@minfer/models";
import type { Context } from "./context.js";
import { EngineError } from "./errors.js";

/** One input of {@link embed}: a text, its token ids, or ids with each token's segment (BERT's token type). */
export type EmbedInput =
  | string
  | readonly number[]
  | { readonly tokens: readonly number[]; readonly tokenTypes?: readonly number[] };

/** Options of {@link embed}. */
export interface EmbedOptions {
  /**
   * How each pooled vector is normalised, as llama.cpp's `--embd-normalize`: 2 (default) to unit
   * Euclidean length, -1 not at all, 0 by the largest magnitude scaled to 32760 (int16 range),
   * 1 by the sum of magnitudes, p > 2 by the p-norm. Rank scores and `none` rows are never normalised.
   */
  readonly normalize?: number;
  /** Add the tokenizer's special tokens (BERT's [CLS] … [SEP]) to texts. Default true. */
  readonly addSpecial?: boolean;
  /** Stops between decode calls; the context's sequences are cleared either way. */
  readonly signal?: AbortSignal;
}

/** The embedding of one input. */
export interface Embedding {
  /**
   * One vector (pooled: mean / cls / last), the classifier's scores (rank), or one row per token
   * (pooling none).
   */
  readonly rows: readonly Float32Array[];
  /** The input's tokens. */
  readonly nTokens: number;
}

/** A sequence ready to decode. */
interface Seq {
  readonly tokens: readonly number[];
  readonly types: readonly number[] | undefined;
}

function tokensOf(ctx: Context, input: EmbedInput, i: number, addSpecial: boolean): Seq {
  if (typeof input === "string")
    return { tokens: ctx.model.tokenizer.encode(input, { addSpecial }), types: undefined };
  if (Array.isArray(input)) return { tokens: input as readonly number[], types: undefined };
  if (input !== null && typeof input === "object" && Array.isArray((input as { tokens?: unknown }).tokens)) {
    const o = input as { tokens: readonly number[]; tokenTypes?: readonly number[] };
    return { tokens: o.tokens, types: o.tokenTypes };
  }
  throw new EngineError(
    "INVALID_ARGUMENT",
    `embed: input ${i} must be a text, an array of token ids or { tokens }`,
  );
}

/** Normalises `v` in place as {@link EmbedOptions.normalize} says. */
export function normalizeEmbedding(v: Float32Array, norm: number): Float32Array {
  if (norm < 0) return v;
  let s = 0;
  if (norm === 0) {
    for (const x of v) s = Math.max(s, Math.abs(x));
    s /= 32760;
  } else if (norm === 2) {
    for (const x of v) s += x * x;
    s = Math.sqrt(s);
  } else {
    for (const x of v) s += Math.abs(x) ** norm;
    s = s ** (1 / norm);
  }
  const k = s > 0 ? 1 / s : 0;
  for (let i = 0; i < v.length; i++) v[i]! *= k;
  return v;
}

/** Batches are padded to a multiple of this many tokens (see embed). */
const PAD_TOKENS = 32;

/**
 * Which rows of a sequence of n tokens the pooling reads: every one (mean, none), the last (last;
 * rank of a decoder, whose last token has seen the pair, as llama.cpp's Qwen3 reranker), else the
 * first (cls; rank of an encoder).
 */
function wanted(pooling: Pooling, n: number, encoder: boolean): (k: number) => boolean {
  if (pooling === "mean" || pooling === "none") return () => true;
  if (pooling === "last" || (pooling === "rank" && !encoder)) return (k) => k === n - 1;
  return (k) => k === 0;
}

/** Pools one sequence's rows (row-major, `width` floats each). */
function pool(
  pooling: Pooling,
  rows: Float32Array,
  count: number,
  width: number,
  norm: number,
): Float32Array[] {
  if (pooling === "none")
    return Array.from({ length: count }, (_, r) => rows.slice(r * width, (r + 1) * width));
  if (pooling === "rank") return [rows.slice(0, width)];
  if (pooling !== "mean") return [normalizeEmbedding(rows.slice(0, width), norm)];
  const sum = new Float64Array(width);
  for (let r = 0; r < count; r++) for (let j = 0; j < width; j++) sum[j]! += rows[r * width + j]!;
  const out = new Float32Array(width);
  for (let j = 0; j < width; j++) out[j] = sum[j]! / count;
  return [normalizeEmbedding(out, norm)];
}

/**
 * The embeddings of `inputs` with a context made with `embeddings: true`, pooled as its `pooling`
 * says: as many inputs as fit go into one decode call (at most nSeqMax − 1 sequences and nUbatch
 * tokens; an encoder's input must fit one micro-batch), padded to a multiple of 32 tokens by a
 * sequence of its own so that few graphs serve every batch. Uses the context's sequences
 * 0…nSeqMax−1, which must be empty, and clears them again.
 */
export async function embed(
  ctx: Context,
  inputs: readonly EmbedInput[],
  o: EmbedOptions = {},
): Promise<Embedding[]> {
  const pooling = ctx.pooling;
  if (pooling === undefined)
    throw new EngineError("INVALID_ARGUMENT", "embed: make the Context with embeddings: true");
  if (!Array.isArray(inputs)) throw new EngineError("INVALID_ARGUMENT", "embed: inputs must be an array");
  const norm = o.normalize ?? 2;
  if (typeof norm !== "number" || !Number.isFinite(norm) || (norm < 0 && norm !== -1))
    throw new EngineError(
      "INVALID_ARGUMENT",
      `embed: normalize must be -1, 0 or a positive number, got ${String(norm)}`,
    );
  const seqs = inputs.map((x, i) => tokensOf(ctx, x, i, o.addSpecial ?? true));
  const encoder = ctx.model.arch.ENCODER === true;
  const limit = encoder ? ctx.nUbatch : ctx.nCtx;
  seqs.forEach((s, i) => {
    if (s.tokens.length === 0) throw new EngineError("INVALID_ARGUMENT", `embed: input ${i} has no tokens`);
    if (s.tokens.length > limit)
      throw new EngineError(
        "INVALID_ARGUMENT",
        `embed: input ${i} has ${s.tokens.length} tokens, more than the ${limit} ${encoder ? "of one micro-batch (nUbatch)" : "of the context"}`,
      );
  });
  for (let s = 0; s < ctx.nSeqMax; s++)
    if (ctx.seqCount(s) > 0)
      throw new EngineError(
        "INVALID_ARGUMENT",
        `embed: the context's sequence ${s} holds tokens; embed needs them empty`,
      );

  const width = ctx.outputWidth;
  const out: Embedding[] = new Array(seqs.length);
  let i = 0;
  while (i < seqs.length) {
    o.signal?.throwIfAborted();
    // As many whole inputs as fit one micro-batch (a longer decoder input goes alone), leaving one
    // sequence id for padding.
    const maxSeqs = ctx.nSeqMax > 1 ? ctx.nSeqMax - 1 : 1;
    let j = i;
    let n = 0;
    while (j < seqs.length && j - i < maxSeqs && (j === i || n + seqs[j]!.tokens.length <= ctx.nUbatch)) {
      n += seqs[j]!.tokens.length;
      j++;
    }
    // Padding to a multiple of PAD_TOKENS, in a sequence of its own whose rows are dropped: inputs of
    // every length then share a few graphs, where each new token count would build and prepare one.
    const padded =
      ctx.nSeqMax > j - i && n <= ctx.nUbatch
        ? Math.min(ctx.nUbatch, Math.ceil(n / PAD_TOKENS) * PAD_TOKENS)
        : n;
    const total = Math.max(n, padded);
    const tokens = new Int32Array(total);
    const seq = new Int32Array(total);
    const pos = new Int32Array(total);
    const want: boolean[] = new Array(total).fill(true);
    const types = seqs.slice(i, j).some((s) => s.types) ? new Int32Array(total) : undefined;
    let t = 0;
    for (let k = i; k < j; k++) {
      const s = seqs[k]!;
      if (s.types && s.types.length !== s.tokens.length)
        throw new EngineError(
          "INVALID_ARGUMENT",
          `embed: input ${k} has ${s.tokens.length} tokens and ${s.types.length} token types`,
        );
      for (let q = 0; q < s.tokens.length; q++, t++) {
        tokens[t] = s.tokens[q]!;
        seq[t] = k - i;
        pos[t] = q;
        if (types) types[t] = s.types?.[q] ?? 0;
      }
    }
    // (every row is read back, so the graph's outputs are the padded count too; token 0 pads)
    for (let q = 0; t < total; q++, t++) {
      seq[t] = j - i;
      pos[t] = q;
    }
    try {
      const logits = await ctx.decode({
        tokens,
        seq,
        pos,
        logits: want,
        ...(types ? { tokenTypes: types } : {}),
      });
      const data = logits.data;
      let row = 0;
      for (let k = i; k < j; k++) {
        const len = seqs[k]!.tokens.length;
        const w = wanted(pooling, len, encoder);
        const first = pooling === "mean" || pooling === "none" ? 0 : [0, len - 1].find((q) => w(q))!;
        const count = pooling === "mean" || pooling === "none" ? len : 1;
        const rows = data.subarray((row + first) * width, (row + first + count) * width);
        out[k] = { rows: pool(pooling, rows, count, width, norm), nTokens: len };
        row += len;
      }
    } finally {
      for (let s = 0; s <= j - i && s < ctx.nSeqMax; s++) ctx.seqRm(s);
    }
    i = j;
  }
  return out;
}
