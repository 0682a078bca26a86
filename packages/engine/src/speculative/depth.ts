/**
 * Chooses how many tokens to draft next from what drafting and verifying have measured: the
 * acceptance rate and the time a draft token and a verification of n tokens take.
 *
 * With a per-token acceptance probability a (each drafted token accepted with probability a while
 * the ones before it were), a draft of k tokens yields (1 - a^(k+1)) / (1 - a) tokens per
 * verification on average (the accepted ones and the target's own next token). The depth chosen
 * is the k in [min, max] with the most tokens per millisecond, the cost of a step being the draft
 * (k times a token's cost for a drafter whose cost grows with the draft, one call's cost for one
 * that looks drafts up) and a verification of k + 1 tokens.
 *
 * a is estimated from recent verifications (an exponentially decaying count: a verification with
 * j of k drafts accepted counts j acceptances and, when j < k, one rejection — the maximum
 * likelihood estimate of a geometric law), starting from one acceptance and one rejection (a = 0.5).
 * A verification's time is modelled as c0 + c1·n, fitted by decaying least squares.
 */
export class DraftDepth {
  readonly min: number;
  readonly max: number;
  #acc = 1;
  #rej = 1;
  /** Milliseconds a draft token (per call: a draft) takes, a decaying mean; 0 until measured. */
  #draftMs = 0;
  /** Decaying sums of the verification fit: weight, n, n², t, n·t. */
  #w = 0;
  #sn = 0;
  #snn = 0;
  #st = 0;
  #snt = 0;

  /** Whether a draft costs per token (else per call). */
  readonly perToken: boolean;

  /** `decay`: the weight a past observation keeps per new one. */
  constructor(
    min: number,
    max: number,
    perToken = true,
    readonly decay = 0.9,
  ) {
    this.min = min;
    this.max = max;
    this.perToken = perToken;
  }

  /** The estimated per-token acceptance probability. */
  get acceptance(): number {
    return this.#acc / (this.#acc + this.#rej);
  }

  /**
   * Records one step: `drafted` tokens of which `accepted` were accepted, the milliseconds the
   * drafter took to draft them (`draftMs`, without catching up with the history) and the target's
   * verification of `drafted + 1` tokens (`verifyMs`).
   */
  observe(drafted: number, accepted: number, draftMs: number, verifyMs: number): void {
    const d = this.decay;
    if (drafted > 0) {
      this.#acc = this.#acc * d + accepted;
      this.#rej = this.#rej * d + (accepted < drafted ? 1 : 0);
      const per = this.perToken ? draftMs / drafted : draftMs;
      this.#draftMs = this.#draftMs === 0 ? per : this.#draftMs * d + per * (1 - d);
    }
    const n = drafted + 1;
    this.#w = this.#w * d + 1;
    this.#sn = this.#sn * d + n;
    this.#snn = this.#snn * d + n * n;
    this.#st = this.#st * d + verifyMs;
    this.#snt = this.#snt * d + n * verifyMs;
  }

  /** The estimated milliseconds of a verification of n tokens. */
  verifyMs(n: number): number {
    if (this.#w === 0) return 1 + 0.05 * (n - 1);
    const mn = this.#sn / this.#w;
    const mt = this.#st / this.#w;
    const var_ = this.#snn / this.#w - mn * mn;
    // one batch size seen so far: assume each extra token costs 5% of the step (decode is memory-bound)
    const slope = var_ > 1e-6 ? (this.#snt / this.#w - mn * mt) / var_ : 0.05 * (mt / mn);
    return Math.max(1e-3, mt + Math.max(0, slope) * (n - mn));
  }

  /**
   * The depth to draft next. When the best is 0 (drafting does not pay), a call now and then still
   * drafts one token — after {@link DraftDepth.PROBE_EVERY} calls, then twice as many each time, up
   * to {@link DraftDepth.PROBE_MAX} — so the acceptance and the draft's cost go on being measured
   * and drafting resumes when they change, at little cost while it does not.
   */
  next(): number {
    const k = this.#best();
    if (k > 0 || this.max === 0) {
      this.#probeEvery = DraftDepth.PROBE_EVERY;
      this.#idle = 0;
      return k;
    }
    if (++this.#idle < this.#probeEvery) return 0;
    // a probe; while drafting goes on not paying, the probes grow rarer (up to PROBE_MAX steps apart)
    this.#idle = 0;
    this.#probeEvery = Math.min(2 * this.#probeEvery, DraftDepth.PROBE_MAX);
    return 1;
  }

  /** Steps before the first one-token draft of a drafter that does not pay. */
  static readonly PROBE_EVERY = 16;
  /** The most steps between such drafts (each one doubles the gap). */
  static readonly PROBE_MAX = 256;
  #idle = 0;
  #probeEvery = DraftDepth.PROBE_EVERY;

  #best(): number {
    const a = Math.min(this.acceptance, 0.999);
    let best = this.min;
    let bestRate = -1;
    for (let k = this.min; k <= this.max; k++) {
      const tokens = (1 - a ** (k + 1)) / (1 - a);
      // (a model drafter also decodes, at each step, the tokens accepted since its last draft: about
      // one more token's cost)
      const draft = k === 0 ? 0 : this.perToken ? (k + 1) * this.#draftMs : this.#draftMs;
      const rate = tokens / (draft + this.verifyMs(k + 1));
      if (rate > bestRate * (1 + 1e-9)) {
        best = k;
        bestRate = rate;
      }
    }
    return best;
  }
}
