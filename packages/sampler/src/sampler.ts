import { type CandidateIds, candidateBound, candidateValuesBound, idsAbove } from "./candidate-ids.js";
import { allNegInf, Candidates } from "./chain/candidates.js";
import { draw } from "./chain/draw.js";
import { Dry } from "./chain/dry.js";
import { candidateArgmax, dynamicTemperature } from "./chain/dynatemp.js";
import { TokenHistory } from "./chain/history.js";
import { applyLogitBias } from "./chain/logit-bias.js";
import { LogSoftmax, type SampleResult } from "./chain/logprobs.js";
import { minP } from "./chain/min-p.js";
import { Mirostat } from "./chain/mirostat.js";
import { applyPenalties, penaltiesOn } from "./chain/penalties.js";
import { topNSigma } from "./chain/top-n-sigma.js";
import { topP } from "./chain/top-p.js";
import { type TypicalScratch, typical } from "./chain/typical.js";
import { xtc } from "./chain/xtc.js";
import { invalidArgument, SamplerError } from "./errors.js";
import { checkSeed, type ResolvedSamplerOptions, resolveOptions, type SamplerOptions } from "./options.js";
import { Mt19937 } from "./prng.js";
import { argmax, checkLogits } from "./select.js";

/** With top-k off, top-p and min-p first look for their cut among this many best ids. */
const PREFIX_FIRST_K = 256;

const EMPTY = new Uint32Array(0);

/**
 * Draws a token id from logits through llama.cpp's sampler chain, in this fixed order:
 *
 * 1. logit bias (`logitBias`);
 * 2. repetition, frequency and presence penalties over the last `repeatLastN` accepted tokens;
 * 3. DRY over the last `dryPenaltyLastN` accepted tokens;
 * 4. the constraint (a grammar) — see below;
 * 5. top-k → typical → top-p → min-p → XTC → top-n-sigma (the truncation stages), or mirostat
 *    v1/v2 in their place;
 * 6. temperature (dynamic by the candidates' entropy with `dynatempRange`), then one draw from
 *    xoshiro128**.
 *
 * `temperature <= 0` is greedy: the argmax after stages 1–4, no draw. Each stage whose option is at
 * its "off" value does nothing; see {@link SamplerOptions} for every default.
 *
 * **State.** `sample` never changes the history: the caller passes each chosen token to
 * {@link accept} (which feeds the penalties and DRY, updates mirostat's mu and advances the
 * constraint), and the prompt to {@link acceptPrompt} (which starts a generation over).
 *
 * **Constraint.** The chain first runs without the constraint; when `constraint.allows(token)`, that
 * token is the answer. Otherwise the constraint masks a copy of the logits and the chain runs again
 * (llama.cpp's fast path: the result is not exactly the chain over the masked logits, but the full
 * vocabulary is masked only when needed). A mask that leaves nothing throws `GRAMMAR_DEAD_END`.
 *
 * **Logits.** The caller's array is never modified. Stages 1–4 work on a scratch copy, made only
 * when one of them is active; the truncation stages work on candidate id lists (a bounded heap for
 * top-k, index sorts only where a stage needs order), all scratch reused from call to call.
 *
 * **Candidate ids.** `sample(logits, ids)` may be given the row's K best ids (larger logit first,
 * lower id first on ties, NaN first: a backend's TOP_K, e.g. an engine's `Logits.candidates(i)`),
 * and then works on those few ids whenever that provably gives the token the whole vocabulary gives
 * (the same token, the same PRNG draws); otherwise it runs on the whole row. With vK the last id's
 * logit, no other id exceeds vK; the ids logit bias changed join the set with their new values; when
 * m of the set lie strictly above vK, they are the m best of the vocabulary. Greedy needs m = 1,
 * top-k needs m = topK (typical, top-p, min-p, XTC, top-n-sigma and the temperature then work on
 * those k, as always). The whole row is used for: top-k off (or ≥ the vocabulary) with a
 * temperature > 0, mirostat, penalties or DRY with a history, fewer than m ids above vK, and — after
 * the first pick, exactly as without ids — a constraint that rejects it.
 *
 * **Randomness.** Each non-greedy chain run uses one uniform double for the draw, plus one for XTC
 * when `xtcProbability > 0`; a rejected constraint fast path runs the chain twice. So a seed and the
 * same inputs give the same tokens on every platform.
 *
 * @example
 * ```ts
 * const sampler = new Sampler({ temperature: 0.7, topK: 40, minP: 0.05, repeatPenalty: 1.1, seed: 42 });
 * sampler.acceptPrompt(promptIds);
 * const token = sampler.sample(logits); // logits: Float32Array of vocabulary size
 * sampler.accept(token);
 * ```
 */
