import { argmax } from "@minfer/sampler";
import type { Context } from "../context.js";
import { EngineError } from "../errors.js";
import type { Model } from "../model.js";
import type { Drafter } from "./drafter.js";

/** Vocabularies of a target and a draft model may differ in size by this many tokens (added specials). */
export const DRAFT_VOCAB_SLACK = 128;

/**
 * Throws `DRAFT_MISMATCH` unless `draft` can draft for `target`: the same tokenizer model and
 * pre-tokenizer, the same BOS/EOS, sizes within {@link DRAFT_VOCAB_SLACK} and the same token text
 * for every id both have. The message names the first difference.
 */
export function checkDraftVocabulary(target: Model, draft: Model): void {
  const a = target.tokenizer.vocab;
  const b = draft.tokenizer.vocab;
  const fail = (what: string) => {
    throw new EngineError(
      "DRAFT_MISMATCH",
      `the draft model ${draft.path} cannot draft for ${target.path}: ${what}`,
    );
  };
  if (a.model !== b.model) fail(`tokenizer model ${b.model} against the target's ${a.model}`);
  if ((a.pre ?? "") !== (b.pre ?? ""))
    fail(`pre-tokenizer ${b.pre ?? "(none)"} against the target's ${a.pre ?? "(none)"}`);
  if (Math.abs(a.tokens.length - b.tokens.length) > DRAFT_VOCAB_SLACK)
    fail(
      `vocabulary of ${b.tokens.length} tokens against the target's ${a.tokens.length} (at most ${DRAFT_VOCAB_SLACK} apart)`,
    );
  for (const s of ["bos", "eos"] as const)
    if (a.special[s] !== b.special[s])
      fail(`${s.toUpperCase()} id ${String(b.special[s])} against the target's ${String(a.special[s])}`);
  if (a.addBos !== b.addBos) fail(`add BOS ${b.addBos} against the target's ${a.addBos}`);
  const n = Math.min(a.tokens.length, b.tokens.length);
  for (let i = 0; i < n; i++)
    if (a.tokens[i] !== b.tokens[i])
      fail(`token ${i} is ${JSON.stringify(b.tokens[i])}, the target's ${JSON.stringify(a.tokens[i])}`);
}

/** The longest piece of a draft model's catch-up with the target's history (see ModelDrafter.draft). */
const CATCH_UP_PIECE = 16;

/**
 * Brings sequence `seq` of a draft context to where it can follow `history`: the prefix it holds
 * is kept (less the last token, decoded again for its logits), the rest removed. Returns the
 * position to decode from and how many tokens may be drafted (`max`, less where the sequence's
 * cells end). Throws NO_KV_ROOM when the history itself does not fit the sequence's cells.
 */
export function resumeDraft(
  ctx: Context,
  seq: number,
  history: readonly number[],
  max: number,
  who: string,
): { from: number; max: number } {
  const free = ctx.seqRoom(seq) + ctx.seqCount(seq);
  if (free < history.length)
    throw new EngineError(
      "NO_KV_ROOM",
      `${who}: the draft context holds ${free} tokens of sequence ${seq}, the history is ${history.length}: ` +
        "give the draft model's context as many cells per sequence as the target's, or stop speculating",
    );
  let keep = 0;
  const have = ctx.history(seq);
  if (have) while (keep < have.length && keep < history.length && have[keep] === history[keep]) keep++;
  if (keep === history.length) keep--;
  // (the last drafted token is not decoded: max - 1 of them need cells)
  return { from: ctx.truncate(seq, keep), max: Math.min(max, free - history.length + 1) };
}

/**
 * Whether a draft goes on with `id`, the draft model's greedy token of row `logits`: not past the
 * target's vocabulary (`limit`; a draft model may have up to DRAFT_VOCAB_SLACK more ids), nor where
 * the draft model's probability of it is below `pMin`.
 */
export function keepsDrafting(logits: Float32Array, id: number, limit: number, pMin: number): boolean {
  return id < limit && (pMin <= 0 || probabilityOf(logits, id) >= pMin);
}

