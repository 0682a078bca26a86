import {
  type BackendBuffer,
  type DeviceRuntime,
  type DType,
  fuse,
  type Graph,
  type Tensor,
} from "@minfer/ir";
import {
  KvCache,
  KvCacheError,
  type KvDtype,
  kvDtypeId,
  parseKvDtype,
  readSequenceState,
} from "@minfer/kvcache";
import { type BuiltGraph, buildKvMove, buildKvShift, type KvGraph, llama3RopeFreqs } from "@minfer/models";
import {
  GraphCache,
  type PreparedGraph,
  Scheduler,
  SchedulerError,
  type TensorBinding,
  type TimingReport,
} from "@minfer/scheduler";
import { type Batch, type NormalizedBatch, normalizeBatch } from "./batch.js";
import { contextSize, DEFAULT_N_UBATCH } from "./context-size.js";
import { EngineError } from "./errors.js";
import { KvHistory } from "./kv-history.js";
import { Logits } from "./logits.js";
import type { Model } from "./model.js";
import { readSequenceData, type SequenceRows, writeSequenceData } from "./sequence-state.js";

/** Options of {@link Context}. */
export interface ContextOptions {
  /** KV cells (the context window, shared by all sequences). Default: min(4096, the model's training context); 0: the training context. */
  readonly nCtx?: number;
  /** Most tokens one graph runs; a longer batch is cut into micro-batches. Default: min(512, nCtx). */
  readonly nUbatch?: number;
  /** Sequence ids are 0…nSeqMax-1. Default: 1. */
  readonly nSeqMax?: number;
  /** Element type of the K/V cache: "f16" (default), "f32" or "q8_0". */
  readonly kvDtype?: KvDtype;
  /** Measure every op of every decode (see {@link Context.lastTiming}). Default: false. */
  readonly profile?: boolean;
  /**
   * One cache shared by all sequences (default true). With false (llama.cpp's non-unified cache)
   * each sequence owns nCtx / nSeqMax cells, so a batch mixing sequences still attends over each
   * one's own run of cells (spans) instead of a mask over all of them; nCtx must then be a
   * multiple of nSeqMax, and defrag is not available.
   */
  readonly kvUnified?: boolean;
  /**
   * Apply @minfer/ir's fusions (RMS_NORM_MUL, MUL_MAT_MULTI, MUL_MAT_ADD) to the decode graphs: fewer kernel
   * launches and passes over memory, the same values (the fused kernels keep the unfused order of
   * operations). Default: true.
   */
  readonly fuse?: boolean;
}

/** The graph-cache key: the parameters that decide a graph's topology. */
export interface GraphParams {
  readonly kind: "decode" | "shift" | "move";
  readonly nTokens: number;
  /** The KV window, a multiple of {@link KV_BUCKET} (or nCtx). */
  readonly nKv: number;
  readonly nOutputs: number;
  /** Attention visibility as spans (each query's cells are one run) instead of a mask. */
  readonly spans?: boolean;
}

/** Where the time of the last decode went (milliseconds). */
export interface DecodeTiming {
  /** Whole decode call. */
  readonly totalMs: number;
  /** Inside the backends' execute calls (graph compute). */
  readonly computeMs: number;
  /** Micro-batches run. */
  readonly ubatches: number;
  /** With `profile` on: the per-op timing of each micro-batch's graph. */
  readonly reports?: readonly TimingReport[];
}

/** KV windows are rounded up to a multiple of this, so decode steps share graphs. */
export const KV_BUCKET = 32;

interface Built {
  readonly graph: Graph;
  readonly inputs: Readonly<Record<string, Tensor | undefined>>;
  readonly logits?: Tensor;
}

/**
 * The graph with @minfer/ir's fusions applied (rms_norm·w, q/k/v and gate/up products sharing
 * their input, a product and the residual or bias added to it); its inputs and logits found again
 * by name in the rewritten graph.
 */