export class Sampler {
  private opts: ResolvedSamplerOptions;
  /** The draw's generator (and mirostat's), as llama.cpp's dist sampler has its own. */
  private readonly rng: Mt19937;
  /** XTC's chance, from its own generator on the same seed, as llama.cpp's XTC sampler has. */
  private readonly xtcRng: Mt19937;
  private readonly xtcChance = (): number => this.xtcRng.nextFloat();
  private readonly mirostatDraw = (): number => this.rng.nextDouble();
  /** Whether the last call drew from the candidates (`cands` holds that distribution, vocabulary ids). */
  private drewFromCandidates = false;
  private readonly cands = new Candidates();
  /** Scratch of the candidate-id path: the ids above the bound, sorted. */
  private above = new Uint32Array(0);
  /** Scratch of {@link sampleCandidates}: positions in the ids, their (biased) logits. */
  private pick = new Uint32Array(0);
  private pickVals = new Float32Array(0);
  private local = new Uint32Array(0);
  private localVals = new Float32Array(0);
  private readonly idStats = { onIds: 0, fullRow: 0 };
  private readonly typicalScratch: TypicalScratch = { order: new Float64Array(0), pos: new Uint32Array(0) };
  private readonly counts = new Map<number, number>();
  private readonly history: TokenHistory;
  private readonly dry: Dry | undefined;
  private readonly mirostat: Mirostat | undefined;
  private readonly logSoftmax = new LogSoftmax();
  private work = new Float32Array(0);
  /** The logits the bias changed in place, saved for restoring (see biasInPlace). */
  private biasSaved = new Float32Array(0);
  /** The last token mirostat drew and its surprise, for the mu update in accept(). */
  private pending: { token: number; surprise: number } | undefined;

  /** Throws `INVALID_ARGUMENT` ({@link SamplerError}) for an invalid option, naming it. */
  constructor(options: SamplerOptions = {}) {
    const o = resolveOptions(options);
    this.opts = o;
    this.rng = new Mt19937(o.seed);
    this.xtcRng = new Mt19937(o.seed);
    const window = (on: boolean, n: number): number => (!on || n === 0 ? 0 : n < 0 ? Infinity : n);
    const dryOn = o.dryMultiplier > 0 && o.dryPenaltyLastN !== 0;
    this.history = new TokenHistory(
      Math.max(window(penaltiesOn(o), o.repeatLastN), window(dryOn, o.dryPenaltyLastN)),
    );
    if (dryOn) this.dry = new Dry(o, o.drySequenceBreakers, Dry.bytesLookup(o.vocab, o.tokenText));
    if (o.mirostat !== 0) this.mirostat = new Mirostat(o.mirostat, o.mirostatTau, o.mirostatEta);
  }

  /** The options in use, defaults filled in; `seed` is the one chosen when none was given. */
  get options(): ResolvedSamplerOptions {
    return this.opts;
  }

  /**
   * Of the `sample` calls given candidate ids: how many worked on the ids (`onIds`) and how many on
   * the whole row (`fullRow`: the ids could not prove the answer). A live view.
   */
  get candidateStats(): { readonly onIds: number; readonly fullRow: number } {
    return this.idStats;
  }

  /** Mirostat's current surprise bound mu (bits); `undefined` when mirostat is off. */
  get mirostatMu(): number | undefined {
    return this.mirostat?.mu;
  }

