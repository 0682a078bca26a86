import type { DType } from "@minfer/ir";
import { type KvDtype, kvDtypeId, parseKvDtype } from "@minfer/kvcache";
import {
  type BuildOptions,
  buildKvMove,
  buildKvShift,
  type GraphOutput,
  type KvGroup,
  type Pooling,
} from "@minfer/models";
import {
  type Assignment,
  GraphCache,
  type GraphCacheStats,
  type PreparedGraph,
  Scheduler,
  SchedulerError,
  type TimingReport,
} from "@minfer/scheduler";
import { type Batch, type BatchLimits, normalizeBatch } from "./batch.js";
import { contextSize, DEFAULT_N_UBATCH } from "./context-size.js";
import { type OutputsInto, spanWindow, UbatchRunner } from "./decode-step.js";
import { batchLimits, embeddingPooling } from "./embedding-options.js";
import { EngineError } from "./errors.js";
import { type Built, fused, type GraphParams, type Step } from "./graph-params.js";
import { KvBuffers } from "./kv-buffers.js";
import { applyShift, defrag, seqClone } from "./kv-ops.js";
import { KvStore } from "./kv-store.js";
import { Logits } from "./logits.js";
import type { Model } from "./model.js";
import { restoreSequence, saveSequence } from "./session.js";

/** Options of {@link Context}. */
export interface ContextOptions {
  /** KV cells (the context window, shared by all sequences). Default: min(4096, the model's training context); 0: the training context. */
  readonly nCtx?: number;
  /** Most tokens one graph runs; a longer batch is cut into micro-batches. Default: min(512, nCtx). */
  readonly nUbatch?: number;
  /** Sequence ids are 0…nSeqMax-1. Default: 1. */
  readonly nSeqMax?: number;
  /** Element type of the K/V cache: "f16" (default; "f32" for an encoder), "f32" or "q8_0". */
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
   * Give the sliding-window layers (Gemma 2/3, Phi-3 …) a cache of the whole context, as llama.cpp's
   * `--swa-full`: more memory, but a sequence can be cut back to any position. Default false: their
   * cache holds each sequence's window and one micro-batch, and reuses cells no query can see.
   */
  readonly swaFull?: boolean;
  /**
   * Apply @minfer/ir's fusions (RMS_NORM_MUL, MUL_MAT_MULTI, MUL_MAT_ADD) to the decode graphs: fewer kernel
   * launches and passes over memory, the same values (the fused kernels keep the unfused order of
   * operations). Default: true.
   */
  readonly fuse?: boolean;
  /**
   * Read every decode call's logits into one buffer the context keeps (page-locked host memory
   * on a GPU, so the read is one transfer), as llama.cpp's llama_get_logits: a call's Logits are
   * valid until the next decode call, and reading them after it throws STALE_LOGITS. Without it
   * (the default) each call's logits are a new array, which for many rows of a large vocabulary
   * costs the page faults of fresh memory at every step (a 64-sequence step of a 152k vocabulary
   * reads 39 MB). For loops that use each step's logits before the next: a server's batcher,
   * benchmarks, perplexity.
   */
  readonly reuseLogits?: boolean;
  /**
   * Also compute in the graph, per logits row, the ids of its `candidates` largest logits (larger
   * logit first, lower id first on ties: the graph output `CANDIDATES_OUTPUT` of @minfer/models)
   * and read them back with the logits, as {@link Logits.candidates}: a sampler that can prove
   * its answer lies among them (`Sampler.sample(row, ids)` of @minfer/sampler) then reads a few
   * logits instead of the whole vocabulary. The full logits are still read. An integer in
   * 0…nVocab; default 0 (off).
   */
  readonly candidates?: number;
  /**
   * Every decode batch-invariant, for the context's life (a server's `--batch-invariant`): each
   * token's results depend on nothing but its sequence — not on the tokens decoded beside it, the
   * size of its batch or the cells other sequences hold. Every program is batch-invariant (one
   * token too: see `Batch.batchInvariant`) and every step's attention spans the whole cache
   * instead of the used cells' window, which other sequences move (CUDA sizes attention by it).
   * Costs throughput where batched kernels differ (CUDA, AVX-512 CPUs). Default false.
   */
  readonly batchInvariant?: boolean;
  /**
   * Compute embeddings instead of logits (llama.cpp's `embeddings`): each decoded row is the
   * model's final hidden state (F32 [nEmbd]), or with `pooling` "rank" its classifier's scores.
   * An encoder (BERT family) needs it. Pool and normalise with `embed()`. Default false.
   */
  readonly embeddings?: boolean;
  /**
   * With `embeddings`: how `embed()` pools a sequence's rows (see `Pooling`); "rank" makes the
   * graph end in the model's classifier head. Default: the file's `<arch>.pooling_type`, else
   * "mean" for an encoder and "last" for a decoder.
   */
  readonly pooling?: Pooling;
  /**
   * Called after each micro-batch with the activations of every product with a weight of the file
   * (`taps`: which weight, which graph output holds its right-hand side) and the outputs' bytes,
   * valid during the call: what an importance matrix sums (see `collectImatrix`). Makes every
   * decode graph output those activations. Default: none.
   */
  readonly onActivations?: ActivationSink;
}

