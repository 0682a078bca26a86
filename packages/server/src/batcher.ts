import { Context, type ContextOptions, type Model } from "@minfer/engine";
import type { TokenLogprob } from "@minfer/sampler";
import { Job, type JobFinish, type JobResult, type JobSpec } from "./job.js";
import { ServerError } from "./server-error.js";

export type { JobFinish, JobResult, JobSpec, TokenEvent } from "./job.js";

/** What the batcher reports to an observer (metrics, logs). */
export interface BatcherObserver {
  onStep?(info: { tokens: number; promptTokens: number; generating: number; ms: number }): void;
  onJobEnd?(result: JobResult): void;
  onJobError?(error: unknown): void;
}

export interface BatcherOptions {
  /** Slots (sequences generating at once). */
  readonly parallel: number;
  /** KV cells of each slot: its prompt plus generated tokens. */
  readonly ctxPerSlot: number;
  /** Most tokens one step decodes (generating slots first, then prompt chunks). */
  readonly batchSize: number;
  /** Most jobs waiting for a slot; one more is refused with QUEUE_FULL. */
  readonly queueSize: number;
  /** Of the shared context; `candidates` defaults to {@link BATCHER_CANDIDATES} (0 turns them off). */
  readonly contextOptions?: Omit<ContextOptions, "nCtx" | "nSeqMax">;
  readonly observer?: BatcherObserver;
}

/** A slot: one sequence of the shared context, idle (its cache kept for reuse) or running a job. */
interface Slot {
  readonly id: number;
  job: Job | undefined;
  lastUsed: number;
  /** What the slot's last finished job held, for /slots (as llama-server keeps a slot's last task). */
  last: { promptTokens: number; cachedTokens: number; generated: number };
}

/** What /slots shows of a slot. */
export interface SlotInfo {
  readonly id: number;
  readonly state: "idle" | "prefill" | "generating";
  readonly nCtx: number;
  /** Tokens the slot holds in the cache. */
  readonly nPast: number;
  /** Of the running job, or of the last one when idle (0 before the first). */
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly generated: number;
}

/**
 * Candidate ids the batcher's context computes per logits row (its best ids, in the graph), so that
 * a stream's sampler reads those instead of the whole vocabulary when that gives the same token
 * (greedy, top-k up to this many; see `Sampler.sample`).
 */
export const BATCHER_CANDIDATES = 64;

const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Continuous batching over one context: every step is one decode holding the next token of each
 * generating slot, then chunks of prompts still being prefilled, up to `batchSize` tokens. A job
 * takes a free slot; the slot (or, by a shared-cell copy, another slot) whose cached tokens match
 * the longest prefix of its prompt is reused. Jobs beyond the slots wait in a bounded FIFO queue.
 */
export class Batcher {
  readonly context: Context;
  readonly parallel: number;
  readonly ctxPerSlot: number;
  readonly batchSize: number;
  readonly queueSize: number;
  readonly #slots: Slot[];
  readonly #queue: Job[] = [];
  readonly #model: Model;
  readonly #observer: BatcherObserver;
  #running: Promise<void> | undefined;
  #closed = false;
  #clock = 0;