  /**
   * Starts over: restarts the PRNG stream (from `seed` when given, which becomes `options.seed`, else
   * from the current `options.seed`, so the following draws repeat), forgets the token history, sets
   * mirostat's mu back to 2·tau and resets the constraint.
   */
  reset(seed?: number): void {
    if (seed !== undefined) this.opts = Object.freeze({ ...this.opts, seed: checkSeed(seed) });
    this.rng.seed(this.opts.seed);
    this.xtcRng.seed(this.opts.seed);
    this.history.clear();
    this.mirostat?.reset();
    this.pending = undefined;
    this.opts.constraint?.reset();
  }

  /**
   * Records a chosen token: appends it to the penalty/DRY history, updates mirostat's mu (when
   * `token` is the one the last `sample` drew), and advances the constraint (which throws when it
   * does not allow `token`).
   */
  accept(token: number): void {
    checkToken(token);
    this.opts.constraint?.accept(token);
    this.history.push(token);
    if (this.mirostat && this.pending?.token === token) this.mirostat.update(this.pending.surprise);
    this.pending = undefined;
  }

  /**
   * Starts a generation from `tokens`, the whole prompt (the engine calls it once per generation):
   * the penalty/DRY history becomes the prompt's tokens (what came before is forgotten, so a
   * chat that re-sends its conversation is not counted twice), the constraint starts over and
   * mirostat's mu goes back to 2·tau. The PRNG stream continues (see {@link reset}).
   */
  acceptPrompt(tokens: ArrayLike<number>): void {
    for (let i = 0; i < tokens.length; i++) checkToken(tokens[i]!);
    this.history.clear();
    for (let i = 0; i < tokens.length; i++) this.history.push(tokens[i]!);
    this.mirostat?.reset();
    this.pending = undefined;
    this.opts.constraint?.reset();
  }

  /** Whether the constraint allows no further token (generation must end); false without one. */
  isDone(): boolean {
    return this.opts.constraint?.isExhausted() ?? false;
  }

  /**
   * A token id drawn from `logits` (one per vocabulary entry), which are not modified. `candidates`,
   * when given, are the row's best ids, best first (see "Candidate ids" above): the same token as
   * without them, usually without a pass over the vocabulary. Throws `INVALID_ARGUMENT` for empty
   * logits, a NaN logit, logits that are all `-Infinity`, a biased id outside the vocabulary, or
   * candidate ids outside the vocabulary or out of order; `GRAMMAR_DEAD_END` when the constraint
   * allows no token.
   */
  sample(logits: Float32Array, candidates?: CandidateIds): number {
    return this.run(logits, -1, candidates).token;
  }

  /**
   * Whether {@link sampleCandidates} can serve this sampler now, short of what the row's values
   * decide (ties at the bound): no constraint, mirostat, penalties or DRY with a history, no logit
   * bias that raises a token, and greedy or top-k within `k` candidate ids of a vocabulary of
   * `nVocab`. A server reads back only the candidates of a step whose samplers all can.
   */
  canSampleCandidates(k: number, nVocab: number): boolean {
    const o = this.opts;
    if (this.mirostat || o.constraint) return false;
    if (penaltiesOn(o) && o.repeatLastN !== 0 && this.history.last(o.repeatLastN).length > 0) return false;
    if (this.dry && this.history.last(o.dryPenaltyLastN).length >= 2) return false;
    for (const b of o.logitBias.values()) if (!(b <= 0)) return false;
    if (o.temperature <= 0) return k >= 1;
    return o.topK > 0 && o.topK < nVocab && o.topK <= k;
  }

