import type { Tensor } from "@minfer/ir";
import type { KvToken } from "@minfer/kvcache";
import { type KvGroup, kvInputNames, STEP_INPUTS, TOKEN_TYPES_INPUT } from "@minfer/models";
import type { TimingReport } from "@minfer/scheduler";
import type { NormalizedBatch } from "./batch.js";
import type { ActivationSink } from "./context.js";
import { EngineError } from "./errors.js";
import { type GraphParams, runStep, type Step } from "./graph-params.js";
import { KV_BUCKET, type KvGroupCache, type KvStore } from "./kv-store.js";

/** What one micro-batch gives back. */
export interface UbatchResult {
  /** Indices (in the micro-batch) of the tokens whose logits are in `logits`. */
  readonly outIds: Int32Array;
  /** Empty when only the candidates were read (`readRows` false). */
  readonly logits: Float32Array;
  /** With candidates: I32 [candidates, rows] for the rows of `logits` (undefined without). */
  readonly candidates: Int32Array | undefined;
  /** With candidates: F32 [candidates, rows], the logits of `candidates`. */
  readonly candidateLogits: Float32Array | undefined;
  /** Reads row r of this micro-batch's logits from the device (valid until the next run). */
  readonly fetchRow: (r: number) => Promise<Float32Array>;
  readonly computeMs: number;
  readonly report?: TimingReport;
}

/** Bytes as F32 (a view when aligned). */
function f32(bytes: Uint8Array): Float32Array {
  return bytes.byteOffset % 4 === 0
    ? new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)
    : new Float32Array(bytes.slice().buffer);
}

/** The graphs' KV window of a cache: every used cell, rounded up to a multiple of KV_BUCKET. */
export function kvWindow(g: KvGroupCache): number {
  const nCtx = g.cache.nCtx;
  return Math.min(nCtx, Math.max(KV_BUCKET, Math.ceil(g.cache.window() / KV_BUCKET) * KV_BUCKET));
}

/** The smallest KV window of a one-token step's graph with spans, in cells. */
export const SPAN_MIN_WINDOW = 256;

/**
 * The KV window of a one-token step's graph with spans: every used cell, rounded up to a power of
 * two of at least {@link SPAN_MIN_WINDOW}, at most the cache. A sequence's steps then have graphs
 * over the cells in use rather than the whole context, so a backend sizes their attention (its
 * kernel, its splits) for those; a context of N cells goes through about log2(N / 256) such graphs.
 * (Steps of several tokens span the whole cache: one graph a token count, as prepareDecode builds.)
 */
export function spanWindow(g: KvGroupCache): number {
  const nCtx = g.cache.nCtx;
  const used = g.cache.window();
  let w = SPAN_MIN_WINDOW;
  while (w < used && w < nCtx) w *= 2;
  return Math.min(nCtx, w);
}

/** Where the rows of one micro-batch's outputs go (views of at least their bytes; undefined: new arrays). */
export interface OutputsInto {
  readonly logits?: Uint8Array;
  readonly candidates?: Uint8Array;
  readonly candidateLogits?: Uint8Array;
}

/**
 * Runs micro-batches: finds cells in every KV cache, writes each cache's visibility (spans when
 * every query's cells are one run, else a mask over its used window), looks the graph up by those
 * parameters and fills its inputs by name. Keeps the mask and span buffers between calls.
 */
export class UbatchRunner {
  readonly #masks = new Map<KvGroup, Float32Array>();
  readonly #spans = new Map<KvGroup, Int32Array>();

  /**
   * `invariant` (ContextOptions.batchInvariant): every micro-batch is batch-invariant, one token
   * too, and attends over the whole cache (a window the other sequences' cells do not move).
   */
  constructor(
    readonly store: KvStore,
    readonly get: (p: GraphParams) => Step,
    readonly onActivations?: ActivationSink,
    readonly invariant = false,
  ) {}

