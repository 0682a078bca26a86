import { BatchedModelDrafter, type DraftRequest, NgramDrafter } from "@minfer/engine";
import type { Job } from "./job.js";
import { ServerError } from "./server-error.js";

/**
 * Speculative decoding in the batcher (BatcherOptions.speculative): before each step, the next
 * tokens of every generating slot are drafted, and the step's one decode verifies all of them
 * with the slots' pending tokens and the prompt chunks. Each slot samples its rows in order, as
 * without drafts, keeping drafts while they equal what it samples: the tokens are the same, and so
 * is their distribution when sampling.
 */
export interface BatcherSpeculation {
  /**
   * Where drafts come from: "ngram" (look-up of each slot's last tokens in its own prompt and
   * output) or a {@link BatchedModelDrafter} over a context of the draft model with a sequence for
   * each slot (slot i drafts in sequence i; nSeqMax at least the batcher's `parallel`).
   */
  readonly drafter: "ngram" | BatchedModelDrafter;
  /** Most tokens drafted for a slot's verification. Default 16. */
  readonly draftMax?: number;
  /** A shorter draft is not verified. Default 0. */
  readonly draftMin?: number;
  /** ngram: the longest n-gram looked up. Default 4. */
  readonly ngramMax?: number;
  /** ngram: the shortest. Default min(2, ngramMax). */
  readonly ngramMin?: number;
}

/** One generating slot's request for drafts. */
export interface SlotWant {
  readonly slot: number;
  readonly job: Job;
  /** Most tokens (the room its slot, its token budget and the step leave). */
  readonly max: number;
}

/** The batcher's drafting: checked settings and each slot's drafter state. */
export class SlotDrafts {
  readonly kind: "ngram" | "draft";
  readonly draftMax: number;
  readonly draftMin: number;
  readonly #model: BatchedModelDrafter | undefined;
  readonly #ngrams = new Map<number, NgramDrafter>();
  readonly #ngramMax: number;
  readonly #ngramMin: number;
  /** Each slot's job and its prompt and tokens so far, grown by the tokens taken since the last step. */
  readonly #histories = new Map<number, { job: Job; tokens: number[] }>();

  constructor(spec: BatcherSpeculation, parallel: number) {
    const bad = (m: string): never => {
      throw new ServerError("INVALID_ARGUMENT", `speculative: ${m}`);
    };
    const int = (v: unknown, lo: number, hi: number, what: string) => {
      if (typeof v !== "number" || !Number.isInteger(v) || v < lo || v > hi)
        bad(`${what} must be an integer in [${lo}, ${hi}], got ${String(v)}`);
      return v as number;
    };
    this.draftMax = int(spec.draftMax ?? 16, 1, 256, "draftMax");
    this.draftMin = int(spec.draftMin ?? 0, 0, this.draftMax, "draftMin");
    this.#ngramMax = int(spec.ngramMax ?? 4, 1, 64, "ngramMax");
    this.#ngramMin = int(spec.ngramMin ?? Math.min(2, this.#ngramMax), 1, this.#ngramMax, "ngramMin");
    if (spec.drafter !== "ngram" && !(spec.drafter instanceof BatchedModelDrafter))
      bad('drafter must be "ngram" or a BatchedModelDrafter');
    const model = spec.drafter === "ngram" ? undefined : spec.drafter;
    if (model && model.context.nSeqMax < parallel)
      bad(
        `the draft context has ${model.context.nSeqMax} sequences; the batcher's ${parallel} slots need one each`,
      );
    this.kind = model ? "draft" : "ngram";
    this.#model = model;
  }

  /** A job's prompt and generated tokens (the last one pending), kept per slot and appended to. */
  #history(slot: number, job: Job): readonly number[] {
    let h = this.#histories.get(slot);
    if (h?.job !== job) {
      h = { job, tokens: [...job.spec.ids] };
      this.#histories.set(slot, h);
    }
    for (let i = h.tokens.length - job.spec.ids.length; i < job.tokens.length; i++)
      h.tokens.push(job.tokens[i]!);
    return h.tokens;
  }

  /** Drafts for the slots asking (slot id → tokens, at most each one's max; slots with none left out). */
  async draft(wants: readonly SlotWant[]): Promise<Map<number, number[]>> {
    const out = new Map<number, number[]>();
    if (this.#model) {
      const requests: DraftRequest[] = wants.map((w) => ({
        seq: w.slot,
        history: this.#history(w.slot, w.job),
        max: w.max,
      }));
      const drafts = await this.#model.draftMany(requests);
      for (const [i, w] of wants.entries()) if (drafts[i]!.length > 0) out.set(w.slot, drafts[i]!);
      return out;
    }
    for (const w of wants) {
      let d = this.#ngrams.get(w.slot);
      if (!d) {
        d = new NgramDrafter({ ngramMax: this.#ngramMax, ngramMin: this.#ngramMin });
        this.#ngrams.set(w.slot, d);
      }
      const got = d.draft(this.#history(w.slot, w.job), w.max);
      if (got.length > 0) out.set(w.slot, got);
    }
    return out;
  }
}