  /**
   * The token {@link sample}(row, ids) gives, from the row's candidate ids and their logits alone
   * (`values`, in the ids' order: an engine's `Logits.candidates(i)` and `candidateLogits(i)` after a
   * decode that left the rows on the device), with the same draws; or -1, before any draw, when
   * those cannot prove it: then sample the row itself. They can when no constraint, mirostat,
   * penalties or DRY with a history is in play, no logit bias raises an id outside them, and greedy
   * (or top-k of at most their count) finds its m ids strictly above the last id's logit (see
   * "Candidate ids"). Throws `INVALID_ARGUMENT` for mismatched arrays, ids outside the vocabulary
   * of `nVocab` or out of order.
   */
  sampleCandidates(ids: CandidateIds, values: Float32Array, nVocab: number): number {
    this.drewFromCandidates = false;
    const bound = candidateValuesBound(ids, values, nVocab);
    if (Number.isNaN(bound)) return -1; // (the row's own path reports the NaN)
    const o = this.opts;
    if (this.mirostat || o.constraint) return -1;
    if (penaltiesOn(o) && o.repeatLastN !== 0 && this.history.last(o.repeatLastN).length > 0) return -1;
    if (this.dry && this.history.last(o.dryPenaltyLastN).length >= 2) return -1;
    const greedy = o.temperature <= 0;
    if (!greedy && !(o.topK > 0 && o.topK < nVocab)) return -1;
    const need = greedy ? 1 : o.topK;
    const k = ids.length;
    if (k < need) return -1;
    if (this.pick.length < k) {
      this.pick = new Uint32Array(k);
      this.pickVals = new Float32Array(k);
      this.local = new Uint32Array(k);
      this.localVals = new Float32Array(k);
    }
    const vals = this.pickVals;
    vals.set(values);
    for (const [id, b] of o.logitBias) {
      const j = ids.indexOf(id);
      // An id outside them stays at or below the bound unless raised (or outside the vocabulary:
      // the row's own path reports it).
      if (j < 0) {
        if (id >= nVocab || !(b <= 0)) return -1;
      } else vals[j] = vals[j]! + b; // (rounded to f32 as the row's bias is)
    }
    if (greedy) {
      // The best id strictly above the bound (the lower id on a tie), found without sorting.
      let best = -1;
      for (let j = 0; j < k; j++) {
        const v = vals[j]!;
        if (!(v > bound)) continue;
        if (best < 0 || v > vals[best]! || (v === vals[best]! && ids[j]! < ids[best]!)) best = j;
      }
      if (best < 0) return -1;
      this.idStats.onIds++;
      this.pending = undefined;
      return ids[best]!;
    }
    // The ids strictly above the bound, best first (their order unless the bias changed some).
    const pick = this.pick;
    let m = 0;
    for (let j = 0; j < k; j++) if (vals[j]! > bound) pick[m++] = j;
    if (m < need) return -1;
    if (o.logitBias.size > 0)
      pick.subarray(0, m).sort((a, b) => {
        const va = vals[a]!;
        const vb = vals[b]!;
        return va > vb ? -1 : va < vb ? 1 : ids[a]! - ids[b]!;
      });
    this.idStats.onIds++;
    this.pending = undefined;
    // The draws of chain(), in its order, on the `need` best as positions 0..need-1 (in that order,
    // so ties keep the lower id first): the stages see only their logits and order.
    const u = this.rng.nextDouble();
    const local = this.local;
    const work = this.localVals;
    for (let t = 0; t < need; t++) {
      work[t] = vals[pick[t]!]!;
      local[t] = t;
    }
    this.cands.fillSorted(work, local, need);
    const drawn = ids[pick[this.truncateAndDraw(u)]!]!;
    this.drewFromCandidates = false; // (its candidates are positions in `ids`, not token ids)
    return drawn;
  }

  /**
   * Like {@link sample}, with log-probabilities (natural log) as OpenAI's `logprobs` means them: of
   * the temperature-1 softmax over the whole vocabulary of the logits after logit bias, penalties and
   * DRY — before the constraint, the truncation stages and the temperature. `top` holds the `n`
   * (default `options.nProbs`) most probable tokens of that distribution; `logprob` is the drawn
   * token's. Costs one extra pass over the vocabulary.
   */
  sampleWithLogprobs(logits: Float32Array, n: number = this.opts.nProbs): SampleResult {
    if (!Number.isSafeInteger(n) || n < 0) throw invalidArgument("n", `must be an integer >= 0, got ${n}`);
    return this.run(logits, n);
  }

