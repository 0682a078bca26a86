import type { Tensor } from "@minfer/ir";
import { KvCache } from "@minfer/kvcache";
import { type BuiltGraph, llama3RopeFreqs } from "@minfer/models";
import { cacheKey, GraphCache, Scheduler, type TensorBinding } from "@minfer/scheduler";
import { EngineError } from "./errors.js";
import type { Model } from "./model.js";

/** Options of {@link Context}. */
export interface ContextOptions {
  /** KV cells (the context window). Default: min(512, the model's training context). */
  readonly nCtx?: number;
  /** Most tokens one graph runs (a longer decode call is cut into micro-batches). Default: 64. */
  readonly nUbatch?: number;
}

/** Options of {@link Context.decode}. */
export interface DecodeOptions {
  readonly seq?: number;
  /** Which logits come back; only the last token's for now. */
  readonly logits?: "last";
}

/** The graph-cache key: the parameters that decide a decode graph's topology. */
export interface GraphParams {
  readonly nTokens: number;
  /** The KV window, a multiple of {@link KV_BUCKET} (or nCtx). */
  readonly nKv: number;
  readonly nOutputs: number;
}

/** KV windows are rounded up to a multiple of this, so decode steps share graphs. */
export const KV_BUCKET = 32;

/**
 * One inference context over a model: a KV cache (F32 for now), its K/V state buffers, a
 * scheduler reserved once for the worst case and a cache of prepared graphs.
 */
export class Context {
  readonly nCtx: number;
  readonly nUbatch: number;
  readonly kv: KvCache;
  readonly graphs: GraphCache<GraphParams>;
  readonly model: Model;
  readonly #scheduler: Scheduler;
  readonly #states = new Map<string, TensorBinding>();
  readonly #built = new Map<string, BuiltGraph>();
  readonly #ropeFreqs: Float32Array | undefined;

  constructor(model: Model, options: ContextOptions = {}) {
    this.model = model;
    const hp = model.hparams;
    this.nCtx = options.nCtx ?? Math.min(512, hp.nCtxTrain);
    this.nUbatch = Math.min(options.nUbatch ?? 64, this.nCtx);
    this.kv = new KvCache({ nCtx: this.nCtx, nSeqMax: 1, dtype: "f32" });
    const worst = this.#build({ nTokens: this.nUbatch, nKv: this.nCtx, nOutputs: 1 });
    const runtime = model.runtime;
    for (const t of worst.graph.tensors) {
      if (t.kind !== "state") continue;
      const name = t.source ?? t.name;
      this.#states.set(name, { buffer: runtime.allocate(t.nb[1] * t.ne[1], name) });
    }
    this.#ropeFreqs = worst.inputs.ropeFreqs ? llama3RopeFreqs(hp) : undefined;
    this.#scheduler = new Scheduler({ runtimes: [runtime], weights: model.weights, states: this.#states });
    const step = this.#build({ nTokens: 1, nKv: this.nCtx, nOutputs: 1 });
    this.#scheduler.reserve([worst.graph, step.graph]);
    this.graphs = new GraphCache<GraphParams>({
      build: (p) => this.#build(p).graph,
      prepare: (g) => this.#scheduler.prepare(g),
    });
  }

  #build(p: GraphParams): BuiltGraph {
    const key = cacheKey(p);
    let built = this.#built.get(key);
    if (!built) {
      built = this.model.arch.buildGraph(this.model.hparams, {
        ...p,
        nCtx: this.nCtx,
        tensors: this.model.tensors,
      });
      this.#built.set(key, built);
    }
    return built;
  }

  /**
   * Appends `tokens` to sequence `seq` (positions continue after its last one), runs them in
   * micro-batches of at most nUbatch tokens, and returns the logits of the last token.
   */
  async decode(tokens: readonly number[], options: DecodeOptions = {}): Promise<Float32Array> {
    const seq = options.seq ?? 0;
    if (tokens.length === 0) throw new EngineError("INVALID_ARGUMENT", "decode: give at least one token");
    let logits: Float32Array | undefined;
    for (let i = 0; i < tokens.length; i += this.nUbatch) {
      logits = await this.#ubatch(tokens.slice(i, i + this.nUbatch), seq);
    }
    return logits!;
  }

  async #ubatch(tokens: readonly number[], seq: number): Promise<Float32Array> {
    const n = tokens.length;
    const p0 = this.kv.seqPosMax(seq) + 1;
    const batch = tokens.map((_, i) => ({ pos: p0 + i, seqIds: [seq] }));
    const slot = this.kv.allocate(batch);
    if (slot.status !== "ok")
      throw new EngineError(
        "NO_KV_ROOM",
        `decode: no KV room for ${n} more tokens (context of ${this.nCtx} cells, ${this.kv.used()} used); make a Context with a larger nCtx`,
      );
    const nKv = Math.min(this.nCtx, Math.ceil(this.kv.window() / KV_BUCKET) * KV_BUCKET);
    const mask = this.kv.mask(batch, slot.cells, { nKv, dtype: "f32" });
    const params: GraphParams = { nTokens: n, nKv, nOutputs: 1 };
    const step = this.graphs.get(params);
    const { inputs, logits } = this.#build(params);
    const data = new Map<Tensor, ArrayBufferView>([
      [inputs.tokens, Int32Array.from(tokens)],
      [inputs.positions, Int32Array.from(batch, (t) => t.pos)],
      [inputs.cells, slot.cells],
      [inputs.mask, mask],
      [inputs.outIds, Int32Array.of(n - 1)],
    ]);
    if (inputs.ropeFreqs && this.#ropeFreqs) data.set(inputs.ropeFreqs, this.#ropeFreqs);
    const result = await step.executor.run(data);
    return result.float32(logits);
  }

  /** Releases the scheduler's arenas and the K/V state buffers. */
  dispose(): void {
    this.#scheduler.dispose();
    for (const s of this.#states.values()) s.buffer.dispose();
  }
}
