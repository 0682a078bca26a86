// An importance matrix computed from a text, as llama.cpp's llama-imatrix does: the text's tokens
// cut into chunks of `chunkSize`, each decoded from an empty cache (its first token replaced by BOS
// when the model adds one), every token's logits asked for (so the last layer runs on every row);
// for every product with a weight of the file under `blk.` (and `output.weight` with
// `processOutput`), the sum over the activation rows of x² per input column, and the number of
// rows summed. Products of fewer than 16 rows are left out, as llama-imatrix leaves them out. A
// mixture-of-experts product sums each row into the expert it was routed to.
import { DType, dtypeName, type Tensor } from "@minfer/ir";
import type { WeightTap } from "@minfer/models";
import { Context, type ContextOptions } from "./context.js";
import { EngineError } from "./errors.js";
import type { Model } from "./model.js";

/** One weight's statistics: Σx² per column of each expert, and the rows each expert saw. */
export interface ImatrixEntry {
  /** Columns (the weight's row length). */
  readonly nCols: number;
  /** Float64 [nMat · nCols]: expert e's sums at [e·nCols, (e+1)·nCols). */
  readonly sums: Float64Array;
  /** Float64 [nMat]: activation rows summed per expert. */
  readonly counts: Float64Array;
}

export interface ImatrixResult {
  /** Weight tensor name → statistics, in the order the products were first seen. */
  readonly entries: Map<string, ImatrixEntry>;
  readonly chunks: number;
  readonly chunkSize: number;
  /** Perplexity over the second half of each chunk (as llama-imatrix prints it). */
  readonly perplexity: number;
}

export interface ImatrixOptions {
  /** Tokens per chunk (llama-imatrix's -c). Default 512. */
  readonly chunkSize?: number;
  /** At most this many chunks (default: every whole chunk of the text). */
  readonly chunks?: number;
  /** Also `output.weight` (llama-imatrix's --process-output). Default false. */
  readonly processOutput?: boolean;
  /** Micro-batch size. Default: the chunk size, at most 512. */
  readonly nUbatch?: number;
  /** The BOS token put in place of each chunk's first token (undefined: none). */
  readonly bos?: number;
  /**
   * Makes the context (given the options it needs: nCtx, nUbatch, onActivations), e.g. with a
   * CLI's settings added. Default: `new Context(model, options)`.
   */
  readonly newContext?: (options: ContextOptions) => Context;
  /** After each chunk: chunks done, the total, the running perplexity. */
  readonly onChunk?: (done: number, total: number, perplexity: number) => void;
}

/** Products of fewer rows than this are left out (llama-imatrix's rule). */
const MIN_ROWS = 16;

function f32View(bytes: Uint8Array): Float32Array {
  return bytes.byteOffset % 4 === 0
    ? new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)
    : new Float32Array(bytes.slice().buffer);
}

function i32View(bytes: Uint8Array): Int32Array {
  return bytes.byteOffset % 4 === 0
    ? new Int32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)
    : new Int32Array(bytes.slice().buffer);
}

/** Whether `t` is laid out densely in order (what the accumulation reads). */
function dense(t: Tensor): boolean {
  let stride = 4;
  for (let d = 0; d < 4; d++) {
    if (t.ne[d]! > 1 && t.nb[d] !== stride) return false;
    stride *= t.ne[d]!;
  }
  return true;
}

/** Accumulates the taps of micro-batches into entries. */
export class ImatrixAccumulator {
  readonly entries = new Map<string, ImatrixEntry>();

  constructor(readonly processOutput = false) {}

  /** Whether a weight is summed (llama-imatrix: `blk.*`, and `output.weight` when asked). */
  wanted(weight: string): boolean {
    return weight.startsWith("blk.") || (this.processOutput && weight === "output.weight");
  }

  add(taps: readonly WeightTap[], values: ReadonlyMap<Tensor, Uint8Array>): void {
    for (const tap of taps) {
      if (!this.wanted(tap.weight)) continue;
      const x = tap.input;
      if (x.dtype !== DType.F32 || !dense(x))
        throw new EngineError(
          "INTERNAL",
          `imatrix: the activations of ${tap.weight} are ${dtypeName(x.dtype)} [${x.ne.join(", ")}] with strides ` +
            `[${x.nb.join(", ")}]; only dense F32 is summed`,
        );
      const bytes = values.get(x);
      if (!bytes) throw new EngineError("INTERNAL", `imatrix: no value for the activations of ${tap.weight}`);
      const nCols = x.ne[0]!;
      const rows = x.ne[1]! * x.ne[2]! * x.ne[3]!;
      const data = f32View(bytes);
      if (data.length < nCols * rows)
        throw new EngineError(
          "INTERNAL",
          `imatrix: ${data.length} values for the activations of ${tap.weight}, expected ${nCols * rows}`,
        );
      if (tap.ids) this.#addExperts(tap, nCols, data, values);
      else {
        if (rows < MIN_ROWS) continue;
        const e = this.#entry(tap.weight, nCols, 1);
        const acc = e.sums;
        for (let r = 0; r < rows; r++) {
          const o = r * nCols;
          for (let j = 0; j < nCols; j++) {
            const v = data[o + j]!;
            acc[j] = acc[j]! + v * v;
          }
        }
        e.counts[0] = e.counts[0]! + rows;
      }
    }
  }