  /** The whole pipeline; `nProbs < 0` skips the log-probabilities. */
  private run(logits: Float32Array, nProbs: number, candidates?: CandidateIds): SampleResult {
    this.drewFromCandidates = false;
    checkLogits(logits);
    // The bound is the unchanged row's; NaN: a candidate's logit is NaN, the full path reports it.
    const bound = candidates ? candidateBound(logits, candidates) : Number.NaN;
    // Logit bias alone (the common case: an end-of-sequence ban, OpenAI's logit_bias) is applied to
    // the caller's array in place and undone before returning, instead of copying the vocabulary.
    const saved = this.biasInPlace(logits);
    try {
      const work = saved ? logits : this.preprocess(logits);
      // The candidate path needs the row as the ids were computed from it, but for the bias.
      const first =
        candidates && work === logits && !Number.isNaN(bound) ? this.chainOnIds(work, candidates, bound) : -1;
      if (candidates) this.idStats[first >= 0 ? "onIds" : "fullRow"]++;
      return this.runOn(work, logits, nProbs, first);
    } finally {
      if (saved) {
        let i = 0;
        for (const id of this.opts.logitBias.keys()) logits[id] = saved[i++]!;
      }
    }
  }

  /**
   * With logit bias the only stage 1–3 that is on: the biased entries of `logits` changed in place,
   * and their old values (in the bias map's order); else undefined and `logits` untouched. Throws
   * for a biased id outside the vocabulary before changing anything.
   */
  private biasInPlace(logits: Float32Array): Float32Array | undefined {
    const o = this.opts;
    if (o.logitBias.size === 0 || this.dry) return undefined;
    if (penaltiesOn(o) && o.repeatLastN !== 0 && this.history.last(o.repeatLastN).length > 0)
      return undefined;
    if (this.biasSaved.length < o.logitBias.size) this.biasSaved = new Float32Array(o.logitBias.size);
    const saved = this.biasSaved;
    let i = 0;
    for (const id of o.logitBias.keys()) saved[i++] = logits[id] ?? Number.NaN; // past the end: refused next
    applyLogitBias(logits, o.logitBias); // checks every id before it changes any
    return saved;
  }

  /**
   * Stages 4–6 (and the log-probabilities) on `work`: the preprocessed logits. `first` ≥ 0 is the
   * chain's first pick already made on candidate ids (the same token, the same draws).
   */
  private runOn(work: Float32Array, logits: Float32Array, nProbs: number, first = -1): SampleResult {
    const top = nProbs >= 0 ? this.logSoftmax.compute(work, nProbs) : [];
    let token = first >= 0 ? first : this.chain(work);
    const c = this.opts.constraint;
    if (c && !c.allows(token)) {
      if (work === logits) work = this.copy(logits);
      c.mask(work);
      if (!hasDrawable(work)) {
        throw new SamplerError(
          "GRAMMAR_DEAD_END",
          "the constraint allows none of the tokens left after logit bias (no token can come next)",
        );
      }
      token = this.chain(work);
    }
    const logprob = nProbs >= 0 ? this.logSoftmax.logprob(work[token]!) : 0;
    return { token, logprob, top };
  }

  /** Stages 1–3 on a scratch copy when any is active; else the caller's logits. */
  private preprocess(logits: Float32Array): Float32Array {
    const o = this.opts;
    const pen = penaltiesOn(o) && o.repeatLastN !== 0 ? this.history.last(o.repeatLastN) : EMPTY;
    const dry = this.dry ? this.history.last(o.dryPenaltyLastN) : EMPTY;
    if (o.logitBias.size === 0 && pen.length === 0 && dry.length < 2) return logits;
    const work = this.copy(logits);
    if (o.logitBias.size > 0) applyLogitBias(work, o.logitBias);
    if (pen.length > 0) applyPenalties(work, pen, o, this.counts);
    if (dry.length >= 2) this.dry!.apply(work, dry);
    return work;
  }

  /** `logits` copied into the scratch buffer (reallocated only when the vocabulary size changes). */
  private copy(logits: Float32Array): Float32Array {
    const n = logits.length;
    if (this.work.length !== n) this.work = new Float32Array(n);
    this.work.set(logits);
    return this.work;
  }