  constructor(model: Model, options: BatcherOptions) {
    const int = (v: number, what: string) => {
      if (!Number.isInteger(v) || v < 1)
        throw new ServerError("INVALID_ARGUMENT", `${what} must be a positive integer, got ${v}`);
      return v;
    };
    this.parallel = int(options.parallel, "parallel");
    this.ctxPerSlot = int(options.ctxPerSlot, "ctxPerSlot");
    this.batchSize = int(options.batchSize, "batchSize");
    this.queueSize = options.queueSize;
    if (!Number.isInteger(this.queueSize) || this.queueSize < 0)
      throw new ServerError(
        "INVALID_ARGUMENT",
        `queueSize must be a non-negative integer, got ${this.queueSize}`,
      );
    this.#model = model;
    this.#observer = options.observer ?? {};
    this.context = new Context(model, {
      // Each step samples every row before the next step: its logits are read into one buffer.
      reuseLogits: true,
      candidates: Math.min(BATCHER_CANDIDATES, model.hparams.nVocab),
      ...options.contextOptions,
      nCtx: this.parallel * this.ctxPerSlot,
      nSeqMax: this.parallel,
      // Each slot's cells in its own region: a step mixing slots still attends by spans over each
      // slot's run of cells, and a slot's context is its region.
      kvUnified: false,
    });
    // The steps of 1…parallel generating streams (up to 32 of them), built before the first request
    // instead of while streams join and leave; the first decode runs after this. A failure here is
    // reported, and the step that needs the shape builds it again.
    const sizes = Array.from({ length: Math.min(this.parallel, 32, this.context.nUbatch) }, (_, i) => i + 1);
    this.context.prepareDecode(sizes).catch((e) => this.#observer.onJobError?.(e));
    this.#slots = Array.from({ length: this.parallel }, (_, id) => ({
      id,
      job: undefined,
      lastUsed: 0,
      last: { promptTokens: 0, cachedTokens: 0, generated: 0 },
    }));
  }

  /** Jobs waiting for a slot. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Slots running a job. */
  get busy(): number {
    return this.#slots.filter((s) => s.job).length;
  }

  /** Jobs that can be submitted now: free slots plus free queue places. */
  capacity(): number {
    if (this.#closed) return 0;
    const free = this.#slots.filter((s) => !s.job).length;
    return Math.max(0, free + this.queueSize - this.#queue.length);
  }

  /** Whether nothing runs or waits. */
  get idle(): boolean {
    return this.#queue.length === 0 && this.busy === 0;
  }

  slots(): SlotInfo[] {
    return this.#slots.map((s) => {
      const j = s.job;
      const nPast = this.context.seqCount(s.id);
      return {
        id: s.id,
        state: !j ? "idle" : j.nPast < j.spec.ids.length ? "prefill" : "generating",
        nCtx: this.ctxPerSlot,
        nPast,
        promptTokens: j ? j.spec.ids.length : s.last.promptTokens,
        cachedTokens: j ? j.cached : s.last.cachedTokens,
        generated: j ? j.tokens.length : s.last.generated,
      };
    });
  }

  /**
   * Queues a job; resolves when it ends (also aborted or timed out), rejects when it fails.
   * Throws (synchronously) a {@link ServerError}: PROMPT_TOO_LONG, QUEUE_FULL, CLOSED, or
   * INVALID_ARGUMENT for an empty prompt.
   */
  submit(spec: JobSpec): Promise<JobResult> {
    if (this.#closed) throw new ServerError("CLOSED", "the server is shutting down");
    if (spec.ids.length === 0) throw new ServerError("INVALID_ARGUMENT", "the prompt has no tokens");
    if (spec.ids.length >= this.ctxPerSlot)
      throw new ServerError(
        "PROMPT_TOO_LONG",
        `the prompt has ${spec.ids.length} tokens; a slot's context holds ${this.ctxPerSlot} ` +
          "(prompt and generated tokens together)",
      );
    const free = this.#slots.filter((s) => !s.job).length;
    if (this.#queue.length >= free + this.queueSize)
      throw new ServerError(
        "QUEUE_FULL",
        `all ${this.parallel} slots are busy and ${this.#queue.length} requests wait (the queue holds ${this.queueSize})`,
      );
    const job = new Job(spec);
    this.#queue.push(job);
    this.#kick();
    return job.done;
  }

  /** Stops taking jobs; resolves when every queued and running job has ended. */
  async drain(): Promise<void> {
    this.#closed = true;
    while (this.#running) await this.#running;
  }

  /** Stops everything (jobs end with "shutdown") and frees the context. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const j of this.#queue.splice(0)) this.#end(j, undefined, "shutdown");
    for (const s of this.#slots) if (s.job) this.#end(s.job, s, "shutdown");
    while (this.#running) await this.#running;
    this.context.dispose();
  }

  #kick(): void {
    if (this.#running) return;
    // Start on the next turn of the event loop, so jobs submitted together (n choices, requests
    // read in the same I/O phase) share the first step.
    this.#running = nextTick()
      .then(() => this.#loop())
      .finally(() => {
        this.#running = undefined;
        // A job submitted while the loop was finishing.
        if (this.#queue.length > 0) this.#kick();
      });
  }

  async #loop(): Promise<void> {
    for (;;) {
      this.#expire();
      for (const c of [...this.#assign(), ...this.#followers()]) {
        try {
          await this.context.seqClone(c.source, c.slot.id, c.n);
        } catch (e) {
          if (c.slot.job) this.#fail(c.slot.job, c.slot, e);
        }
      }
      const active = this.#slots.filter((s) => s.job);
      if (active.length === 0) return;
      await this.#step(active);
      // Let the event loop run between steps: new requests, disconnects, health checks.
      await nextTick();
    }
  }

  /** Ends jobs whose client left or whose deadline passed, queued or running. */
  #expire(): void {
    const now = performance.now();
    const why = (j: Job): JobFinish | undefined =>
      j.spec.signal?.aborted
        ? "abort"
        : j.spec.deadline !== undefined && now > j.spec.deadline
          ? "timeout"
          : undefined;
    for (let i = this.#queue.length - 1; i >= 0; i--) {
      const r = why(this.#queue[i]!);
      if (r) this.#end(this.#queue.splice(i, 1)[0]!, undefined, r);
    }
    for (const s of this.#slots) {
      const r = s.job && why(s.job);
      if (r) this.#end(s.job!, s, r);
    }
  }

  /** Gives waiting jobs free slots, reusing the longest cached prefix of their prompts. */
  #assign(): { slot: Slot; source: number; n: number }[] {
    const copies: { slot: Slot; source: number; n: number }[] = [];
    while (this.#queue.length > 0) {
      const free = this.#slots.filter((s) => !s.job);
      if (free.length === 0) break;
      const job = this.#queue.shift()!;
      const ids = job.spec.ids;
      const reuse = job.spec.cachePrompt !== false;
      // A prefix match of at most ids.length - 1 tokens: the last prompt token is always
      // decoded, its logits start generation.
      const match = (seq: number): number => {
        if (!reuse) return 0;
        const h = this.context.history(seq);
        if (!h) return 0;
        let k = 0;
        const n = Math.min(h.length, ids.length - 1);
        while (k < n && h[k] === ids[k]) k++;
        // A sliding-window cache that reused cells may not go on from there.
        return this.context.canContinue(seq, k) ? k : 0;
      };
      let slot = free[0]!;
      let best = -1;
      for (const s of free) {
        const m = match(s.id);
        if (m > best || (m === best && s.lastUsed < slot.lastUsed)) {
          best = m;
          slot = s;
        }
      }
      // Another slot may hold a longer match (the same conversation running elsewhere): copy its
      // K/V rows into this slot's region instead of prefilling them again.
      let source = slot;
      for (const s of this.#slots) {
        if (s === slot) continue;
        const m = match(s.id);
        if (m > best) {
          best = m;
          source = s;
        }
      }
      // A group-mate prefilling the same prompt right now: wait for it, then copy its rows.
      const leader = job.spec.group
        ? this.#slots.find(
            (s) =>
              s.job !== undefined &&
              s.job.spec.group === job.spec.group &&
              s.job.nPast < s.job.spec.ids.length &&
              !s.job.leader,
          )?.job
        : undefined;
      if (leader && leader.spec.ids.length - 1 > best) {
        job.leader = leader;
        best = 0;
        this.context.seqRm(slot.id, 0, -1);
      } else if (source !== slot) {
        this.context.seqRm(slot.id, 0, -1);
        copies.push({ slot, source: source.id, n: best });
      } else this.context.seqRm(slot.id, best, -1);
      job.nPast = best;
      job.cached = best;
      job.startedAt = performance.now();
      job.decoder = this.#model.tokenizer.streamDecoder();
      slot.job = job;
      slot.lastUsed = ++this.#clock;
      try {
        job.spec.sampler.acceptPrompt(ids);
        job.spec.onStart?.({ slot: slot.id, cachedTokens: best });
      } catch (e) {
        this.#fail(job, slot, e);
      }
    }
    return copies;
  }

  /**
   * Jobs waiting for a group-mate's prefill: once it is done, copy its prompt rows (all but the
   * last token, whose logits each job computes itself); when it ended without finishing, prefill
   * from scratch.
   */
  #followers(): { slot: Slot; source: number; n: number }[] {
    const copies: { slot: Slot; source: number; n: number }[] = [];
    for (const slot of this.#slots) {
      const j = slot.job;
      const l = j?.leader;
      if (!j || !l) continue;
      const at = this.#slots.find((s) => s.job === l);
      if (!at) j.leader = undefined;
      else if (l.nPast >= l.spec.ids.length) {
        const n = j.spec.ids.length - 1;
        copies.push({ slot, source: at.id, n });
        j.nPast = n;
        j.cached = n;
        j.leader = undefined;
      }
    }
    return copies;
  }

  async #step(active: Slot[]): Promise<void> {
    const tokens: number[] = [];
    const seqs: number[] = [];
    const want: boolean[] = [];
    const rows: { slot: Slot; index: number }[] = [];
    for (const s of active) {
      const j = s.job!;
      if (j.pending < 0) continue;
      rows.push({ slot: s, index: tokens.length });
      tokens.push(j.pending);
      seqs.push(s.id);
      want.push(true);
    }
    const generating = tokens.length;
    let budget = this.batchSize - tokens.length;
    // Prompts in arrival order, as much of each as the step's budget allows.
    const prefilling = active
      .filter((s) => s.job!.pending < 0 && !s.job!.leader)
      .sort((a, b) => a.job!.queuedAt - b.job!.queuedAt);
    for (const s of prefilling) {
      const j = s.job!;
      j.chunk = 0;
      if (budget <= 0) continue;
      const ids = j.spec.ids;
      const take = Math.min(budget, ids.length - j.nPast);
      for (let k = 0; k < take; k++) {
        tokens.push(ids[j.nPast + k]!);
        seqs.push(s.id);
        want.push(false);
      }
      j.chunk = take;
      budget -= take;
      if (j.nPast + take === ids.length) {
        want[tokens.length - 1] = true;
        rows.push({ slot: s, index: tokens.length - 1 });
      }
    }
    const t0 = performance.now();
    let logits: Awaited<ReturnType<Context["decode"]>>;
    try {
      logits = await this.context.decode({ tokens, seq: seqs, logits: want });
    } catch (e) {
      // The context removed the batch's tokens again; every job in it fails, the others go on.
      this.#observer.onJobError?.(e);
      for (const s of active) {
        const j = s.job;
        if (j && (j.pending >= 0 || j.chunk > 0)) this.#fail(j, s, e);
      }
      return;
    }
    this.#observer.onStep?.({
      tokens: tokens.length,
      promptTokens: tokens.length - generating,
      generating,
      ms: performance.now() - t0,
    });
    for (const s of prefilling) {
      const j = s.job;
      if (!j) continue;
      j.nPast += j.chunk;
      if (j.nPast === j.spec.ids.length && j.chunk > 0) j.prefilledAt = performance.now();
    }
    for (const { slot, index } of rows) {
      const j = slot.job;
      if (!j) continue;
      if (j.pending >= 0) {
        j.nPast++;
        j.pending = -1;
      }
      try {
        this.#next(slot, j, logits.get(index), logits.nCandidates > 0 ? logits.candidates(index) : undefined);
      } catch (e) {
        this.#fail(j, slot, e);
      }
    }
  }

  /** Samples a job's next token from its logits; ends the job or leaves the token pending. */
  #next(slot: Slot, j: Job, row: Float32Array, ids: Int32Array | undefined): void {
    const spec = j.spec;
    const max = spec.maxTokens ?? Number.POSITIVE_INFINITY;
    if (j.tokens.length >= max) {
      this.#end(j, slot, "length");
      return;
    }
    const tok = this.#model.tokenizer;
    let token: number;
    let logprob: number | undefined;
    let top: readonly TokenLogprob[] | undefined;
    if (spec.nProbs !== undefined) {
      const r = spec.sampler.sampleWithLogprobs(row, spec.nProbs);
      token = r.token;
      logprob = r.logprob;
      top = r.top;
    } else token = spec.sampler.sample(row, ids);
    if (tok.isEog(token)) {
      this.#end(j, slot, "eog");
      return;
    }
    spec.sampler.accept(token);
    j.tokens.push(token);
    const r = j.stops.push(j.decoder.push(token));
    j.text += r.text;
    spec.onToken?.({ token, text: r.text, ...(logprob !== undefined ? { logprob, top: top ?? [] } : {}) });
    if (r.stopped || spec.sampler.isDone()) {
      this.#end(j, slot, "stop", true);
      return;
    }
    if (j.tokens.length >= max) {
      this.#end(j, slot, "length");
      return;
    }
    // Prompt and completion together fill at most the slot's context: with `nPast` tokens decoded
    // and this one sampled, the slot holds nPast + 1.
    if (j.nPast + 1 >= this.ctxPerSlot) {
      this.#end(j, slot, "context");
      return;
    }
    j.pending = token;
  }

  /** Ends a job: flushes held-back text (unless a stop string cut it), frees its slot, resolves. */
  #end(j: Job, slot: Slot | undefined, finish: JobFinish, stopped = false): void {
    if (!stopped && j.decoder) {
      const rest = j.stops.push(j.decoder.flush());
      const tail = rest.stopped ? rest.text : rest.text + j.stops.flush();
      if (rest.stopped) finish = "stop";
      j.text += tail;
      if (tail && finish !== "abort")
        try {
          j.spec.onToken?.({ token: -1, text: tail });
        } catch {
          // the consumer is gone; the result still resolves
        }
    }
    if (slot) this.#release(slot);
    const now = performance.now();
    const started = j.startedAt || now;
    const prefilled = j.prefilledAt || now;
    const result: JobResult = {
      finish,
      tokens: j.tokens,
      text: j.text,
      promptTokens: j.spec.ids.length,
      cachedTokens: j.cached,
      queuedMs: started - j.queuedAt,
      promptMs: prefilled - started,
      generateMs: now - prefilled,
    };
    this.#observer.onJobEnd?.(result);
    j.resolve(result);
  }

  #fail(j: Job, slot: Slot, e: unknown): void {
    this.#release(slot);
    // What the slot holds may be half a prompt of a failed job: start it afresh next time.
    this.context.seqRm(slot.id, 0, -1);
    j.reject(e);
  }

  #release(slot: Slot): void {
    const j = slot.job;
    if (j)
      slot.last = { promptTokens: j.spec.ids.length, cachedTokens: j.cached, generated: j.tokens.length };
    slot.job = undefined;
  }
}
