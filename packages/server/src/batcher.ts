import { Context, type ContextOptions, type Logits, type Model } from "@minfer/engine";
import { Job, type JobFinish, type JobResult, type JobSpec } from "./job.js";
import { emitToken, flushText, type SampledToken } from "./job-output.js";
import { ServerError } from "./server-error.js";
import { type BatcherSpeculation, SlotDrafts, type SlotWant } from "./speculation.js";
import {
  candidatesServe,
  composeBatch,
  drawToken,
  type Output,
  type Slot,
  type StepBatch,
  sampleNext,
  wantsToken,
} from "./step.js";

export type { JobFinish, JobResult, JobSpec, TokenEvent } from "./job.js";
export type { BatcherSpeculation } from "./speculation.js";

/** What the batcher reports to an observer (metrics, logs). */
export interface BatcherObserver {
  /**
   * After each decode step: its tokens, how long the decode took (`ms`, from the call to its
   * logits), and `gapMs`, the time since the step before it returned (sampling, output not
   * overlapped, the event loop's turn, planning: what the device waits for between steps); absent
   * for the first step after the batcher was idle.
   */
  onStep?(info: {
    tokens: number;
    promptTokens: number;
    generating: number;
    /** Of the generating tokens, drafts (speculative decoding). */
    drafted: number;
    ms: number;
    gapMs?: number;
  }): void;
  onJobEnd?(result: JobResult): void;
  onJobError?(error: unknown): void;
}