/** See {@link ContextOptions.onActivations}. */
export type ActivationSink = (
  taps: readonly import("@minfer/models").WeightTap[],
  values: ReadonlyMap<import("@minfer/ir").Tensor, Uint8Array>,
  nTokens: number,
) => void;

export type { GraphParams } from "./graph-params.js";
export { KV_BUCKET } from "./kv-store.js";

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

/** One KV cache of a context, as {@link Context.stats} reports it. */
export interface KvCacheStats {
  /** "full" (full-attention layers) or "swa" (sliding-window layers). */
  readonly group: KvGroup;
  /** Its cells. */
  readonly cells: number;
  /** Cells in use. */
  readonly used: number;
  /** The fewest leading cells that cover every used one (what a mask spans before bucketing). */
  readonly extent: number;
  /** Positions a query sees in it (0: every one before it). */
  readonly window: number;
  /** Layers whose K/V rows it holds. */
  readonly layers: number;
  /** Bytes of its K/V rows. */
  readonly bytes: number;
}

/** The state of a context's KV caches. */
export interface ContextStats {
  /** Context size in tokens. */
  readonly nCtx: number;
  /**
   * Tokens in use: the full-attention cache's used cells; for a model whose every layer slides,
   * the positions its sequences hold (its cache reuses cells, the context still ends at nCtx).
   */
  readonly used: number;
  /** Bytes of all K/V rows. */
  readonly kvBytes: number;
  readonly caches: readonly KvCacheStats[];
  /** The decode graphs built and reused so far. */
  readonly graphs: GraphCacheStats;
}

/**
 * One inference context over a model: its KV caches with their K/V state buffers, a scheduler
 * whose arenas are reserved once for the worst case, and a cache of prepared graphs. Calls are run
 * one at a time (a call made while another runs waits for it).
 */
export class Context {
  readonly nCtx: number;
  readonly nUbatch: number;
  readonly nSeqMax: number;
  readonly kvDtype: KvDtype;
  /** Candidate ids per logits row (see {@link ContextOptions.candidates}); 0 when off. */
  readonly nCandidates: number;
  /** With `embeddings`: the pooling `embed()` applies (see {@link ContextOptions.pooling}); undefined for logits. */
  readonly pooling: Pooling | undefined;
  /** Floats in one row of a decode's output: the vocabulary, or nEmbd / the classifier's outputs with `embeddings`. */
  readonly outputWidth: number;
  readonly model: Model;
  readonly #store: KvStore;
  readonly #buffers: KvBuffers;
  readonly #graphs: GraphCache<GraphParams>;
  readonly #scheduler: Scheduler;
  readonly #built = new WeakMap<object, Built>();
  readonly #kvType: DType;
  readonly #fuse: boolean;
  readonly #runner: UbatchRunner;
  readonly #reuseLogits: boolean;
  /** kvUnified false: each sequence has nCtx / nSeqMax cells of its own. */
  readonly #regions: boolean;
  readonly #onActivations: ActivationSink | undefined;
  /** What the decode graphs output (logits unless `embeddings`). */
  readonly #output: GraphOutput = "logits";
  /** Segment ids and positions a batch may use. */
  readonly #limits: BatchLimits = {};
  /** Whether attention is causal (false for the BERT family: a sequence is decoded at once). */
  readonly #causal: boolean = true;
  /** With reuseLogits: the buffer every call's logits are read into, grown as needed. */
  #logitsBuf: Float32Array | undefined;
  /** With reuseLogits and candidates: the buffer every call's candidate ids are read into. */
  #candidatesBuf: Int32Array | undefined;
  /** With reuseLogits and candidates: the buffer every call's candidates' logits are read into. */
  #candidateLogitsBuf: Float32Array | undefined;
  /** With reuseLogits: decode calls so far (a Logits is current while this is its call's). */
  #logitsCall = 0;
  /** Decode calls so far (a candidatesOnly call's rows can be fetched while this is its call's). */
  #decodeCalls = 0;
  #queue: Promise<unknown> = Promise.resolve();
  #disposed = false;
  #timing: DecodeTiming = { totalMs: 0, computeMs: 0, ubatches: 0 };