function fused(b: Built): Built {
  const graph = fuse(b.graph);
  const byName = new Map<string, Tensor>();
  for (const t of graph.tensors) if (t.kind === "input" || graph.outputs.includes(t)) byName.set(t.name, t);
  const find = (t: Tensor | undefined) => {
    if (!t) return undefined;
    const n = byName.get(t.name);
    if (!n) throw new EngineError("INTERNAL", `fusion lost the graph tensor "${t.name}"`);
    return n;
  };
  const inputs: Record<string, Tensor | undefined> = {};
  for (const [k, t] of Object.entries(b.inputs)) inputs[k] = find(t);
  return { graph, inputs, ...(b.logits ? { logits: find(b.logits) } : {}) };
}

/**
 * One inference context over a model: a KV cache with its K/V state buffers, a scheduler whose
 * arenas are reserved once for the worst case, and a cache of prepared graphs. Calls are run one
 * at a time (a call made while another runs waits for it).
 */
export class Context {
  readonly nCtx: number;
  readonly nUbatch: number;
  readonly nSeqMax: number;
  readonly kvDtype: KvDtype;
  readonly kv: KvCache;
  readonly graphs: GraphCache<GraphParams>;
  readonly model: Model;
  readonly #scheduler: Scheduler;
  readonly #states = new Map<string, TensorBinding>();
  readonly #stateBytes = new Map<string, number>();
  /** The K/V state buffer of each device holding layers (one per device). */
  readonly #kvBuffers = new Map<string, { runtime: DeviceRuntime; buffer: BackendBuffer }>();
  readonly #built = new WeakMap<Graph, Built>();
  readonly #ropeFreqs: Float32Array | undefined;
  readonly #kvType: DType;
  readonly #fuse: boolean;
  readonly #history = new KvHistory();
  #queue: Promise<unknown> = Promise.resolve();
  #mask = new Float32Array(0);
  #spans = new Int32Array(0);
  #disposed = false;
  #timing: DecodeTiming = { totalMs: 0, computeMs: 0, ubatches: 0 };