export interface BatcherOptions {
  /** Slots (sequences generating at once). */
  readonly parallel: number;
  /**
   * KV cells of each slot: its prompt plus generated tokens. With `contextOptions.kvUnified` the
   * slots share one pool of this many cells instead of having this many each.
   */
  readonly ctxPerSlot: number;
  /** Most tokens one step decodes (generating slots first, then prompt chunks). */
  readonly batchSize: number;
  /** Most jobs waiting for a slot; one more is refused with QUEUE_FULL. */
  readonly queueSize: number;
  /**
   * Of the shared context; `candidates` defaults to {@link BATCHER_CANDIDATES} (0 turns them off).
   * `kvUnified` (default false here, unlike a bare Context): true makes one pool of `ctxPerSlot`
   * cells all slots draw from (llama-server's `--kv-unified`), so one request may use the whole
   * pool while the others leave room. A step that needs cells first drops idle slots' cached
   * prompts (least recently used first), then shortens its prompt chunks; when the generating
   * slots alone do not fit, the job holding the most cells fails with CONTEXT_FULL. False gives
   * each slot a region of `ctxPerSlot` cells of its own.
   */
  readonly contextOptions?: Omit<ContextOptions, "nCtx" | "nSeqMax">;
  readonly observer?: BatcherObserver;
  /**
   * Deliver each step's token output (detokenizing, stop strings, `onToken`) while the next step
   * decodes, instead of before it starts. The output is the same either way. Default true.
   */
  readonly overlapOutput?: boolean;
  /**
   * Read back only the candidate ids and their logits of a step whose jobs can all sample from
   * those (greedy or top-k, no grammar, logprobs or penalties with a history: see
   * `Sampler.canSampleCandidates`), not the rows (64 rows of a 152k vocabulary are 39 MB); a row
   * the candidates cannot decide is read from the device then. The tokens are the same either
   * way. Default true; needs the context's `candidates`.
   */
  readonly candidatesOnly?: boolean;
  /**
   * When a slot's context is full, drop older tokens and go on (llama-server's `--context-shift`)
   * instead of ending the job with finish "context". Default false.
   */
  readonly contextShift?: boolean;
  /**
   * Speculative decoding: each generating slot's next tokens drafted (n-gram look-up or a draft
   * model) and verified in the step's one decode; see {@link BatcherSpeculation}. Default: none.
   * Not with `contextShift`: a slot that shifted stops drafting.
   */
  readonly speculative?: BatcherSpeculation;
  /**
   * Every step decodes batch-invariantly (Batch.batchInvariant): each token's results are those of
   * a step of that token alone, so a request's output does not depend on the requests decoding
   * beside it, the chunks its prompt was cut into or the drafts it verified — greedy output with
   * and without speculation is the same for any number of concurrent requests. It costs throughput
   * where batched kernels differ from one-token ones (CUDA: no tensor cores for steps of several
   * tokens, prompts included; an AVX-512 CPU: no panel GEMM). Default false: only a step that
   * verifies drafts of a request decoding alone is batch-invariant (what makes that request's
   * output its output without drafts; with other requests in the step, their batching differs
   * with and without drafts anyway).
   */
  readonly batchInvariant?: boolean;
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
  /** Whether the slot drafts (speculative decoding), and its job's counters (of the last job when idle). */
  readonly speculative: boolean;
  readonly drafted: number;
  readonly draftAccepted: number;
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
  readonly #overlap: boolean;
  readonly #candidatesOnly: boolean;
  readonly #batchInvariant: boolean;
  readonly #contextShift: boolean;
  /** One KV pool for all slots (contextOptions.kvUnified). */
  readonly #unified: boolean;
  readonly #drafts: SlotDrafts | undefined;
  /** Outputs of the last step's rows, delivered during the next decode (with overlap) or at once. */
  #outputs: Output[] = [];
  #running: Promise<void> | undefined;
  /** When the last decode returned (performance.now()); undefined while the batcher is idle. */
  #lastDecodeEnd: number | undefined;
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
    this.#overlap = options.overlapOutput ?? true;
    this.#candidatesOnly = options.candidatesOnly ?? true;
    this.#batchInvariant = options.batchInvariant ?? false;
    this.#contextShift = options.contextShift ?? false;
    this.#unified = options.contextOptions?.kvUnified ?? false;
    this.#drafts = options.speculative ? new SlotDrafts(options.speculative, this.parallel) : undefined;
    this.context = new Context(model, {
      // Each step samples every row before the next step: its logits are read into one buffer.
      reuseLogits: true,
      candidates: Math.min(BATCHER_CANDIDATES, model.hparams.nVocab),
      ...options.contextOptions,
      // (every decode invariant, one token too, over a window other slots do not move)
      ...(this.#batchInvariant ? { batchInvariant: true } : {}),
      nCtx: this.#unified ? this.ctxPerSlot : this.parallel * this.ctxPerSlot,
      nSeqMax: this.parallel,
      // Without a unified pool each slot's cells are a region of its own: a step mixing slots still
      // attends by spans over each slot's run of cells, and a slot's context is its region.
      kvUnified: this.#unified,
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
      last: { promptTokens: 0, cachedTokens: 0, generated: 0, drafted: 0, accepted: 0 },
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
        speculative: this.#drafts !== undefined,
        drafted: j ? j.drafting.drafted : s.last.drafted,
        draftAccepted: j ? j.drafting.accepted : s.last.accepted,
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
    if (spec.slot !== undefined) this.#slot(spec.slot);
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
    // The tokens sampled so far are reported before the jobs end, as they would have been.
    this.#deliverOutputs();
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
        // A job submitted while the loop was finishing (not one waiting for a slot an action holds).
        const free = this.#freeSlots();
        if (this.#queue.some((j) => this.#freeFor(j, free).length > 0)) this.#kick();
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
      if (active.length === 0) {
        this.#deliverOutputs();
        this.#lastDecodeEnd = undefined; // idle: the next step's gap is not host work
        return;
      }
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
    const running = this.#slots.flatMap((s) => (s.job ? [s.job] : []));
    if (!this.#queue.some(why) && !running.some(why)) return;
    // The tokens sampled so far are reported first, as without the overlap.
    this.#deliverOutputs();
    for (let i = this.#queue.length - 1; i >= 0; i--) {
      const r = why(this.#queue[i]!);
      if (r) this.#end(this.#queue.splice(i, 1)[0]!, undefined, r);
    }
    for (const s of this.#slots) {
      const r = s.job && why(s.job);
      if (r) this.#end(s.job!, s, r);
    }
  }

  /** Slots no job runs in and no action holds. */
  #freeSlots(): Slot[] {
    return this.#slots.filter((s) => !s.job && !s.reserved);
  }

  /** Of the free slots, those a job may take: its own (`slot`) or any. */
  #freeFor(job: Job, free: Slot[]): Slot[] {
    return job.spec.slot === undefined ? free : free.filter((s) => s.id === job.spec.slot);
  }

  /** Slot `id`; a {@link ServerError} INVALID_ARGUMENT when there is none. */
  #slot(id: number): Slot {
    const slot = Number.isInteger(id) ? this.#slots[id] : undefined;
    if (!slot)
      throw new ServerError(
        "INVALID_ARGUMENT",
        `slot ${id} does not exist; the slots are 0 to ${this.parallel - 1}`,
      );
    return slot;
  }

  /**
   * Runs `action` on an idle slot's sequence (llama-server's slot save, restore, erase) with the
   * slot held: no job takes it meanwhile. Throws a {@link ServerError} SLOT_BUSY when a job or
   * another action has it, INVALID_ARGUMENT for a slot that does not exist.
   */
  async withSlot<T>(id: number, action: (seq: number) => Promise<T>): Promise<T> {
    const slot = this.#slot(id);
    if (slot.job || slot.reserved) throw new ServerError("SLOT_BUSY", `slot ${id} is busy`);
    slot.reserved = true;
    try {
      return await action(slot.id);
    } finally {
      slot.reserved = false;
      slot.lastUsed = ++this.#clock;
      if (this.#queue.length > 0) this.#kick();
    }
  }

  /** Gives waiting jobs free slots, reusing the longest cached prefix of their prompts. */
  #assign(): { slot: Slot; source: number; n: number }[] {
    const copies: { slot: Slot; source: number; n: number }[] = [];
    for (;;) {
      const idle = this.#freeSlots();
      if (idle.length === 0) break;
      // The first waiting job a slot is free for (one asking for a busy slot lets the others by).
      const at = this.#queue.findIndex((j) => this.#freeFor(j, idle).length > 0);
      if (at < 0) break;
      const job = this.#queue.splice(at, 1)[0]!;
      const free = this.#freeFor(job, idle);
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
      // K/V rows into this slot's region instead of prefilling them again (not for a job given its
      // slot: it reads that slot's cache, as llama-server's id_slot does).
      let source = slot;
      for (const s of job.spec.slot === undefined ? this.#slots : []) {
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
      // (generated text as llama-server gives it: each token's own text, a first piece's
      // SentencePiece space kept)
      job.decoder = this.#model.tokenizer.streamDecoder({
        keepLeadingSpace: true,
        ...(job.spec.preserve ? { preserve: job.spec.preserve } : {}),
      });
      slot.job = job;
      slot.lastUsed = ++this.#clock;
      try {
        job.spec.sampler.acceptPrompt(ids);
        job.spec.onStart?.({ slot: slot.id, cachedTokens: best });
        job.spec.onPrefill?.({ total: job.spec.ids.length, cache: best, processed: best });
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

  /**
   * One step: decodes the next token of every generating slot and a chunk of each prefilling
   * prompt, then chooses each row's next token. With `overlapOutput`, the output of the previous
   * step's tokens is delivered while this step's decode runs; without, each step delivers its own
   * tokens' output before the next decode starts.
   */
  async #step(active: Slot[]): Promise<void> {
    const limit = this.#unified ? this.#room(active) : this.batchSize;
    const drafts = this.#drafts ? await this.#draftFor(active, limit) : undefined;
    const batch = composeBatch(
      active.filter((s) => s.job),
      limit,
      drafts,
    );
    if (batch.tokens.length === 0) {
      // Only jobs ending after their last token's output: nothing to decode.
      this.#deliverOutputs();
      return;
    }
    for (const { job } of batch.members) job.inFlight = true;
    const gapMs = this.#lastDecodeEnd === undefined ? undefined : performance.now() - this.#lastDecodeEnd;
    const decoding = this.#startDecode(batch, this.#onlyCandidates(batch));
    if (this.#overlap && this.#outputs.length > 0) {
      // Let the decode reach its native call (it starts on a later microtask), then do the output
      // work of the previous step's tokens while it runs.
      await nextTick();
      this.#deliverOutputs();
    }
    const done = await decoding;
    this.#lastDecodeEnd = performance.now();
    // A client that left during the output (or a deadline passed) ends its job now, before its
    // next token is sampled, as it would have at the start of this step without the overlap.
    if (this.#overlap) this.#expire();
    this.#land(batch.members);
    if ("error" in done) {
      // The context removed the batch's tokens again; every job in it fails, the others go on.
      this.#observer.onJobError?.(done.error);
      for (const { slot, job } of batch.members) if (slot.job === job) this.#fail(job, slot, done.error);
      return;
    }
    this.#observer.onStep?.({
      tokens: batch.tokens.length,
      promptTokens: batch.tokens.length - batch.generating,
      generating: batch.generating,
      drafted: batch.drafted,
      ms: done.ms,
      ...(gapMs === undefined ? {} : { gapMs }),
    });
    await this.#chooseNext(batch, done.logits);
    if (!this.#overlap) this.#deliverOutputs();
  }

  /**
   * The drafts of the step's generating slots (speculative decoding): each slot asks for up to its
   * job's draftMax tokens, fewer where its context, its token budget or the step's room (the batch
   * size, and with a unified pool its free cells) ends sooner; a draft shorter than draftMin is
   * dropped. A drafter that fails fails the jobs that asked for drafts (and is reported, onJobError).
   */
  async #draftFor(active: Slot[], limit: number): Promise<Map<number, number[]> | undefined> {
    const drafts = this.#drafts!;
    const generating = active.filter((s) => s.job && !s.job.ended && s.job.pending >= 0);
    let room = limit - generating.length;
    if (this.#unified) {
      let prompt = 0;
      for (const s of active)
        if (s.job && s.job.pending < 0 && !s.job.leader) prompt += s.job.spec.ids.length - s.job.nPast;
      room = Math.min(room, this.context.nCtx - this.context.used() - generating.length - prompt);
    }
    const wants: SlotWant[] = [];
    for (const s of generating) {
      const j = s.job!;
      const most = j.spec.draftMax ?? drafts.draftMax;
      const left = (j.spec.maxTokens ?? Number.POSITIVE_INFINITY) - j.tokens.length - 1;
      // the pending token at nPast and the drafts after it, all before the slot's last cell
      const max = Math.min(most, left, this.ctxPerSlot - j.nPast - 2);
      if (j.shifted || max < Math.max(1, j.spec.draftMin ?? drafts.draftMin)) continue;
      wants.push({ slot: s.id, job: j, max });
    }
    if (wants.length === 0 || room <= 0) return undefined;
    let got: Map<number, number[]>;
    try {
      got = await drafts.draft(wants);
    } catch (e) {
      // (no silent fallback to decoding without drafts: the jobs that asked fail with the error)
      this.#observer.onJobError?.(e);
      for (const w of wants) {
        const slot = this.#slots[w.slot]!;
        if (slot.job === w.job && !w.job.ended) this.#fail(w.job, slot, e);
      }
      return undefined;
    }
    for (const w of wants) {
      const d = got.get(w.slot);
      if (!d) continue;
      if (d.length < Math.max(1, w.job.spec.draftMin ?? drafts.draftMin) || room <= 0) got.delete(w.slot);
      else {
        if (d.length > room) d.length = room;
        room -= d.length;
      }
    }
    return got;
  }

  /**
   * A unified pool's room for the next step (at most `batchSize` tokens): idle slots' cached
   * prompts are dropped, least recently used first, until the generating slots' tokens and the
   * prompts' remaining tokens fit; failing that, prompts get the cells left; and while the
   * generating slots alone do not fit (or a lone prompt gets no cell), the job holding the most
   * cells fails with CONTEXT_FULL, as llama-server's "Context size has been exceeded".
   */
  #room(active: Slot[]): number {
    const ctx = this.context;
    for (;;) {
      const jobs = active.filter((s) => s.job && !s.job.ended);
      if (jobs.length === 0) return this.batchSize;
      let generating = 0;
      let prompt = 0;
      for (const s of jobs) {
        const j = s.job!;
        if (j.pending >= 0) generating++;
        else if (!j.leader) prompt += j.spec.ids.length - j.nPast;
      }
      const want = Math.min(this.batchSize, generating + prompt);
      const free = ctx.nCtx - ctx.used();
      if (free >= want) return this.batchSize;
      const idle = this.#slots
        .filter((s) => !s.job && !s.reserved && ctx.seqCount(s.id) > 0)
        .sort((a, b) => a.lastUsed - b.lastUsed)[0];
      if (idle) {
        ctx.seqRm(idle.id, 0, -1);
        continue;
      }
      if (free >= generating && free > 0) return free;
      const biggest = jobs.reduce((a, b) => (ctx.seqCount(b.id) > ctx.seqCount(a.id) ? b : a));
      this.#fail(
        biggest.job!,
        biggest,
        new ServerError(
          "CONTEXT_FULL",
          `the KV pool shared by the slots (${ctx.nCtx} cells, --kv-unified) has no room for this ` +
            `request's next token: ${ctx.used()} cells are held by ${jobs.length} running requests`,
        ),
      );
    }
  }