  /**
   * Stages 5–6 on the ids the candidate path proves enough (see "Candidate ids"), with the draws
   * {@link chain} makes; -1, before any draw, when they are not enough. `work` is the row after
   * logit bias (the only stage 1–3 that ran), `bound` the unchanged row's logit of the last id.
   */
  private chainOnIds(work: Float32Array, ids: CandidateIds, bound: number): number {
    const o = this.opts;
    if (this.mirostat) return -1;
    const n = work.length;
    const greedy = o.temperature <= 0;
    if (!greedy && !(o.topK > 0 && o.topK < n)) return -1;
    const need = greedy ? 1 : o.topK;
    if (ids.length + o.logitBias.size < need) return -1;
    if (this.above.length < ids.length + o.logitBias.size)
      this.above = new Uint32Array(ids.length + o.logitBias.size);
    // (no bias: the row is the one candidateBound checked the ids' order on)
    const m = idsAbove(work, ids, o.logitBias.keys(), bound, this.above, o.logitBias.size === 0);
    if (m < need) return -1;
    this.pending = undefined;
    if (greedy) return this.above[0]!;
    // The draws of chain(), in its order.
    const u = this.rng.nextDouble();
    const c = this.cands;
    c.fillSorted(work, this.above, need);
    return this.truncateAndDraw(u);
  }

  /** Stages 5–6 on the working logits. */
  private chain(work: Float32Array): number {
    const o = this.opts;
    this.pending = undefined;
    if (o.temperature <= 0) {
      const id = argmax(work);
      if (work[id] === -Infinity) throw allNegInf();
      return id;
    }
    const c = this.cands;
    if (this.mirostat) {
      this.pending = this.mirostat.sample(c, work, o.temperature, this.mirostatDraw);
      this.drewFromCandidates = true;
      return this.pending.token;
    }
    const u = this.rng.nextDouble();
    const n = work.length;
    if (o.topK > 0 && o.topK < n) c.fillTopK(work, o.topK);
    else if (o.typicalP >= 1 && (o.topP < 1 || o.minP > 0))
      c.fillPrefix(work, o.topP, o.minP, PREFIX_FIRST_K);
    else c.fillAll(work);
    return this.truncateAndDraw(u);
  }

  /**
   * typical → top-p → min-p → XTC (its own generator's chance) → top-n-sigma → temperature (dynamic with a
   * dynatempRange) and the draw (`u`) on the candidates.
   */
  private truncateAndDraw(u: number): number {
    const o = this.opts;
    const c = this.cands;
    typical(c, o.typicalP, this.typicalScratch);
    topP(c, o.topP);
    minP(c, o.minP);
    xtc(c, o.xtcProbability, o.xtcThreshold, this.xtcChance);
    topNSigma(c, o.topNSigma);
    const t = dynamicTemperature(c, o.temperature, o.dynatempRange, o.dynatempExponent);
    if (!(t > 0)) return candidateArgmax(c);
    const d = draw(c, t, u);
    this.drewFromCandidates = true;
    return d.token;
  }

  /**
   * The distribution the last {@link sample} / {@link sampleWithLogprobs} drew `token` from — after
   * the truncation stages and the temperature (llama-server's post-sampling probabilities): its `n`
   * most probable tokens with their probabilities (each > 0, most probable first), and the drawn
   * token's. A greedy draw, one candidate left, or a draw from candidate ids: the token alone, 1.
   */
  postSamplingProbs(token: number, n: number): { p: number; top: { token: number; p: number }[] } {
    const c = this.cands;
    if (!this.drewFromCandidates || c.size < 2) return { p: 1, top: n > 0 ? [{ token, p: 1 }] : [] };
    let total = 0;
    for (let j = 0; j < c.size; j++) total += c.probs[j]!;
    const all: { token: number; p: number }[] = [];
    let p = 0;
    for (let j = 0; j < c.size; j++) {
      const q = c.probs[j]! / total;
      if (c.ids[j] === token) p = q;
      if (q > 0) all.push({ token: c.ids[j]!, p: q });
    }
    all.sort((a, b) => b.p - a.p || a.token - b.token);
    return { p, top: all.slice(0, n) };
  }
}

/** Whether some logit is neither -Infinity nor NaN. */
function hasDrawable(logits: Float32Array): boolean {
  for (let i = 0; i < logits.length; i++) if (logits[i]! > -Infinity) return true;
  return false;
}

function checkToken(token: number): void {
  if (!Number.isSafeInteger(token) || token < 0 || token > 0xffffffff) {
    throw invalidArgument("token", `must be an integer >= 0, got ${String(token)}`);
  }
}