/** Options of {@link ModelDrafter}. */
export interface ModelDrafterOptions {
  /** The draft context's sequence this drafter uses. Default 0. */
  readonly seq?: number;
  /**
   * Stop a draft early where the draft model's probability of its own greedy token falls below
   * this (0: never). Default 0, as llama.cpp's `--draft-p-min`.
   */
  readonly pMin?: number;
  /** The target's vocabulary size: a draft stops at a larger id. Default: none; `for()` sets it. */
  readonly targetVocab?: number;
}

/**
 * Drafts with a smaller model of the same vocabulary: the draft context follows the target's
 * history (the prefix it already holds is kept, the rest decoded), then decodes its own greedy
 * tokens one at a time. Make it with a context over the draft model; the vocabularies are checked
 * ({@link checkDraftVocabulary}) when the target is known, in {@link ModelDrafter.for}.
 */
export class ModelDrafter implements Drafter {
  readonly kind = "draft";
  readonly costPerToken = true;
  readonly context: Context;
  readonly #seq: number;
  readonly #pMin: number;
  readonly #limit: number;
  #lastSyncMs = 0;

  constructor(context: Context, options: ModelDrafterOptions = {}) {
    const seq = options.seq ?? 0;
    const pMin = options.pMin ?? 0;
    if (!Number.isInteger(seq) || seq < 0 || seq >= context.nSeqMax)
      throw new EngineError(
        "INVALID_ARGUMENT",
        `ModelDrafter: seq must be an integer in [0, ${context.nSeqMax}), got ${String(seq)}`,
      );
    if (typeof pMin !== "number" || !(pMin >= 0 && pMin <= 1))
      throw new EngineError("INVALID_ARGUMENT", `ModelDrafter: pMin must be in [0, 1], got ${String(pMin)}`);
    this.context = context;
    this.#seq = seq;
    this.#pMin = pMin;
    this.#limit = options.targetVocab ?? Number.POSITIVE_INFINITY;
  }

  /** A drafter for `target` over `context` (a context of the draft model), after the vocabulary check. */
  static for(target: Model, context: Context, options?: ModelDrafterOptions): ModelDrafter {
    checkDraftVocabulary(target, context.model);
    return new ModelDrafter(context, { ...options, targetVocab: target.hparams.nVocab });
  }

  get lastSyncMs(): number {
    return this.#lastSyncMs;
  }

  async prefill(prompt: readonly number[]): Promise<void> {
    if (prompt.length === 0) return;
    const { from } = resumeDraft(this.context, this.#seq, prompt, 1, "ModelDrafter");
    const rest = prompt.slice(from);
    if (rest.length > 0) await this.context.decode({ tokens: rest, seq: this.#seq, logits: "last" });
  }

  async draft(history: readonly number[], max: number): Promise<number[]> {
    const t0 = performance.now();
    this.#lastSyncMs = 0;
    const ctx = this.context;
    const seq = this.#seq;
    if (max <= 0 || history.length === 0) return [];
    const resumed = resumeDraft(ctx, seq, history, max, "ModelDrafter");
    max = resumed.max;
    const keep = resumed.from;
    const rest = history.slice(keep);
    // A catch-up of the tokens accepted since the last draft (a few; after steps that did not
    // draft, more) decodes in pieces of CATCH_UP_PIECE tokens, then halves of it (16, 8, 4, 2, 1),
    // so that its decode graphs are of a few lengths (each new length builds one, which costs more
    // than the step). A long one (the prompt) decodes at once.
    const few = Math.min(CATCH_UP_PIECE, ctx.nUbatch);
    let logits: Float32Array;
    if (rest.length <= 8 * few) {
      let at = 0;
      do {
        let n = few;
        while (n > rest.length - at) n = Math.max(1, n >> 1);
        const piece = rest.slice(at, at + n);
        at += piece.length;
        logits = await ctx.eval(piece, seq);
      } while (at < rest.length);
    } else logits = await ctx.eval(rest, seq);
    this.#lastSyncMs = performance.now() - t0;
    const out: number[] = [];
    for (;;) {
      const id = argmax(logits);
      if (!keepsDrafting(logits, id, this.#limit, this.#pMin)) break;
      out.push(id);
      if (out.length >= max) break;
      logits = await ctx.eval([id], seq);
    }
    return out;
  }
}

/** The softmax probability of `id` among `logits`. */
function probabilityOf(logits: Float32Array, id: number): number {
  const top = logits[id]!;
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i]! - top);
  return 1 / sum;
}