  /**
   * One micro-batch [i0, i1) of `b`. `outputsInto(step, rows)`, when given, says where the rows of
   * logits it asked for go (a view of at least rows·nVocab floats), their candidate ids (rows·k
   * int32) and those ids' logits (rows·k floats); undefined: new arrays. `readRows` false: the
   * logits rows stay on the device (only the candidates are read).
   */
  async run(
    b: NormalizedBatch,
    i0: number,
    i1: number,
    done: KvToken[],
    outputsInto?: (s: Step, rows: number) => OutputsInto,
    readRows = true,
  ): Promise<UbatchResult> {
    const n = i1 - i0;
    const store = this.store;
    const batch: KvToken[] = new Array(n);
    for (let k = 0; k < n; k++) batch[k] = { pos: b.pos[i0 + k]!, seqIds: b.seqIds[i0 + k]! };
    const empty = batch.map((t) => t.seqIds.map((s) => store.primary.seqCount(s) === 0));
    const slot = store.allocate(batch);
    if (!slot.ok)
      throw new EngineError(
        "NO_KV_ROOM",
        `decode: no KV room for ${n} more tokens (${slot.free} free cells)`,
      );
    done.push(...batch);
    let outCount = 0;
    for (let k = i0; k < i1; k++) outCount += b.wantLogits[k]!;
    // A graph always computes at least one row of logits; without a request it is dropped.
    const outIds = new Int32Array(Math.max(1, outCount));
    if (outCount === 0) outIds[0] = n - 1;
    else for (let k = i0, j = 0; k < i1; k++) if (b.wantLogits[k]) outIds[j++] = k - i0;

    const values: Record<string, ArrayBufferView> = {
      [STEP_INPUTS.tokens]: b.tokens.subarray(i0, i1),
      [STEP_INPUTS.positions]: b.pos.subarray(i0, i1),
      [STEP_INPUTS.outIds]: outIds,
      // (only an encoder's graph has this input; the others ignore the value)
      [TOKEN_TYPES_INPUT]: b.tokenTypes?.subarray(i0, i1) ?? new Int32Array(n),
    };
    const window: Partial<Record<KvGroup, { nKv: number; spans: boolean }>> = {};
    store.groups.forEach((g, gi) => {
      const cells = slot.cells[gi]!;
      const names = kvInputNames(g.group);
      values[names.cells] = cells;
      window[g.group] = this.#visibility(g, batch, cells, values, names, b.batchInvariant);
    });
    const params: GraphParams = {
      kind: "decode",
      nTokens: n,
      nKv: window.full?.nKv ?? 0,
      nOutputs: outIds.length,
      spans: window.full?.spans ?? window.swa?.spans ?? false,
      ...(window.swa ? { nKvSwa: window.swa.nKv, spansSwa: window.swa.spans } : {}),
      // (one token is its own batch: no second graph for it, unless every step is invariant)
      ...(this.invariant || (b.batchInvariant && n > 1) ? { batchInvariant: true } : {}),
    };
    const s = this.get(params);
    const c0 = performance.now();
    const into = outCount > 0 && s.built.logits ? outputsInto?.(s, outCount) : undefined;
    const intoMap = new Map<Tensor, Uint8Array>();
    if (into?.logits && readRows) intoMap.set(s.built.logits!, into.logits);
    if (into?.candidates && s.built.candidates) intoMap.set(s.built.candidates, into.candidates);
    if (into?.candidateLogits && s.built.candidateLogits)
      intoMap.set(s.built.candidateLogits, into.candidateLogits);
    const skip = readRows ? undefined : new Set([s.built.logits!]);
    const result = await runStep(s, values, intoMap.size > 0 ? intoMap : undefined, skip);
    const computeMs = performance.now() - c0;
    if (this.onActivations && s.built.taps) this.onActivations(s.built.taps, result.outputs, n);
    for (let k = 0; k < n; k++) {
      const t = batch[k]!;
      for (let j = 0; j < t.seqIds.length; j++)
        store.history.record(t.seqIds[j]!, t.pos, b.tokens[i0 + k]!, empty[k]![j]!);
    }
    const logits = readRows ? f32(result.outputs.get(s.built.logits!)!) : new Float32Array(0);
    const ids = s.built.candidates ? result.outputs.get(s.built.candidates)! : undefined;
    const candidates =
      ids === undefined
        ? undefined
        : ids.byteOffset % 4 === 0
          ? new Int32Array(ids.buffer, ids.byteOffset, ids.byteLength / 4)
          : new Int32Array(ids.slice().buffer);
    const cl = s.built.candidateLogits ? result.outputs.get(s.built.candidateLogits) : undefined;
    const nVocab = s.built.logits!.ne[0];
    const fetchRow = async (r: number): Promise<Float32Array> =>
      f32(await s.step.executor.readOutput(s.built.logits!, { offset: r * nVocab * 4, bytes: nVocab * 4 }));
    return {
      outIds: outCount === 0 ? new Int32Array(0) : outIds,
      logits,
      candidates,
      candidateLogits: cl ? f32(cl) : undefined,
      fetchRow,
      computeMs,
      ...(result.timing ? { report: result.timing } : {}),
    };
  }

  /**
   * One cache's visibility: spans (2 integers per query) when each query's cells are one run, as
   * in a single sequence filled in order — attention then visits only those cells, so the graph can
   * span the whole cache and one graph serves every step of that many tokens (one token: the used
   * cells' power-of-two window, {@link spanWindow}; a batch-invariant step of several tokens too,
   * so that a backend sizes each token's attention as a one-token step of it: CUDA's kernel choice
   * and splits follow the window). Else a mask of nKv floats per query over the used cells rounded
   * up to a bucket (graphs are shared within a bucket).
   */
  #visibility(
    g: KvGroupCache,
    batch: KvToken[],
    cells: Int32Array,
    values: Record<string, ArrayBufferView>,
    names: { mask: string; spans: string },
    invariant: boolean,
  ): { nKv: number; spans: boolean } {
    const n = batch.length;
    const sliding = { ...(g.window > 0 ? { slidingWindow: g.window } : {}), causal: g.causal };
    let spanBuf = this.#spans.get(g.group);
    if (!spanBuf || spanBuf.length < 2 * n) {
      spanBuf = new Int32Array(2 * n);
      this.#spans.set(g.group, spanBuf);
    }
    const spanKv = this.invariant ? g.cache.nCtx : n === 1 || invariant ? spanWindow(g) : g.cache.nCtx;
    const spans = g.cache.spans(batch, cells, { nKv: spanKv, out: spanBuf, ...sliding });
    if (spans) {
      values[names.spans] = spans.subarray(0, 2 * n);
      return { nKv: spanKv, spans: true };
    }
    const nKv = this.invariant ? g.cache.nCtx : kvWindow(g);
    let mask = this.#masks.get(g.group);
    if (!mask || mask.length < nKv * n) {
      mask = new Float32Array(nKv * n);
      this.#masks.set(g.group, mask);
    }
    values[names.mask] = g.cache
      .mask(batch, cells, { nKv, dtype: "f32", out: mask, ...sliding })
      .subarray(0, nKv * n);
    return { nKv, spans: false };
  }
}