  constructor(model: Model, options: ContextOptions = {}) {
    this.model = model;
    this.#fuse = options.fuse ?? true;
    this.#reuseLogits = options.reuseLogits ?? false;
    this.#onActivations = options.onActivations;
    const hp = model.hparams;
    const positive = (v: unknown, what: string): number => {
      if (typeof v !== "number" || !Number.isInteger(v) || v < 1)
        throw new EngineError("INVALID_ARGUMENT", `${what} must be a positive integer, got ${String(v)}`);
      return v;
    };
    this.nCtx = positive(contextSize(options.nCtx, hp.nCtxTrain), "nCtx");
    this.nUbatch = Math.min(positive(options.nUbatch ?? DEFAULT_N_UBATCH, "nUbatch"), this.nCtx);
    this.nSeqMax = positive(options.nSeqMax ?? 1, "nSeqMax");
    const k = options.candidates ?? 0;
    if (typeof k !== "number" || !Number.isInteger(k) || k < 0 || k > hp.nVocab)
      throw new EngineError(
        "INVALID_ARGUMENT",
        `candidates must be an integer in 0…${hp.nVocab} (the vocabulary), got ${String(k)}`,
      );
    this.pooling = embeddingPooling(model, options);
    if (this.pooling !== undefined && k > 0)
      throw new EngineError("INVALID_ARGUMENT", "candidates pick logits: they do not apply with embeddings");
    this.#output = this.pooling === undefined ? "logits" : this.pooling === "rank" ? "rank" : "embeddings";
    this.#causal = hp.causal ?? true;
    this.#limits = batchLimits(model);
    this.nCandidates = k;
    try {
      // An encoder's cache holds one batch's K/V only while it is attended (llama.cpp keeps them in
      // F32, outside any cache): F32 unless asked otherwise.
      this.kvDtype = parseKvDtype(options.kvDtype ?? (model.arch.ENCODER ? "f32" : "f16"));
    } catch (e) {
      throw new EngineError("INVALID_ARGUMENT", `kvDtype: ${(e as Error).message}`, { cause: e });
    }
    this.#kvType = kvDtypeId(this.kvDtype);
    const layers = model.arch.kvLayers(hp);
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
    this.#regions = options.kvUnified === false;
    this.#store = new KvStore({
      layers,
      window: model.arch.slidingWindow(hp),
      nCtx: this.nCtx,
      nUbatch: this.nUbatch,
      nSeqMax: this.nSeqMax,
      dtype: this.kvDtype,
      regions: options.kvUnified === false,
      swaFull: options.swaFull ?? false,
      causal: this.#causal,
    });
    const worst = this.#build({
      kind: "decode",
      nTokens: this.nUbatch,
      nKv: this.#cells("full"),
      nKvSwa: this.#cells("swa"),
      // (embeddings pool every token's row: any number of outputs)
      nOutputs: this.#output === "logits" ? Math.min(this.nUbatch, this.nSeqMax) : this.nUbatch,
    });
    this.outputWidth = worst.logits?.ne[0] ?? hp.nVocab;
    this.#buffers = new KvBuffers(worst.graph, model.placement);
    try {
      this.#scheduler = new Scheduler({
        runtimes: model.placement.runtimes(),
        weights: model.weights,
        states: this.#buffers.states,
        profile: options.profile ?? false,
      });
      const step = this.#build(this.#stepParams(1, true));
      this.#scheduler.reserve([worst.graph, step.graph]);
    } catch (e) {
      this.#buffers.dispose();
      throw e;
    }
    this.#graphs = new GraphCache<GraphParams>({
      build: (p) => this.#build(p).graph,
      prepare: (g) => this.#prepare(g),
      maxEntries: 64,
    });
    this.#runner = new UbatchRunner(
      this.#store,
      (p) => this.#get(p),
      this.#onActivations,
      booleanOption(options.batchInvariant, "batchInvariant"),
    );
  }

  /** Cells of a cache (0 when the model has no layers of that kind). */
  #cells(group: KvGroup): number {
    return this.#store.group(group)?.cache.nCtx ?? 0;
  }

  /**
   * nTokens tokens of as many sequences attending by spans: what steady decode runs (over every
   * cache; one token over the caches' current span windows, as UbatchRunner sizes it, unless
   * `wholeCache`).
   */
  #stepParams(nTokens = 1, wholeCache = false): GraphParams {
    const window = (group: KvGroup) => {
      const g = this.#store.group(group);
      return !g ? 0 : nTokens === 1 && !wholeCache ? spanWindow(g) : g.cache.nCtx;
    };
    const swa = window("swa");
    return {
      kind: "decode",
      nTokens,
      nKv: window("full"),
      nOutputs: nTokens,
      spans: true,
      ...(swa > 0 ? { nKvSwa: swa, spansSwa: true } : {}),
    };
  }

  #build(p: GraphParams): Built {
    const arch = this.model.arch;
    const hp = this.model.hparams;
    const tensors = this.model.tensors;
    const group = p.group ?? "full";
    const layout = { group, nCtx: this.#cells(group), kvDtype: this.#kvType };
    let built: Built;
    if (p.kind === "shift") {
      built = buildKvShift(arch, hp, { ...layout, nCells: p.nTokens, tensors, nCtxModel: this.nCtx });
    } else if (p.kind === "move") {
      built = buildKvMove(arch, hp, { ...layout, nCells: p.nTokens });
    } else {
      const swaCells = this.#cells("swa");
      const options: BuildOptions = {
        nTokens: p.nTokens,
        nKv: p.nKv,
        nOutputs: p.nOutputs,
        spans: p.spans ?? false,
        nCtx: this.#cells("full"),
        ...(swaCells > 0
          ? { swa: { nCtx: swaCells, nKv: p.nKvSwa ?? swaCells, spans: p.spansSwa ?? p.spans ?? false } }
          : {}),
        kvDtype: this.#kvType,
        contextSize: this.nCtx,
        tensors,
        ...(this.nCandidates > 0 ? { candidates: this.nCandidates } : {}),
        ...(this.#output !== "logits" ? { output: this.#output } : {}),
        ...(this.#onActivations ? { taps: true } : {}),
      };
      built = arch.buildGraph(hp, options);
      if (this.#fuse) built = fused(built);
      if (p.batchInvariant) built = { ...built, graph: { ...built.graph, batchInvariant: true } };
    }
    this.#built.set(built.graph, built);
    return built;
  }

  /** Prepares a graph; one larger than the reserved arena grows it (rare: many outputs, big moves). */
  #prepare(graph: import("@minfer/ir").Graph): PreparedGraph {
    try {
      return this.#scheduler.prepare(graph);
    } catch (e) {
      if (!(e instanceof SchedulerError) || e.code !== "ARENA_TOO_SMALL") throw e;
      this.#scheduler.reserve([graph]);
      return this.#scheduler.prepare(graph);
    }
  }

  #get(p: GraphParams): Step {
    const step = this.#graphs.get(p);
    return { step, built: this.#built.get(step.graph)! };
  }

  get #core() {
    return {
      store: this.#store,
      nSeqMax: this.nSeqMax,
      buffers: this.#buffers,
      kvDtype: this.kvDtype,
      get: (p: GraphParams) => this.#get(p),
    };
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

  /** The KV caches: cells, use, window and bytes of each (one per kind of attention layer). */
  stats(): ContextStats {
    const bytes = new Map<KvGroup, number>();
    const caches = this.#store.groups.map((g): KvCacheStats => {
      let b = 0;
      for (const il of g.layers) for (const r of this.#buffers.layer(il)) b += r.size * g.cache.nCtx;
      bytes.set(g.group, b);
      return {
        group: g.group,
        cells: g.cache.nCtx,
        used: g.cache.used(),
        extent: g.cache.window(),
        window: g.window,
        layers: g.layers.length,
        bytes: b,
      };
    });
    return {
      nCtx: this.nCtx,
      used: this.#store.used(),
      kvBytes: caches.reduce((a, c) => a + c.bytes, 0),
      caches,
      graphs: this.#graphs.stats(),
    };
  }

  /** The cells `seq` holds in a cache (default: the full-attention one), in cell order. */
  seqCells(seq: number, group: KvGroup = "full"): Int32Array {
    const cache = this.#store.group(group)?.cache;
    if (!cache) return new Int32Array(0);
    const out: number[] = [];
    const pos = cache.cells.positions;
    for (let c = 0; c < cache.nCtx; c++) if (pos[c]! >= 0 && cache.cells.has(c, seq)) out.push(c);
    return Int32Array.from(out);
  }

  /** Tokens in use (what {@link ContextStats.used} reports), without building the rest of the stats. */
  used(): number {
    return this.#store.used();
  }

  /**
   * Cells `seq` can still take in the full-attention cache: the free cells of its own region
   * (kvUnified false), else those of the shared cache (which other sequences may take too).
   */
  seqRoom(seq: number): number {
    return this.#regions ? this.nCtx / this.nSeqMax - this.seqCount(seq) : this.nCtx - this.used();
  }

  /** Cells `seq` holds in the full-attention cache (its length when filled in order from 0). */
  seqCount(seq: number): number {
    return this.#store.primary.seqCount(seq);
  }

  /**
   * The device assignment of the graph steady decoding runs (one token of one sequence, prepared
   * here once): its splits, and each node's device with the reason (a node away from its layer's
   * device says why).
   */
  assignment(): Assignment {
    return this.#get(this.#stepParams()).step.assignment;
  }

  /**
   * Decodes a batch: writes each token's K/V into the caches (cells found by the KV cache) and
   * returns the logits of the tokens that asked for them. A batch longer than nUbatch runs as
   * several graphs. When anything fails, the batch's tokens are removed from the caches again.
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
      for (const n of list) this.#get(this.#stepParams(n));
    });
  }

  /** Decodes `tokens` appended to sequence `seq`; returns the last token's logits. */
  async eval(tokens: ArrayLike<number>, seq = 0): Promise<Float32Array> {
    return (await this.decode({ tokens, seq, logits: "last" })).last();
  }

  async #decode(input: Batch): Promise<Logits> {
    const t0 = performance.now();
    const decodeCall = ++this.#decodeCalls;
    const kv = this.#store.primary;
    const b = normalizeBatch(
      input,
      this.model.hparams.nVocab,
      this.nSeqMax,
      (s) => kv.seqPosMax(s),
      this.#limits,
    );
    const nVocab = this.outputWidth;
    const n = b.tokens.length;
    if (!this.#causal && n > this.nUbatch)
      throw new EngineError(
        "INVALID_ARGUMENT",
        `decode: ${this.model.arch.ARCH} attends over whole sequences (not causal), so a batch must fit one micro-batch: ` +
          `${n} tokens is more than nUbatch (${this.nUbatch}); make the Context with a larger nUbatch`,
      );
    const only = input.candidatesOnly ?? false;
    if (typeof only !== "boolean")
      throw new EngineError(
        "INVALID_ARGUMENT",
        `decode: candidatesOnly must be a boolean, got ${String(only)}`,
      );
    if (only && this.nCandidates === 0)
      throw new EngineError(
        "INVALID_ARGUMENT",
        "decode: candidatesOnly reads the candidate ids: make the Context with the option candidates: K",
      );
    if (only && n > this.nUbatch)
      throw new EngineError(
        "INVALID_ARGUMENT",
        `decode: candidatesOnly takes at most nUbatch (${this.nUbatch}) tokens, got ${n}`,
      );
    const used = this.#store.used();
    const free = this.nCtx - used;
    if (n > free)
      throw new EngineError(
        "NO_KV_ROOM",
        `decode: no KV room for ${n} more tokens (context of ${this.nCtx} tokens, ${used} used); ` +
          "remove tokens (seqRm) or make a Context with a larger nCtx",
      );
    await applyShift(this.#core);
    let nOut = 0;
    for (let i = 0; i < n; i++) nOut += b.wantLogits[i]!;
    const indices = new Int32Array(nOut);
    // One micro-batch: its logits output becomes the result as is (no copy); several: gathered.
    // With reuseLogits every micro-batch reads its rows into the context's buffer, in place.
    const call = this.#reuseLogits ? ++this.#logitsCall : 0;
    const gather = !this.#reuseLogits && n > this.nUbatch;
    const k = this.nCandidates;
    let data: Float32Array | undefined = gather ? new Float32Array(nOut * nVocab) : undefined;
    let ids: Int32Array | undefined = gather && k > 0 ? new Int32Array(nOut * k) : undefined;
    let idLogits: Float32Array | undefined = gather && k > 0 ? new Float32Array(nOut * k) : undefined;
    let fetchRow: ((r: number) => Promise<Float32Array>) | undefined;
    let row = 0;
    const into = this.#reuseLogits
      ? (s: Step, rows: number) => this.#outputsInto(s, nOut, row, rows)
      : undefined;
    let computeMs = 0;
    let ubatches = 0;
    const reports: TimingReport[] = [];
    const done: { pos: number; seqIds: readonly number[] }[] = [];
    try {
      for (let i0 = 0; i0 < n; i0 += this.nUbatch) {
        const i1 = Math.min(n, i0 + this.nUbatch);
        const r = await this.#runner.run(b, i0, i1, done, into, !only);
        computeMs += r.computeMs;
        ubatches++;
        if (r.report) reports.push(r.report);
        fetchRow = r.fetchRow;
        if (this.#reuseLogits) {
          // the rows are in place already (runner read them at row); a batch with no logits has none
          if (r.outIds.length > 0 && !only && r.logits.buffer !== this.#logitsBuf?.buffer)
            throw new EngineError("INTERNAL", "decode: the logits were not read into the reused buffer");
          if (r.outIds.length > 0 && r.candidates && r.candidates.buffer !== this.#candidatesBuf?.buffer)
            throw new EngineError("INTERNAL", "decode: the candidates were not read into the reused buffer");
          if (
            r.outIds.length > 0 &&
            r.candidateLogits &&
            r.candidateLogits.buffer !== this.#candidateLogitsBuf?.buffer
          )
            throw new EngineError(
              "INTERNAL",
              "decode: the candidates' logits were not read into the reused buffer",
            );
        } else if (data === undefined) {
          data = r.logits.subarray(0, only ? 0 : r.outIds.length * nVocab);
          ids = r.candidates?.subarray(0, r.outIds.length * k);
          idLogits = r.candidateLogits?.subarray(0, r.outIds.length * k);
        } else {
          data.set(r.logits.subarray(0, r.outIds.length * nVocab), row * nVocab);
          if (r.candidates) ids?.set(r.candidates.subarray(0, r.outIds.length * k), row * k);
          if (r.candidateLogits) idLogits?.set(r.candidateLogits.subarray(0, r.outIds.length * k), row * k);
        }
        for (let k = 0; k < r.outIds.length; k++) indices[row++] = i0 + r.outIds[k]!;
      }
    } catch (e) {
      this.#store.removeTokens(done);
      throw e;
    }
    this.#timing = {
      totalMs: performance.now() - t0,
      computeMs,
      ubatches,
      ...(reports.length ? { reports } : {}),
    };
    const ids0 = new Int32Array(0);
    const f0 = new Float32Array(0);
    // A candidatesOnly call's rows stay on the device until the next decode: read there on request
    // (one micro-batch, so batch row r is the graph's output row r).
    const fetch = fetchRow;
    const onDevice =
      only && fetch
        ? (r: number) =>
            this.#serial(async () => {
              if (this.#decodeCalls !== decodeCall)
                throw new EngineError(
                  "STALE_LOGITS",
                  "these logits rows were left on the device and a later decode call overwrote them: fetch them before the next decode",
                );
              return fetch(r);
            })
        : undefined;
    if (this.#reuseLogits) {
      const buf = only ? f0 : (this.#logitsBuf?.subarray(0, nOut * nVocab) ?? f0);
      const cands =
        k > 0
          ? {
              k,
              data: this.#candidatesBuf?.subarray(0, nOut * k) ?? ids0,
              logits: this.#candidateLogitsBuf?.subarray(0, nOut * k) ?? f0,
            }
          : undefined;
      return new Logits(nVocab, indices, buf, () => this.#logitsCall === call, cands, onDevice);
    }
    const cands = k > 0 ? { k, data: ids ?? ids0, logits: idLogits ?? f0 } : undefined;
    return new Logits(nVocab, indices, data ?? f0, undefined, cands, onDevice);
  }

  /**
   * Where rows [row, row + rows) of this call's `total` rows of logits (and candidate ids) go:
   * views of the reused buffers, which grow (from the step's output device, page-locked on a GPU)
   * to hold `total` rows, and at least twice the rows they held up to nSeqMax: a server's steps
   * gain a row per stream as its streams join, and each page-locked allocation of 64 rows of a
   * 152k vocabulary takes milliseconds.
   */
  #outputsInto(s: Step, total: number, row: number, rows: number): OutputsInto {
    const nVocab = this.outputWidth;
    const held = this.#logitsBuf ? this.#logitsBuf.length / nVocab : 0;
    if (held < total) {
      const bytes = Math.max(total, Math.min(2 * held, this.nSeqMax)) * nVocab * 4;
      const mem = s.step.executor.hostMemory(s.built.logits!, bytes);
      this.#logitsBuf = new Float32Array(mem.buffer, mem.byteOffset, bytes / 4);
    }
    const buf = this.#logitsBuf!;
    const logits = new Uint8Array(buf.buffer, buf.byteOffset + row * nVocab * 4, rows * nVocab * 4);
    const k = this.nCandidates;
    if (k === 0 || !s.built.candidates) return { logits };
    if (!this.#candidatesBuf || this.#candidatesBuf.length < total * k) {
      const bytes = (buf.length / nVocab) * k * 4;
      const mem = s.step.executor.hostMemory(s.built.candidates, bytes);
      this.#candidatesBuf = new Int32Array(mem.buffer, mem.byteOffset, bytes / 4);
    }
    const ids = this.#candidatesBuf;
    const candidates = new Uint8Array(ids.buffer, ids.byteOffset + row * k * 4, rows * k * 4);
    if (!s.built.candidateLogits) return { logits, candidates };
    if (!this.#candidateLogitsBuf || this.#candidateLogitsBuf.length < ids.length) {
      const mem = s.step.executor.hostMemory(s.built.candidateLogits, ids.length * 4);
      this.#candidateLogitsBuf = new Float32Array(mem.buffer, mem.byteOffset, ids.length);
    }
    const vals = this.#candidateLogitsBuf;
    return {
      logits,
      candidates,
      candidateLogits: new Uint8Array(vals.buffer, vals.byteOffset + row * k * 4, rows * k * 4),
    };
  }

  // ---- sequences ------------------------------------------------------------------------------

  #sync(f: () => void): void {
    if (this.#disposed) throw new EngineError("DISPOSED", "the context was disposed");
    f();
  }

  /** The tokens `seq` holds from position 0 on, when the context knows them (for prefix reuse). */
  history(seq: number): readonly number[] | undefined {
    return this.#store.history.get(seq);
  }

  /**
   * Whether `seq` can go on at position `n` once its positions from n on are removed: always for
   * full attention; a sliding-window cache that reused cells may no longer hold the window before n.
   */
  canContinue(seq: number, n: number): boolean {
    return this.#store.canContinue(seq, n);
  }

  /**
   * Cuts `seq` back to its first `n` positions for a new continuation, and returns where it now
   * continues from: n, or 0 (the sequence emptied) when the windowed cache cannot go on at n
   * (see {@link canContinue}).
   */
  truncate(seq: number, n: number): number {
    const keep = n > 0 && this.canContinue(seq, n) ? n : 0;
    this.seqRm(seq, keep, -1);
    return keep;
  }

  /** Removes positions [p0, p1) of `seq` (p1 = -1: to the end). */
  seqRm(seq: number, p0 = 0, p1 = -1): void {
    this.#sync(() => this.#store.seqRm(seq, p0, p1));
  }

  /**
   * `dst` shares `src`'s cells at positions [p0, p1): nothing is copied, both sequences own the
   * same cells. {@link seqClone} copies the rows instead.
   */
  seqShare(src: number, dst: number, p0 = 0, p1 = -1): void {
    this.#sync(() => this.#store.seqShare(src, dst, p0, p1));
  }

  /**
   * Copies positions [0, n) of `src` into new cells of `dst` (which must be empty): the K/V rows
   * are copied by one graph per cache, so `dst` owns its cells (with kvUnified false, in its own
   * region) and `src` may drop or overwrite its own freely. {@link seqShare} shares cells instead.
   */
  seqClone(src: number, dst: number, n: number): Promise<void> {
    return this.#serial(() => seqClone(this.#core, src, dst, n));
  }

  /** Drops every sequence but `seq`. */
  seqKeep(seq: number): void {
    this.#sync(() => this.#store.seqKeep(seq));
  }

  /**
   * Shifts positions [p0, p1) of `seq` by `delta` (K is re-roped before the next decode). Refused
   * (INVALID_ARGUMENT) on an encoder's context: each decode attends only to its own batch.
   */
  seqAdd(seq: number, p0: number, p1: number, delta: number): void {
    this.#refuseOnEncoder("seqAdd");
    this.#sync(() => this.#store.seqAdd(seq, p0, p1, delta));
  }

  /** Divides positions [p0, p1) of `seq` by `d` (K is re-roped before the next decode); as seqAdd. */
  seqDiv(seq: number, p0: number, p1: number, d: number): void {
    this.#refuseOnEncoder("seqDiv");
    this.#sync(() => this.#store.seqDiv(seq, p0, p1, d));
  }

  #refuseOnEncoder(op: string): void {
    if (!this.#causal)
      throw new EngineError(
        "INVALID_ARGUMENT",
        `${op}: ${this.model.arch.ARCH} is an encoder (attention not causal): a decode attends only to its own ` +
          "batch, so there are no cached positions to shift",
      );
  }

  /** Empties the caches. */
  clear(): void {
    this.#sync(() => this.#store.clear());
  }

  /**
   * Compacts the used cells to the front of each cache (the K/V rows are moved by one graph), so
   * attention reads a shorter window. Returns the number of cells moved.
   */
  defrag(): Promise<number> {
    return this.#serial(() => defrag(this.#core));
  }

  // ---- state ----------------------------------------------------------------------------------

  /** The state of one sequence (its cells' positions, K/V rows and known tokens) as bytes. */
  saveSequence(seq: number): Promise<Uint8Array> {
    return this.#serial(() => saveSequence(this.#core, seq));
  }

  /**
   * Restores a saved sequence into `seq` (which must be empty): new cells are allocated and the
   * K/V rows written into them. The state must come from a context over the same model with the
   * same KV dtype.
   */
  restoreSequence(bytes: Uint8Array, seq: number): Promise<void> {
    return this.#serial(() => restoreSequence(this.#core, bytes, seq));
  }

  /** Releases the scheduler's arenas and the K/V state buffers. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#scheduler.dispose();
    this.#buffers.dispose();
  }
}

/** An optional boolean option (absent: false); anything else is INVALID_ARGUMENT naming it. */
function booleanOption(v: unknown, what: string): boolean {
  if (v === undefined) return false;
  if (typeof v !== "boolean")
    throw new EngineError("INVALID_ARGUMENT", `${what} must be a boolean, got ${String(v)}`);
  return v;
}