  constructor(model: Model, options: ContextOptions = {}) {
    this.model = model;
    this.#fuse = options.fuse ?? true;
    const hp = model.hparams;
    const positive = (v: unknown, what: string): number => {
      if (typeof v !== "number" || !Number.isInteger(v) || v < 1)
        throw new EngineError("INVALID_ARGUMENT", `${what} must be a positive integer, got ${String(v)}`);
      return v;
    };
    this.nCtx = positive(contextSize(options.nCtx, hp.nCtxTrain), "nCtx");
    this.nUbatch = Math.min(positive(options.nUbatch ?? DEFAULT_N_UBATCH, "nUbatch"), this.nCtx);
    this.nSeqMax = positive(options.nSeqMax ?? 1, "nSeqMax");
    try {
      this.kvDtype = parseKvDtype(options.kvDtype ?? "f16");
    } catch (e) {
      throw new EngineError("INVALID_ARGUMENT", `kvDtype: ${(e as Error).message}`, { cause: e });
    }
    this.#kvType = kvDtypeId(this.kvDtype);
    if (this.kvDtype === "q8_0" && (hp.headDimK % 32 !== 0 || hp.headDimV % 32 !== 0))
      throw new EngineError(
        "INVALID_ARGUMENT",
        `kvDtype "q8_0" needs head sizes that are multiples of 32 (whole Q8_0 blocks per head); ` +
          `this model's are ${hp.headDimK} (K) and ${hp.headDimV} (V): use "f16"`,
      );
    if (options.kvUnified === false && this.nCtx % this.nSeqMax !== 0)
      throw new EngineError(
        "INVALID_ARGUMENT",
        `kvUnified: false gives each of the ${this.nSeqMax} sequences nCtx / nSeqMax cells; nCtx ${this.nCtx} is not a multiple`,
      );
    this.kv = new KvCache({
      nCtx: this.nCtx,
      nSeqMax: this.nSeqMax,
      dtype: this.kvDtype,
      seqRegions: options.kvUnified === false,
    });
    const placement = model.placement;
    const worst = this.#build({
      kind: "decode",
      nTokens: this.nUbatch,
      nKv: this.nCtx,
      nOutputs: Math.min(this.nUbatch, this.nSeqMax),
    });
    // The K/V state tensors of the layers on one device share one buffer there (256-byte aligned
    // offsets): a program then names one buffer for its device's cache instead of two per layer.
    const align = (n: number) => Math.ceil(n / 256) * 256;
    const layouts = new Map<
      string,
      { runtime: DeviceRuntime; bytes: number; names: [string, number, number][] }
    >();
    for (const t of worst.graph.tensors) {
      if (t.kind !== "state") continue;
      const name = t.source ?? t.name;
      const runtime = placement.state(name);
      const l = layouts.get(runtime.device.name) ?? { runtime, bytes: 0, names: [] };
      const size = t.nb[1] * t.ne[1];
      l.names.push([name, l.bytes, size]);
      l.bytes = align(l.bytes + size);
      layouts.set(runtime.device.name, l);
    }
    try {
      for (const [device, l] of layouts) {
        const buffer = l.runtime.allocate(Math.max(l.bytes, 256), `kv-cache:${device}`);
        this.#kvBuffers.set(device, { runtime: l.runtime, buffer });
        for (const [name, offset, size] of l.names) {
          this.#states.set(name, { buffer, offset });
          this.#stateBytes.set(name, size);
        }
      }
    } catch (e) {
      for (const { buffer } of this.#kvBuffers.values()) buffer.dispose();
      throw e;
    }
    this.#ropeFreqs = worst.inputs.ropeFreqs ? llama3RopeFreqs(hp) : undefined;
    this.#scheduler = new Scheduler({
      runtimes: placement.runtimes(),
      weights: model.weights,
      states: this.#states,
      profile: options.profile ?? false,
    });
    const step = this.#build({ kind: "decode", nTokens: 1, nKv: this.nCtx, nOutputs: 1 });
    this.#scheduler.reserve([worst.graph, step.graph]);
    this.graphs = new GraphCache<GraphParams>({
      build: (p) => this.#build(p).graph,
      prepare: (g) => this.#prepare(g),
      maxEntries: 64,
    });
  }

  #build(p: GraphParams): Built {
    const hp = this.model.hparams;
    const layout = { nCtx: this.nCtx, kvDtype: this.#kvType };
    let built: Built;
    if (p.kind === "shift") {
      const g: KvGraph = buildKvShift(hp, this.model.arch.FEATURES, {
        ...layout,
        nCells: p.nTokens,
        tensors: this.model.tensors,
      });
      built = g;
    } else if (p.kind === "move") {
      built = buildKvMove(hp, { ...layout, nCells: p.nTokens });
    } else {
      const g: BuiltGraph = this.model.arch.buildGraph(hp, {
        nTokens: p.nTokens,
        nKv: p.nKv,
        nOutputs: p.nOutputs,
        spans: p.spans ?? false,
        nCtx: this.nCtx,
        kvDtype: this.#kvType,
        tensors: this.model.tensors,
      });
      built = { graph: g.graph, inputs: { ...g.inputs }, logits: g.logits };
      if (this.#fuse) built = fused(built);
    }
    this.#built.set(built.graph, built);
    return built;
  }

  /** Prepares a graph; one larger than the reserved arena grows it (rare: many outputs, big moves). */
  #prepare(graph: Graph): PreparedGraph {
    try {
      return this.#scheduler.prepare(graph);
    } catch (e) {
      if (!(e instanceof SchedulerError) || e.code !== "ARENA_TOO_SMALL") throw e;
      this.#scheduler.reserve([graph]);
      return this.#scheduler.prepare(graph);
    }
  }

  #get(p: GraphParams): { step: PreparedGraph; built: Built } {
    const step = this.graphs.get(p);
    return { step, built: this.#built.get(step.graph)! };
  }

  /** Runs `f` after every earlier call on this context has finished. */
  #serial<T>(f: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(() => {
      if (this.#disposed) throw new EngineError("DISPOSED", "the context was disposed");
      return f();
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** Timing of the last decode call. */
  get lastTiming(): DecodeTiming {
    return this.#timing;
  }

  /**
   * Decodes a batch: writes each token's K/V into the cache (cells found by the KV cache) and
   * returns the logits of the tokens that asked for them. A batch longer than nUbatch runs as
   * several graphs. When anything fails, the batch's tokens are removed from the cache again.
   */
  decode(batch: Batch): Promise<Logits> {
    return this.#serial(() => this.#decode(batch));
  }

  /**
   * Builds and prepares, ahead of use, the decode graphs of steps of `sizes` tokens that each want
   * logits and attend by spans — what a server steps while 1…N streams generate — so that a step of
   * a new size does not wait for it. Runs after earlier calls, like {@link decode}. Sizes are
   * integers in 1…nUbatch; a context whose steps need a mask instead of spans (several sequences in
   * one unified cache) gains nothing from it.
   */
  prepareDecode(sizes: Iterable<number>): Promise<void> {
    const list = [...sizes];
    for (const n of list)
      if (!Number.isInteger(n) || n < 1 || n > this.nUbatch)
        throw new EngineError(
          "INVALID_ARGUMENT",
          `prepareDecode: sizes must be integers in 1…${this.nUbatch}, got ${n}`,
        );
    return this.#serial(async () => {
      for (const n of list)
        this.#get({ kind: "decode", nTokens: n, nKv: this.nCtx, nOutputs: n, spans: true });
    });
  }

  /** Decodes `tokens` appended to sequence `seq`; returns the last token's logits. */
  async eval(tokens: ArrayLike<number>, seq = 0): Promise<Float32Array> {
    return (await this.decode({ tokens, seq, logits: "last" })).last();
  }

  async #decode(input: Batch): Promise<Logits> {
    const t0 = performance.now();
    const nVocab = this.model.hparams.nVocab;
    const b = normalizeBatch(input, nVocab, this.nSeqMax, (s) => this.kv.seqPosMax(s));
    const n = b.tokens.length;
    const free = this.nCtx - this.kv.used();
    if (n > free)
      throw new EngineError(
        "NO_KV_ROOM",
        `decode: no KV room for ${n} more tokens (context of ${this.nCtx} cells, ${this.kv.used()} used); ` +
          "remove tokens (seqRm) or make a Context with a larger nCtx",
      );
    await this.#applyShift();
    let nOut = 0;
    for (let i = 0; i < n; i++) nOut += b.wantLogits[i]!;
    const indices = new Int32Array(nOut);
    // One micro-batch: its logits output becomes the result as is (no copy); several: gathered.
    let data: Float32Array | undefined = n <= this.nUbatch ? undefined : new Float32Array(nOut * nVocab);
    let row = 0;
    let computeMs = 0;
    let ubatches = 0;
    const reports: TimingReport[] = [];
    const done: { pos: number; seqIds: readonly number[] }[] = [];
    try {
      for (let i0 = 0; i0 < n; i0 += this.nUbatch) {
        const i1 = Math.min(n, i0 + this.nUbatch);
        const r = await this.#ubatch(b, i0, i1, done);
        computeMs += r.computeMs;
        ubatches++;
        if (r.report) reports.push(r.report);
        if (data === undefined) data = r.logits.subarray(0, r.outIds.length * nVocab);
        else data.set(r.logits.subarray(0, r.outIds.length * nVocab), row * nVocab);
        for (let k = 0; k < r.outIds.length; k++) indices[row++] = i0 + r.outIds[k]!;
      }
    } catch (e) {
      for (const t of done) for (const s of t.seqIds) this.kv.seqRm(s, t.pos, t.pos + 1);
      for (const t of done) for (const s of t.seqIds) this.#history.forget(s);
      throw e;
    }
    this.#timing = {
      totalMs: performance.now() - t0,
      computeMs,
      ubatches,
      ...(reports.length ? { reports } : {}),
    };
    return new Logits(nVocab, indices, data ?? new Float32Array(0));
  }

  async #ubatch(
    b: NormalizedBatch,
    i0: number,
    i1: number,
    done: { pos: number; seqIds: readonly number[] }[],
  ): Promise<{ outIds: Int32Array; logits: Float32Array; computeMs: number; report?: TimingReport }> {
    const n = i1 - i0;
    const batch = Array.from({ length: n }, (_, k) => ({ pos: b.pos[i0 + k]!, seqIds: b.seqIds[i0 + k]! }));
    const empty = batch.map((t) => t.seqIds.map((s) => this.kv.seqCount(s) === 0));
    let slot: ReturnType<KvCache["allocate"]>;
    try {
      slot = this.kv.allocate(batch);
    } catch (e) {
      if (e instanceof KvCacheError)
        throw new EngineError("INVALID_ARGUMENT", `decode: ${e.message}`, { cause: e });
      throw e;
    }
    if (slot.status !== "ok")
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

    // Spans (2 integers per query) when each query's cells are one run, as in a single sequence
    // filled in order: attention then visits only those cells, so the graph can span the whole
    // cache and one graph serves every step. Else a mask of nKv floats per query, over the used
    // cells rounded up to a bucket (graphs are shared within a bucket).
    if (this.#spans.length < 2 * n) this.#spans = new Int32Array(2 * n);
    let nKv = this.nCtx;
    let mask: Float32Array | Int32Array | null = this.kv.spans(batch, slot.cells, { nKv, out: this.#spans });
    const spans = mask !== null;
    if (mask) mask = mask.subarray(0, 2 * n);
    else {
      nKv = this.#window();
      const need = nKv * n;
      if (this.#mask.length < need) this.#mask = new Float32Array(need);
      mask = this.kv.mask(batch, slot.cells, { nKv, dtype: "f32", out: this.#mask }).subarray(0, need);
    }
    const { step, built } = this.#get({ kind: "decode", nTokens: n, nKv, nOutputs: outIds.length, spans });
    const inp = built.inputs;
    const data = new Map<Tensor, ArrayBufferView>([
      [inp.tokens!, b.tokens.subarray(i0, i1)],
      [inp.positions!, b.pos.subarray(i0, i1)],
      [inp.cells!, slot.cells],
      [inp.mask!, mask],
      [inp.outIds!, outIds],
    ]);
    if (inp.ropeFreqs && this.#ropeFreqs) data.set(inp.ropeFreqs, this.#ropeFreqs);
    const c0 = performance.now();
    const result = await step.executor.run(data);
    const computeMs = performance.now() - c0;
    for (let k = 0; k < n; k++) {
      const t = batch[k]!;
      for (let j = 0; j < t.seqIds.length; j++)
        this.#history.record(t.seqIds[j]!, t.pos, b.tokens[i0 + k]!, empty[k]![j]!);
    }
    const bytes = result.outputs.get(built.logits!)!;
    const logits =
      bytes.byteOffset % 4 === 0
        ? new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)
        : new Float32Array(bytes.slice().buffer);
    return {
      outIds: outCount === 0 ? new Int32Array(0) : outIds,
      logits,
      computeMs,
      ...(result.timing ? { report: result.timing } : {}),
    };
  }

  /** The graphs' KV window: every used cell, rounded up to a multiple of KV_BUCKET. */
  #window(): number {
    return Math.min(this.nCtx, Math.max(KV_BUCKET, Math.ceil(this.kv.window() / KV_BUCKET) * KV_BUCKET));
  }

  /** Re-ropes K of the cells seqAdd/seqDiv moved, before anything attends over them. */
  async #applyShift(): Promise<void> {
    if (!this.kv.hasShift()) return;
    const deltas = this.kv.consumeShift();
    const nCells = this.#window();
    const cells = Int32Array.from({ length: nCells }, (_, i) => i);
    const { step, built } = this.#get({ kind: "shift", nTokens: nCells, nKv: 0, nOutputs: 0 });
    const data = new Map<Tensor, ArrayBufferView>([
      [built.inputs.cells!, cells],
      [built.inputs.deltas!, deltas.subarray(0, nCells)],
    ]);
    if (built.inputs.ropeFreqs && this.#ropeFreqs) data.set(built.inputs.ropeFreqs, this.#ropeFreqs);
    await step.executor.run(data);
  }

  // ---- sequences ------------------------------------------------------------------------------

  /** The tokens `seq` holds from position 0 on, when the context knows them (for prefix reuse). */
  history(seq: number): readonly number[] | undefined {
    return this.#history.get(seq);
  }

  /** Removes positions [p0, p1) of `seq` (p1 = -1: to the end). */
  seqRm(seq: number, p0 = 0, p1 = -1): void {
    this.#sync(() => this.kv.seqRm(seq, p0, p1));
    this.#history.removed(seq, p0, p1);
  }

  /** `dst` shares `src`'s cells at positions [p0, p1) (nothing is copied). */
  seqCp(src: number, dst: number, p0 = 0, p1 = -1): void {
    const wasEmpty = this.kv.seqCount(dst) === 0;
    this.#sync(() => this.kv.seqCp(src, dst, p0, p1));
    this.#history.copied(src, dst, p0, p1, wasEmpty);
  }

  /**
   * Copies positions [0, n) of `src` into new cells of `dst` (which must be empty): the K/V rows
   * are copied by one graph, so `dst` owns its cells (with kvUnified false, in its own region) and
   * `src` may drop or overwrite its own freely. {@link seqCp} shares cells instead (nothing copied).
   */
  seqCopy(src: number, dst: number, n: number): Promise<void> {
    return this.#serial(async () => {
      const bad = (m: string) => new EngineError("INVALID_ARGUMENT", `seqCopy: ${m}`);
      for (const [v, what] of [
        [src, "src"],
        [dst, "dst"],
      ] as const)
        if (!Number.isInteger(v) || v < 0 || v >= this.nSeqMax)
          throw bad(`${what} ${v} is not a sequence id in [0, ${this.nSeqMax})`);
      if (!Number.isInteger(n) || n < 1) throw bad(`n must be a positive integer, got ${n}`);
      if (src === dst) throw bad("src and dst are the same sequence");
      if (this.kv.seqCount(dst) !== 0) throw bad(`sequence ${dst} is not empty; seqRm(${dst}) first`);
      await this.#applyShift();
      const from = new Int32Array(Math.ceil(n / KV_BUCKET) * KV_BUCKET).fill(-1);
      const pos = this.kv.cells.positions;
      for (let c = 0; c < this.nCtx; c++)
        if (pos[c]! >= 0 && pos[c]! < n && this.kv.cells.has(c, src)) from[pos[c]!] = c;
      for (let p = 0; p < n; p++) if (from[p]! < 0) throw bad(`sequence ${src} has no cell at position ${p}`);
      const ids = [dst];
      const slot = this.kv.allocate(Array.from({ length: n }, (_, p) => ({ pos: p, seqIds: ids })));
      if (slot.status !== "ok")
        throw new EngineError(
          "NO_KV_ROOM",
          `seqCopy: no room for ${n} cells of sequence ${dst} (${slot.free} free)`,
        );
      // Padded to a bucket (the last row copied again) so copies of similar length share a graph.
      const to = new Int32Array(from.length);
      to.set(slot.cells);
      for (let i = n; i < from.length; i++) {
        from[i] = from[n - 1]!;
        to[i] = to[n - 1]!;
      }
      try {
        const { step, built } = this.#get({ kind: "move", nTokens: from.length, nKv: 0, nOutputs: 0 });
        await step.executor.run(
          new Map<Tensor, ArrayBufferView>([
            [built.inputs.from!, from],
            [built.inputs.to!, to],
          ]),
        );
      } catch (e) {
        this.kv.seqRm(dst, 0, -1);
        throw e;
      }
      const h = this.#history.get(src);
      this.#history.set(dst, h && h.length >= n ? h.slice(0, n) : undefined);
    });
  }

  /** Drops every sequence but `seq`. */
  seqKeep(seq: number): void {
    this.#sync(() => this.kv.seqKeep(seq));
    this.#history.keepOnly(seq);
  }

  /** Shifts positions [p0, p1) of `seq` by `delta` (K is re-roped before the next decode). */
  seqAdd(seq: number, p0: number, p1: number, delta: number): void {
    this.#sync(() => this.kv.seqAdd(seq, p0, p1, delta));
    this.#history.forget(seq);
  }

  /** Divides positions [p0, p1) of `seq` by `d` (K is re-roped before the next decode). */
  seqDiv(seq: number, p0: number, p1: number, d: number): void {
    this.#sync(() => this.kv.seqDiv(seq, p0, p1, d));
    this.#history.forget(seq);
  }

  /** Empties the cache. */
  clear(): void {
    this.#sync(() => this.kv.clear());
    this.#history.clear();
  }

  #sync(f: () => void): void {
    if (this.#disposed) throw new EngineError("DISPOSED", "the context was disposed");
    try {
      f();
    } catch (e) {
      if (e instanceof KvCacheError) throw new EngineError("INVALID_ARGUMENT", e.message, { cause: e });
      throw e;
    }
  }

  /**
   * Compacts the used cells to the front of the cache (the K/V rows are moved by one graph), so
   * attention reads a shorter window. Returns the number of cells moved.
   */
  defrag(): Promise<number> {
    return this.#serial(async () => {
      if (this.kv.region > 0)
        throw new EngineError(
          "INVALID_ARGUMENT",
          "defrag: a context with kvUnified: false keeps each sequence in its own region; there is nothing to compact",
        );
      await this.#applyShift();
      const plan = this.kv.defragPlan();
      let nCells = 0;
      for (const m of plan) nCells += m.count;
      if (nCells === 0) return 0;
      const from = new Int32Array(nCells);
      const to = new Int32Array(nCells);
      let k = 0;
      for (const m of plan)
        for (let i = 0; i < m.count; i++, k++) {
          from[k] = m.from + i;
          to[k] = m.to + i;
        }
      const { step, built } = this.#get({ kind: "move", nTokens: nCells, nKv: 0, nOutputs: 0 });
      await step.executor.run(
        new Map<Tensor, ArrayBufferView>([
          [built.inputs.from!, from],
          [built.inputs.to!, to],
        ]),
      );
      this.kv.applyDefrag(plan);
      return nCells;
    });
  }

  // ---- state ----------------------------------------------------------------------------------

  #rowBytes(): { k: number; v: number; layers: number } {
    const hp = this.model.hparams;
    const k = this.#stateBytes.get("k_cache-0")!;
    const v = this.#stateBytes.get("v_cache-0")!;
    return { k: k / this.nCtx, v: v / this.nCtx, layers: hp.nLayer };
  }

  /**
   * Where each layer's K then V rows are (device runtime, buffer, first byte) and their row size:
   * the saved order.
   */
  #stateBlocks(): { runtime: DeviceRuntime; buffer: BackendBuffer; base: number; size: number }[] {
    const { k, v, layers } = this.#rowBytes();
    const out: { runtime: DeviceRuntime; buffer: BackendBuffer; base: number; size: number }[] = [];
    const block = (name: string, size: number) => {
      const b = this.#states.get(name)!;
      const runtime = this.#kvBuffers.get(b.buffer.device)!.runtime;
      out.push({ runtime, buffer: b.buffer, base: b.offset ?? 0, size });
    };
    for (let il = 0; il < layers; il++) {
      block(`k_cache-${il}`, k);
      block(`v_cache-${il}`, v);
    }
    return out;
  }

  /** The state of one sequence (its cells' positions, K/V rows and known tokens) as bytes. */
  saveSequence(seq: number): Promise<Uint8Array> {
    return this.#serial(async () => {
      await this.#applyShift();
      let cellsBytes: Uint8Array = new Uint8Array(0);
      this.#sync(() => {
        cellsBytes = this.kv.writeSequence(seq);
      });
      const st = readSequenceState(cellsBytes).cells;
      const { k, v, layers } = this.#rowBytes();
      const rows: SequenceRows[] = [];
      const runs = cellRuns(st);
      for (const { runtime, buffer, base, size } of this.#stateBlocks()) {
        const out = new Uint8Array(st.length * size);
        for (const [at, first, n] of runs)
          out.set(await runtime.read(buffer, base + first * size, n * size), at * size);
        rows.push(out);
      }
      return writeSequenceData({
        kvDtype: this.kvDtype,
        rowBytesK: k,
        rowBytesV: v,
        nLayer: layers,
        cells: cellsBytes,
        rows,
        tokens: this.#history.get(seq),
      });
    });
  }

  /**
   * Restores a saved sequence into `seq` (which must be empty): new cells are allocated and the
   * K/V rows written into them. The state must come from a context over the same model with the
   * same KV dtype.
   */
  restoreSequence(bytes: Uint8Array, seq: number): Promise<void> {
    return this.#serial(async () => {
      const { k, v, layers } = this.#rowBytes();
      const data = readSequenceData(bytes);
      if (
        data.kvDtype !== this.kvDtype ||
        data.rowBytesK !== k ||
        data.rowBytesV !== v ||
        data.nLayer !== layers
      )
        throw new EngineError(
          "INVALID_ARGUMENT",
          `restoreSequence: the state is of a different model or KV dtype (${data.nLayer} layers, ${data.kvDtype}, ` +
            `rows ${data.rowBytesK}/${data.rowBytesV} bytes; this context: ${layers}, ${this.kvDtype}, ${k}/${v})`,
        );
      let slot: ReturnType<KvCache["restoreSequence"]> | undefined;
      this.#sync(() => {
        slot = this.kv.restoreSequence(data.cells, seq);
      });
      if (slot!.status !== "ok")
        throw new EngineError(
          "NO_KV_ROOM",
          `restoreSequence: no room for ${slot!.needed} cells (${slot!.free} free)`,
        );
      const cells = slot!.cells;
      try {
        let r = 0;
        const runs = cellRuns(cells);
        for (const { runtime, buffer, base, size } of this.#stateBlocks()) {
          const rows = data.rows[r++]!;
          for (const [at, first, n] of runs)
            await runtime.write(buffer, base + first * size, rows.subarray(at * size, (at + n) * size));
        }
      } catch (e) {
        this.kv.seqRm(seq);
        throw e;
      }
      this.#history.set(seq, data.tokens);
    });
  }

  /** Releases the scheduler's arenas and the K/V state buffers. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#scheduler.dispose();
    for (const { buffer } of this.#kvBuffers.values()) buffer.dispose();
  }
}

/**
 * Consecutive cells as runs [index in `cells`, first cell, count], so a sequence's K/V rows move
 * with one read or write per run instead of one per cell.
 */
function cellRuns(cells: ArrayLike<number>): [number, number, number][] {
  const runs: [number, number, number][] = [];
  for (let i = 0; i < cells.length; ) {
    let n = 1;
    while (i + n < cells.length && cells[i + n] === cells[i]! + n) n++;
    runs.push([i, cells[i]!, n]);
    i += n;
  }
  return runs;
}