  /** Whether the step reads back only its rows' candidates (see BatcherOptions.candidatesOnly). */
  #onlyCandidates(b: StepBatch): boolean {
    const k = this.context.nCandidates;
    const nVocab = this.#model.hparams.nVocab;
    return (
      this.#candidatesOnly &&
      k > 0 &&
      b.rows.length > 0 &&
      b.tokens.length <= this.context.nUbatch &&
      b.rows.every(({ slot }) => slot.job === undefined || candidatesServe(slot.job, k, nVocab))
    );
  }

  /**
   * Starts the batch's decode now; the promise settles with its logits and how long it took, or
   * with its error: it never rejects.
   */
  #startDecode(
    b: StepBatch,
    candidatesOnly: boolean,
  ): Promise<{ logits: Logits; ms: number } | { error: unknown }> {
    const t0 = performance.now();
    let p: Promise<Logits>;
    try {
      p = this.context.decode({
        tokens: b.tokens,
        seq: b.seq,
        logits: b.logits,
        candidatesOnly,
        // (BatcherOptions.batchInvariant: every step; else a step that verifies drafts of one request
        // alone, so that greedy output with speculation is the output without)
        ...(this.#batchInvariant || (b.drafted > 0 && b.members.length === 1)
          ? { batchInvariant: true }
          : {}),
      });
    } catch (e) {
      p = Promise.reject(e);
    }
    return p.then(
      (logits) => ({ logits, ms: performance.now() - t0 }),
      (error: unknown) => ({ error }),
    );
  }

  /**
   * The decode returned: its jobs are no longer in flight. A job that ended meanwhile (a stop
   * string in the previous token's output, a failure, shutdown) frees its slot now, and the cells
   * of the tokens this decode added for it are removed: the slot holds what it would have held had
   * the job ended before this decode.
   */
  #land(members: readonly { slot: Slot; job: Job }[]): void {
    for (const { slot, job } of members) {
      job.inFlight = false;
      if (!job.ended || slot.job !== job) continue;
      this.#release(slot);
      this.context.seqRm(slot.id, job.clearOnLanding ? 0 : Math.min(job.nPast, job.keep ?? job.nPast), -1);
    }
  }

  /**
   * After the decode: what the next decode needs. Prompts advance by their chunks; each row's job
   * samples its next token, which becomes pending (or the job ends), and queues that token's output.
   * When the step read back only the candidates, a row they cannot decide is read from the device.
   */
  async #chooseNext(b: StepBatch, logits: Logits): Promise<void> {
    for (const s of b.prefilling) {
      const j = s.job;
      if (!j) continue;
      j.nPast += j.chunk;
      if (j.chunk > 0) j.spec.onPrefill?.({ total: j.spec.ids.length, cache: j.cached, processed: j.nPast });
      if (j.nPast === j.spec.ids.length && j.chunk > 0) j.prefilledAt = performance.now();
    }
    for (const { slot, index, drafts } of b.rows) {
      const j = slot.job;
      if (!j) continue;
      if (j.pending >= 0) {
        j.nPast++;
        j.pending = -1;
      }
      // rows index, index + 1, …: the next one while the token sampled equals the draft after it
      let accepted = 0;
      if (drafts) {
        j.drafting.drafted += drafts.length;
        j.drafting.steps++;
      }
      try {
        for (;;) {
          const drawn = await this.#drawRow(slot, j, logits, index + accepted);
          if (drawn === null) break; // (the job ended while its row was read)
          const next = sampleNext(j, drawn, this.#model.tokenizer, this.ctxPerSlot, this.#contextShift);
          if (next.shift) {
            this.#dropDrafts(slot, j, drafts, accepted);
            this.#shift(slot, j);
          }
          this.#outputs.push({ slot, job: j, ...next, at: j.tokens.length });
          // A job that ends after its output takes no further decode: its slot is free for the next
          // job now, as it would be without the overlap.
          if (next.end) {
            this.#release(slot);
            break;
          }
          if (!drafts || accepted >= drafts.length || next.token?.id !== drafts[accepted]) break;
          // the draft is the token: it is in the cache already, and its row is next
          accepted++;
          j.drafting.accepted++;
          j.nPast++;
          j.pending = -1;
        }
      } catch (e) {
        this.#fail(j, slot, e);
      }
      this.#dropDrafts(slot, j, drafts, accepted);
    }
  }

  /**
   * A row's token for job `j` (undefined when it takes none; null when the job ended while the row
   * was read from the device). When the step read back only the candidates, a row they cannot
   * decide is read from the device.
   */
  async #drawRow(
    slot: Slot,
    j: Job,
    logits: Logits,
    index: number,
  ): Promise<SampledToken | undefined | null> {
    if (!wantsToken(j)) return undefined;
    const ids = logits.nCandidates > 0 ? logits.candidates(index) : undefined;
    const t =
      ids && !logits.rowsRead && j.spec.nProbs === undefined
        ? j.spec.sampler.sampleCandidates(ids, logits.candidateLogits(index), logits.nVocab)
        : -1;
    if (t >= 0) return { id: t };
    if (logits.rowsRead) return drawToken(j, logits.get(index), ids);
    const row = await logits.fetch(index);
    // (the read let other events run: a job that ended meanwhile has left its slot)
    if (slot.job !== j || j.ended) return null;
    return drawToken(j, row, ids);
  }

  /**
   * After a slot's rows: its drafts after the `accepted` ones leave the cache, so the slot holds
   * the tokens it decoded and kept, as without drafts (not for a job that failed: its cells go).
   */
  #dropDrafts(slot: Slot, j: Job, drafts: readonly number[] | undefined, accepted: number): void {
    if (!drafts || accepted >= drafts.length || j.clearOnLanding) return;
    if (slot.job === j || slot.job === undefined) this.context.seqRm(slot.id, j.nPast, -1);
  }

  /**
   * The output work of the queued tokens, in the order they were sampled: text, stop strings,
   * `onToken`, and the ends that come after them. A failure (the consumer gone) fails that job only.
   */
  #deliverOutputs(): void {
    const outputs = this.#outputs;
    this.#outputs = [];
    for (const o of outputs) {
      const j = o.job;
      if (j.ended) continue;
      try {
        if (o.token && emitToken(j, o.token)) {
          this.#cut(j, o.at);
          this.#end(j, o.slot, "stop", true);
        } else if (o.end) this.#end(j, o.slot, o.end.finish, o.end.stopped);
      } catch (e) {
        // (the consumer failed at this token: tokens sampled after it from drafts go)
        this.#cut(j, o.at);
        this.#fail(j, o.slot, e);
      }
    }
  }

  /**
   * A stop string ended job `j` at its token `at` (a count) while later tokens were sampled in the
   * same step (from accepted drafts): they go, from its tokens and its slot's cells, so it ends as
   * without drafts — the stop token the last, its cell not kept (it was never decoded then).
   */
  #cut(j: Job, at: number | undefined): void {
    if (at === undefined || j.tokens.length <= at) return;
    j.tokens.length = at;
    if (!j.shifted) j.keep = j.spec.ids.length + at - 1;
  }

  /**
   * Ends a job: flushes held-back text (unless a stop string cut it), resolves, frees its slot (once
   * the decode in flight, if it holds the job, returns). A job ends once.
   */
  #end(j: Job, slot: Slot | undefined, finish: JobFinish, stopped = false): void {
    if (j.ended) return;
    j.ended = true;
    if (!stopped && j.decoder) finish = flushText(j, finish);
    if (slot) this.#free(slot, j);
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
      ...(j.stopWord !== undefined ? { stopWord: j.stopWord } : {}),
      truncated: j.shifted || finish === "context",
      ...(this.#drafts ? { speculative: { ...j.drafting } } : {}),
    };
    this.#observer.onJobEnd?.(result);
    j.resolve(result);
  }

  /**
   * The context shift of a full slot, as llama-server's: keeps the first n_keep tokens (and the BOS
   * the model adds), drops half of the rest, and moves the later ones back (their RoPE rotated by
   * the engine), so generation goes on.
   */
  #shift(slot: Slot, j: Job): void {
    const bos = this.#model.tokenizer.vocab.addBos ? 1 : 0;
    const want = j.spec.nKeep === undefined ? 0 : j.spec.nKeep < 0 ? j.spec.ids.length : j.spec.nKeep;
    const keep = Math.min(want + bos, j.nPast - 2);
    const discard = Math.floor((j.nPast - keep) / 2);
    if (keep < 0 || discard <= 0)
      throw new ServerError(
        "INTERNAL",
        `context shift of slot ${slot.id}: nothing to drop (${j.nPast} tokens)`,
      );
    this.context.seqRm(slot.id, keep, keep + discard);
    this.context.seqAdd(slot.id, keep + discard, -1, -discard);
    j.nPast -= discard;
    j.shifted = true;
  }

  #fail(j: Job, slot: Slot, e: unknown): void {
    // What the slot holds may be half a prompt of a failed job: start it afresh next time.
    j.clearOnLanding = true;
    this.#free(slot, j);
    j.ended = true;
    j.reject(e);
  }

  /** Frees a job's slot, or leaves that to {@link #land} while the decode in flight holds the job. */
  #free(slot: Slot, j: Job): void {
    if (j.inFlight || slot.job !== j) return;
    this.#release(slot);
    if (j.clearOnLanding) this.context.seqRm(slot.id, 0, -1);
    else if (j.keep !== undefined) this.context.seqRm(slot.id, j.keep, -1);
  }

  #release(slot: Slot): void {
    const j = slot.job;
    if (j)
      slot.last = {
        promptTokens: j.spec.ids.length,
        cachedTokens: j.cached,
        generated: j.tokens.length,
        drafted: j.drafting.drafted,
        accepted: j.drafting.accepted,
      };
    slot.job = undefined;
  }
}
