import { argmax } from "@minfer/sampler";
import type { Context } from "../context.js";
import { EngineError } from "../errors.js";
import type { Model } from "../model.js";
import { checkDraftVocabulary, keepsDrafting, resumeDraft } from "./model-drafter.js";

/** One sequence's request to {@link BatchedModelDrafter.draftMany}. */
export interface DraftRequest {
  /** The draft context's sequence that follows this history (one request per sequence). */
  readonly seq: number;
  /** Prompt and generated tokens, the last one not yet decoded by the target. */
  readonly history: readonly number[];
  /** Most tokens to draft. */
  readonly max: number;
}

/** Options of {@link BatchedModelDrafter}. */
export interface BatchedModelDrafterOptions {
  /** Stop a sequence's draft where the draft model's probability of its greedy token is below this. Default 0. */
  readonly pMin?: number;
  /** The target's vocabulary size: a draft stops at a larger id. Default: none; `for()` sets it. */
  readonly targetVocab?: number;
}

/**
 * A draft model drafting for several sequences at once (a server's slots): each sequence of the
 * draft context follows its history (the prefix it holds is kept), all of them caught up by one
 * decode, then each drafted position of every sequence still drafting decoded together — so k
 * drafted tokens for s sequences cost k + 1 draft decodes, not s·(k + 1). Drafts are the draft
 * model's greedy tokens, as {@link ModelDrafter}'s.
 */
export class BatchedModelDrafter {
  readonly kind = "draft";
  readonly context: Context;
  readonly #pMin: number;
  readonly #limit: number;

  constructor(context: Context, options: BatchedModelDrafterOptions = {}) {
    const pMin = options.pMin ?? 0;
    if (typeof pMin !== "number" || !(pMin >= 0 && pMin <= 1))
      throw new EngineError(
        "INVALID_ARGUMENT",
        `BatchedModelDrafter: pMin must be in [0, 1], got ${String(pMin)}`,
      );
    this.context = context;
    this.#pMin = pMin;
    this.#limit = options.targetVocab ?? Number.POSITIVE_INFINITY;
  }

  /** A drafter for `target` over `context` (a context of the draft model), after the vocabulary check. */
  static for(target: Model, context: Context, options?: BatchedModelDrafterOptions): BatchedModelDrafter {
    checkDraftVocabulary(target, context.model);
    return new BatchedModelDrafter(context, { ...options, targetVocab: target.hparams.nVocab });
  }

  /**
   * Drafts for each request (in its order; an empty one where the draft model's first token is
   * unlikely). Sequences not named keep what they hold. Throws NO_KV_ROOM when a sequence's cells
   * cannot hold its history.
   */
  async draftMany(requests: readonly DraftRequest[]): Promise<number[][]> {
    const ctx = this.context;
    const out = requests.map((): number[] => []);
    const seen = new Set<number>();
    for (const r of requests) {
      if (!Number.isInteger(r.seq) || r.seq < 0 || r.seq >= ctx.nSeqMax || seen.has(r.seq))
        throw new EngineError(
          "INVALID_ARGUMENT",
          `BatchedModelDrafter: each request needs its own sequence in [0, ${ctx.nSeqMax}), got ${String(r.seq)}`,
        );
      seen.add(r.seq);
    }
    // the catch-up: every sequence's tokens after the prefix its cache already holds (at least the
    // last one, for its logits), in one decode
    // (`row`: the batch index of the sequence's token whose logits come next)
    let live: { i: number; max: number; row: number }[] = [];
    const tokens: number[] = [];
    const seqs: number[] = [];
    const rows: boolean[] = [];
    for (const [i, r] of requests.entries()) {
      if (r.max <= 0 || r.history.length === 0) continue;
      const { from: keep, max } = resumeDraft(ctx, r.seq, r.history, r.max, "BatchedModelDrafter");
      for (let p = keep; p < r.history.length; p++) {
        tokens.push(r.history[p]!);
        seqs.push(r.seq);
        rows.push(p === r.history.length - 1);
      }
      live.push({ i, max, row: tokens.length - 1 });
    }
    if (live.length === 0) return out;
    let logits = await ctx.decode({ tokens, seq: seqs, logits: rows });
    for (;;) {
      const next: typeof live = [];
      const ids: number[] = [];
      for (const l of live) {
        const values = logits.get(l.row);
        const id = argmax(values);
        if (!keepsDrafting(values, id, this.#limit, this.#pMin)) continue;
        const d = out[l.i]!;
        d.push(id);
        if (d.length >= l.max) continue;
        next.push({ ...l, row: next.length });
        ids.push(id);
      }
      if (next.length === 0) return out;
      live = next;
      logits = await ctx.decode({ tokens: ids, seq: live.map((l) => requests[l.i]!.seq), logits: "all" });
    }
  }
}
