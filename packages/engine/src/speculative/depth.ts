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
 * A verification's time is modelled as c0 + c1·n, fitted by decaying least squares. The first
 * verification of each length is left out of the fit (it builds that length's graph: 10-45 ms
 * against 1-3 for the same decode later, on the CPU and on CUDA), and once the fit has data a time
 * counts at most {@link DraftDepth.OUTLIER} times its prediction (a step that waited for the
 * scheduler or a garbage collection): either would make longer drafts look dear for long after, and
 * the depth fall to 0 on text that drafts well.
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
  /** The verification lengths seen (their first time is not fitted). */
  readonly #lengths = new Set<number>();

  /** Whether a draft costs per token (else per call). */
  readonly perToken: boolean;

  /**
   * The depths chosen from: min, the powers of two between min and max, and max. Each verification
   * length is a graph the target builds at its first use (10-25 ms of planning on the CPU for a
   * 12-layer model, as long as a few steps), so few lengths: a draft is cut to the longest of
   * these it reaches ({@link DraftDepth.fit}).
   */
  readonly depths: readonly number[];

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
    const depths = new Set([min, max]);
    for (let k = 1; k < max; k *= 2) if (k > min) depths.add(k);
    this.depths = [...depths].sort((a, b) => a - b);
  }

  /** The longest of {@link depths} not above `n` (a draft of n tokens is cut to it; 0 below min). */
  fit(n: number): number {
    let best = 0;
    for (const k of this.depths) if (k <= n) best = k;
    return best;
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
    if (!this.#lengths.has(n)) {
      this.#lengths.add(n);
      return;
    }
    const t = this.#w > 0 ? Math.min(verifyMs, DraftDepth.OUTLIER * this.verifyMs(n)) : verifyMs;
    this.#w = this.#w * d + 1;
    this.#sn = this.#sn * d + n;
    this.#snn = this.#snn * d + n * n;
    this.#st = this.#st * d + t;
    this.#snt = this.#snt * d + n * t;
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

  /** A verification's time counts at most this many times the fit's prediction. */
  static readonly OUTLIER = 3;
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
    for (const k of this.depths) {
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