  #addExperts(tap: WeightTap, nCols: number, data: Float32Array, values: ReadonlyMap<Tensor, Uint8Array>) {
    const ids = i32View(values.get(tap.ids!) ?? new Uint8Array(0));
    const slots = tap.ids!.ne[0]!;
    const tokens = tap.ids!.ne[1]!;
    if (ids.length < slots * tokens)
      throw new EngineError("INTERNAL", `imatrix: no expert ids for ${tap.weight}`);
    const xSlots = tap.input.ne[1]!; // slots, or 1 (every slot reads the token's one row)
    const e = this.#entry(tap.weight, nCols, tap.nMat);
    for (let t = 0; t < tokens; t++)
      for (let s = 0; s < slots; s++) {
        const ex = ids[t * slots + s]!;
        if (!(ex >= 0 && ex < tap.nMat))
          throw new EngineError(
            "INTERNAL",
            `imatrix: expert id ${ex} of ${tap.weight} outside 0…${tap.nMat - 1}`,
          );
        const o = (t * xSlots + (xSlots === 1 ? 0 : s)) * nCols;
        const acc = ex * nCols;
        for (let j = 0; j < nCols; j++) {
          const v = data[o + j]!;
          e.sums[acc + j] = e.sums[acc + j]! + v * v;
        }
        e.counts[ex] = e.counts[ex]! + 1;
      }
  }

  #entry(weight: string, nCols: number, nMat: number): ImatrixEntry {
    let e = this.entries.get(weight);
    if (!e) {
      e = { nCols, sums: new Float64Array(nCols * nMat), counts: new Float64Array(nMat) };
      this.entries.set(weight, e);
    } else if (e.nCols !== nCols || e.counts.length !== nMat)
      throw new EngineError(
        "INTERNAL",
        `imatrix: ${weight} multiplies rows of ${nCols} (${nMat} experts) here and of ${e.nCols} ` +
          `(${e.counts.length}) elsewhere`,
      );
    return e;
  }
}

/** log Σ exp(row) − row[target], the token's negative log-likelihood. */
function nll(row: Float32Array, target: number): number {
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < row.length; i++) if (row[i]! > max) max = row[i]!;
  let sum = 0;
  for (let i = 0; i < row.length; i++) sum += Math.exp(row[i]! - max);
  return Math.log(sum) + max - row[target]!;
}

/**
 * The importance matrix of `model` over `tokens` (see the top of this file). Needs at least two
 * chunks' worth of tokens, as llama-imatrix does.
 */
export async function collectImatrix(
  model: Model,
  tokens: ArrayLike<number>,
  options: ImatrixOptions = {},
): Promise<ImatrixResult> {
  const chunkSize = options.chunkSize ?? 512;
  if (!Number.isInteger(chunkSize) || chunkSize < MIN_ROWS)
    throw new EngineError(
      "INVALID_ARGUMENT",
      `imatrix: the chunk size must be an integer ≥ ${MIN_ROWS}, got ${chunkSize}`,
    );
  if (tokens.length < 2 * chunkSize)
    throw new EngineError(
      "INVALID_ARGUMENT",
      `imatrix: the text is ${tokens.length} tokens; chunks of ${chunkSize} need at least ${2 * chunkSize}`,
    );
  const whole = Math.floor(tokens.length / chunkSize);
  const chunks = options.chunks === undefined ? whole : Math.min(options.chunks, whole);
  if (!Number.isInteger(chunks) || chunks < 1)
    throw new EngineError(
      "INVALID_ARGUMENT",
      `imatrix: chunks must be a positive integer, got ${options.chunks}`,
    );
  const acc = new ImatrixAccumulator(options.processOutput ?? false);
  const ctxOptions: ContextOptions = {
    nCtx: chunkSize,
    nUbatch: options.nUbatch ?? Math.min(512, chunkSize),
    onActivations: (taps, values) => acc.add(taps, values),
  };
  const ctx = options.newContext ? options.newContext(ctxOptions) : new Context(model, ctxOptions);
  let nllSum = 0;
  let counted = 0;
  try {
    for (let c = 0; c < chunks; c++) {
      const ids = Array.from({ length: chunkSize }, (_, i) => tokens[c * chunkSize + i]!);
      if (options.bos !== undefined) ids[0] = options.bos;
      ctx.clear();
      const logits = await ctx.decode({ tokens: ids, logits: "all" });
      for (let i = Math.floor(chunkSize / 2); i < chunkSize - 1; i++) {
        nllSum += nll(logits.get(i), tokens[c * chunkSize + i + 1]!);
        counted++;
      }
      options.onChunk?.(c + 1, chunks, Math.exp(nllSum / counted));
    }
  } finally {
    ctx.dispose();
  }
  return { entries: acc.entries, chunks, chunkSize, perplexity: Math.exp(nllSum / Math.max(1, counted)) };
}
