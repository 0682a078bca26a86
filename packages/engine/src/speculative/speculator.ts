import type { Context } from "../context.js";
import { EngineError } from "../errors.js";
import type { Logits } from "../logits.js";
import { DraftDepth } from "./depth.js";
import type { Drafter, SpeculativeStats } from "./drafter.js";

/** Speculative decoding in {@link generate} (`options.speculative`). */
export interface SpeculativeOptions {
  /** Where drafts come from: a {@link ModelDrafter}, an {@link NgramDrafter} or your own. */
  readonly drafter: Drafter;
  /** Most tokens drafted for one verification. Default 16. */
  readonly draftMax?: number;
  /** A draft shorter than this is not verified (the step decodes one token). Default 0. */
  readonly draftMin?: number;
  /**
   * Choose each draft's length from the measured acceptance rate and costs ({@link DraftDepth}),
   * between draftMin and draftMax; false: always ask for draftMax. Default true.
   */
  readonly adaptive?: boolean;
}

function checkOptions(o: SpeculativeOptions): { max: number; min: number; adaptive: boolean } {
  const bad = (m: string) => {
    throw new EngineError("INVALID_ARGUMENT", `generate: speculative.${m}`);
  };
  if (typeof o !== "object" || o === null || typeof o.drafter?.draft !== "function")
    bad("drafter must be a Drafter (an object with a draft(history, max) method)");
  const max = o.draftMax ?? 16;
  const min = o.draftMin ?? 0;
  if (!Number.isInteger(max) || max < 0 || max > 256)
    bad(`draftMax must be an integer in [0, 256], got ${String(max)}`);
  if (!Number.isInteger(min) || min < 0 || min > max)
    bad(`draftMin must be an integer in [0, draftMax = ${max}], got ${String(min)}`);
  if (o.adaptive !== undefined && typeof o.adaptive !== "boolean")
    bad(`adaptive must be a boolean, got ${String(o.adaptive)}`);
  return { max, min, adaptive: o.adaptive ?? true };
}

/**
 * The state of one speculative generation: the history its drafter sees, the rows of the last
 * verification and which of its drafts the sampling has confirmed so far.
 *
 * A verification decodes the pending token (sampled, not yet in the cache) at position P and its
 * k drafts at P+1…P+k, with the logits of all k + 1. Row j is what the target predicts after
 * position P+j; when the token sampled from it equals draft j, the next token is sampled from row
 * j + 1 with no decode. The first token that differs (or the one after the last draft) becomes the
 * pending token of the next verification, and the drafts after it leave the cache (seqRm).
 * Sampling is exactly the non-speculative sampling — each token drawn from its own position's
 * logits with the sampler's state of that point — so greedy decoding gives the same tokens and
 * sampling the same distribution (for a drafter that proposes tokens deterministically this is
 * speculative sampling's accept/reject rule: a draft token x is kept with probability p(x), and
 * otherwise the token comes from p with x removed).
 */
export class Speculator {
  readonly #context: Context;
  readonly #seq: number;
  readonly #drafter: Drafter;
  readonly #min: number;
  readonly #max: number;
  readonly #depth: DraftDepth | undefined;
  /** Prompt and generated tokens (the last one the pending token). */
  readonly #history: number[];
  /** The last verification's logits (row j: after the token at position pos + j). */
  #logits: Logits | undefined;
  #drafts: number[] = [];
  /** The row sampled next. */
  #j = 0;
  /** The pending token's position in the last verification. */
  #pos = 0;
  /** Of the last step: the drafter's time drafting (without its catch-up), and in all. */
  #draftMs = 0;
  #drafterMs = 0;
  #verifyMs = 0;
  #settled = true;
  #steps = 0;
  #drafted = 0;
  #accepted = 0;
  #draftTime = 0;

  constructor(context: Context, seq: number, options: SpeculativeOptions, prompt: readonly number[]) {
    const o = checkOptions(options);
    this.#context = context;
    this.#seq = seq;
    this.#drafter = options.drafter;
    this.#min = o.min;
    this.#max = o.max;
    this.#depth = o.adaptive ? new DraftDepth(o.min, o.max, options.drafter.costPerToken ?? true) : undefined;
    this.#history = [...prompt];
  }

