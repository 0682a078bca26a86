import type { Tokenizer } from "@minfer/tokenizer";
import type { Job, JobFinish } from "./job.js";
import type { Ending, SampledToken } from "./job-output.js";
import { ServerError } from "./server-error.js";

// The parts of a batcher step that need no batcher state: which tokens a step decodes, and what a
// row's job does with its logits (the next token, or its end).

/** A slot: one sequence of the shared context, idle (its cache kept for reuse) or running a job. */
export interface Slot {
  readonly id: number;
  job: Job | undefined;
  lastUsed: number;
  /** Held by a slot action (save, restore, erase): no job is given the slot meanwhile. */
  reserved?: boolean;
  /** What the slot's last finished job held, for /slots (as llama-server keeps a slot's last task). */
  last: { promptTokens: number; cachedTokens: number; generated: number; drafted: number; accepted: number };
}

/** One step's decode: its inputs, the rows it samples and the jobs it holds. */
export interface StepBatch {
  readonly tokens: number[];
  readonly seq: number[];
  readonly logits: boolean[];
  /**
   * Rows of logits to sample: each generating slot's, and a prompt's last token's. A generating
   * slot's `drafts` (speculative decoding) follow its pending token in the batch, each with its
   * row: row index + i is sampled once the token sampled before it equals drafts[i - 1].
   */
  readonly rows: { slot: Slot; index: number; drafts?: readonly number[] }[];
  /** The jobs with tokens in it (in flight while it decodes). */
  readonly members: { slot: Slot; job: Job }[];
  prefilling: Slot[];
  /** Tokens of the generating slots: their pending tokens and drafts. */
  generating: number;
  /** Of those, drafted tokens. */
  drafted: number;
}

/** A row's outcome whose output is still to come: its token's, and then the job's end, if it ends. */
export interface Output {
  readonly slot: Slot;
  readonly job: Job;
  readonly token?: SampledToken;
  readonly end?: Ending;
  /** The job's token count with this token (a stop string in its text cuts the job's tokens there). */
  readonly at?: number;
}

/**
 * The step's batch: the pending token of each generating slot (and its drafts, from `drafts` by
 * slot id), then prompt chunks in arrival order. The drafts must fit `batchSize` with the pending
 * tokens (see the batcher's drafting).
 */
export function composeBatch(
  active: readonly Slot[],
  batchSize: number,
  drafts?: ReadonlyMap<number, readonly number[]>,
): StepBatch {
  const b: StepBatch = {
    tokens: [],
    seq: [],
    logits: [],
    rows: [],
    members: [],
    prefilling: [],
    generating: 0,
    drafted: 0,
  };
  for (const s of active) {
    const j = s.job!;
    if (j.pending < 0) continue;
    const d = drafts?.get(s.id);
    b.rows.push({ slot: s, index: b.tokens.length, ...(d && d.length > 0 ? { drafts: d } : {}) });
    b.members.push({ slot: s, job: j });
    for (const t of [j.pending, ...(d ?? [])]) {
      b.tokens.push(t);
      b.seq.push(s.id);
      b.logits.push(true);
    }
    b.drafted += d?.length ?? 0;
  }
  b.generating = b.tokens.length;
  let budget = batchSize - b.tokens.length;
  // Prompts in arrival order, as much of each as the step's budget allows.
  b.prefilling = active
    .filter((s) => s.job!.pending < 0 && !s.job!.leader)
    .sort((a, c) => a.job!.queuedAt - c.job!.queuedAt);
  for (const s of b.prefilling) {
    const j = s.job!;
    j.chunk = 0;
    if (budget <= 0) continue;
    const ids = j.spec.ids;
    const take = Math.min(budget, ids.length - j.nPast);
    for (let k = 0; k < take; k++) {
      b.tokens.push(ids[j.nPast + k]!);
      b.seq.push(s.id);
      b.logits.push(false);
    }
    j.chunk = take;
    budget -= take;
    if (take > 0) b.members.push({ slot: s, job: j });
    if (j.nPast + take === ids.length) {
      b.logits[b.tokens.length - 1] = true;
      b.rows.push({ slot: s, index: b.tokens.length - 1 });
    }
  }
  return b;
}

/** Whether a job samples a token from its row (else it has all the tokens it asked for). */
export function wantsToken(j: Job): boolean {
  return j.tokens.length < (j.spec.maxTokens ?? Number.POSITIVE_INFINITY);
}

/** A job's token drawn from its logits row (with the row's candidate ids when the step has them). */
export function drawToken(j: Job, row: Float32Array, ids: Int32Array | undefined): SampledToken {
  const spec = j.spec;
  if (spec.nProbs !== undefined) {
    const r = spec.sampler.sampleWithLogprobs(row, spec.nProbs);
    const post = spec.postSampling ? spec.sampler.postSamplingProbs(r.token, spec.nProbs) : undefined;
    return { id: r.token, logprob: r.logprob, top: r.top, ...(post ? { post } : {}) };
  }
  return { id: spec.sampler.sample(row, ids) };
}

/**
 * Whether a job can take its token from its row's candidate ids and their logits alone
 * (`Sampler.canSampleCandidates`): a step whose rows' jobs all can reads back only those.
 */
export function candidatesServe(j: Job, k: number, nVocab: number): boolean {
  return j.spec.nProbs === undefined && (!wantsToken(j) || j.spec.sampler.canSampleCandidates(k, nVocab));
}

/**
 * Accepts a job's next token (drawn by {@link drawToken} or from its candidates; undefined when
 * {@link wantsToken} says it takes none), leaving it pending for the next decode; or decides how
 * the job ends: before the token (end of generation, no tokens left) or after its output (the
 * grammar is complete, max tokens, the slot's context is full). A stop string is only known once
 * the output is made.
 */
export function sampleNext(
  j: Job,
  drawn: SampledToken | undefined,
  tokenizer: Tokenizer,
  ctxPerSlot: number,
  contextShift = false,
): { token?: SampledToken; end?: Ending; shift?: boolean } {
  const spec = j.spec;
  const max = spec.maxTokens ?? Number.POSITIVE_INFINITY;
  const endNow = (finish: JobFinish): { end: Ending } => ({ end: { finish, stopped: false } });
  if (!wantsToken(j)) return endNow("length");
  if (!drawn) throw new ServerError("INTERNAL", "sampleNext: no token drawn for a job that wants one");
  const token = drawn;
  if (tokenizer.isEog(token.id)) return endNow("eog");
  spec.sampler.accept(token.id);
  j.tokens.push(token.id);
  // Prompt and completion together fill at most the slot's context: with `nPast` tokens decoded
  // and this one sampled, the slot holds nPast + 1.
  const end: Ending | undefined = spec.sampler.isDone()
    ? { finish: "stop", stopped: true }
    : j.tokens.length >= max
      ? { finish: "length", stopped: false }
      : j.nPast + 1 >= ctxPerSlot && !contextShift
        ? { finish: "context", stopped: false }
        : undefined;
  if (!end) j.pending = token.id;
  // (the context is full and shifts: the batcher drops older tokens before the pending one's decode)
  if (!end && contextShift && j.nPast + 1 >= ctxPerSlot) return { token, shift: true };
  return end ? { token, end } : { token };
}