  get stats(): SpeculativeStats {
    return {
      kind: this.#drafter.kind,
      steps: this.#steps,
      drafted: this.#drafted,
      accepted: this.#accepted,
      draftMs: this.#draftTime,
    };
  }

  /**
   * Follows the token just sampled from the current row and accepted: true when it confirmed a
   * draft, so the next row is ready ({@link current}); false when the next token needs a
   * verification ({@link step}), the unconfirmed drafts having left the cache.
   */
  advance(id: number): boolean {
    this.#history.push(id);
    if (this.#j < this.#drafts.length && this.#drafts[this.#j] === id) {
      this.#j++;
      return true;
    }
    this.#settle();
    return false;
  }

  /**
   * The row to sample next (after {@link advance} returned true), read from the verification's
   * logits now: with a context made with `reuseLogits`, a decode of another sequence meanwhile
   * would have overwritten them, and that is STALE_LOGITS, not a token drawn from another row.
   */
  current(): Float32Array {
    return this.#logits!.get(this.#j);
  }

  /** Lets the drafter take in the prompt before the first step ({@link Drafter.prefill}). */
  async prefill(): Promise<void> {
    if (!this.#drafter.prefill) return;
    const t0 = performance.now();
    await this.#drafter.prefill(this.#history);
    this.#draftTime += performance.now() - t0;
  }

  /**
   * Drafts after the pending token `id` and verifies the drafts; resolves to the first row.
   * `budget`: how many more tokens the generation may sample (its maxTokens less those it has):
   * a verification yields at most drafts + 1, so at most `budget - 1` tokens are drafted, as
   * llama-server caps a slot's draft by its remaining tokens.
   */
  async step(id: number, budget = Number.POSITIVE_INFINITY): Promise<Float32Array> {
    const ctx = this.#context;
    // room for the pending token and the drafts
    const room = ctx.nCtx - ctx.used() - 1;
    const want = Math.min(this.#depth ? this.#depth.next() : this.#max, room, budget - 1);
    let drafts: number[] = [];
    const t0 = performance.now();
    if (want > 0 && want >= this.#min) {
      drafts = [...(await this.#drafter.draft(this.#history, want))].slice(0, want);
      // (adaptive: to one of the depth's lengths, so that few verification graphs are built)
      if (this.#depth) drafts.length = this.#depth.fit(drafts.length);
      if (drafts.length < Math.max(this.#min, 1)) drafts = [];
    }
    const tDrafted = performance.now();
    this.#pos = this.#history.length - 1;
    const logits = await ctx.decode({
      tokens: [id, ...drafts],
      seq: this.#seq,
      logits: drafts.length > 0 ? "all" : "last",
      // (each row the bits of a one-token step: greedy output is the output without drafts)
      batchInvariant: true,
    });
    this.#verifyMs = performance.now() - tDrafted;
    // (the drafter's catch-up with the history is not the cost of the drafted tokens)
    this.#drafterMs = tDrafted - t0;
    this.#draftMs = Math.max(0, tDrafted - t0 - (drafts.length > 0 ? (this.#drafter.lastSyncMs ?? 0) : 0));
    this.#logits = logits;
    this.#drafts = drafts;
    this.#j = 0;
    this.#settled = false;
    return logits.get(0);
  }

  /** Ends the generation: drafts not confirmed leave the cache (nothing to do in a disposed context). */
  finish(): void {
    try {
      this.#settle();
    } catch (e) {
      if (!(e instanceof EngineError && e.code === "DISPOSED")) throw e;
    }
  }

  /** The last verification is over at row j: its unconfirmed drafts leave the cache; counters. */
  #settle(): void {
    if (this.#settled) return;
    this.#settled = true;
    const k = this.#drafts.length;
    const j = this.#j;
    if (j < k) this.#context.seqRm(this.#seq, this.#pos + j + 1, -1);
    this.#steps++;
    this.#drafted += k;
    this.#accepted += j;
    this.#draftTime += this.#drafterMs;
    this.#depth?.observe(k, j, this.#draftMs, this.#verifyMs);
    this.#drafter.accepted?.(k, j);
  }
}
