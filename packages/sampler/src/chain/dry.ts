import type { SamplerVocab } from "../options.js";

/** DRY settings; see {@link SamplerOptions}. */
export interface DrySettings {
  readonly dryMultiplier: number;
  readonly dryBase: number;
  readonly dryAllowedLength: number;
}

/**
 * Repeats longer than this (beyond the allowed length) are not searched further: the penalty at that
 * length, multiplier · base^64, already rules the token out for any useful base.
 */
const MAX_EXTRA_LENGTH = 64;

/**
 * DRY, "don't repeat yourself": when the text so far ends with a sequence that already occurred, the
 * token that followed that earlier occurrence would repeat it; its logit is lowered by
 * `multiplier · base^(length − allowedLength)` where `length` is the longest such repeated sequence,
 * when `length ≥ allowedLength`. Sequences never run through a breaker token (one whose bytes hold
 * a sequence-breaker string). Works on token ids; the breaker test is cached per id.
 */
export class Dry {
  /** Per token id: 0 unknown, 1 not a breaker, 2 a breaker. Grown on demand. */
  private breaker = new Uint8Array(0);
  private readonly patterns: Uint8Array[];
  private readonly best = new Map<number, number>();

  constructor(
    private readonly settings: DrySettings,
    breakers: readonly string[],
    private readonly bytesOf: ((id: number) => Uint8Array) | undefined,
  ) {
    const enc = new TextEncoder();
    this.patterns = breakers.filter((s) => s !== "").map((s) => enc.encode(s));
  }

  /** Builds the breaker lookup from `vocab` or `tokenText` (either may be undefined). */
  static bytesLookup(
    vocab: SamplerVocab | undefined,
    tokenText: ((id: number) => string) | undefined,
  ): ((id: number) => Uint8Array) | undefined {
    if (vocab) return (id) => vocab.tokenBytes(id);
    if (tokenText) {
      const enc = new TextEncoder();
      return (id) => enc.encode(tokenText(id));
    }
    return undefined;
  }

  /** Whether `token`'s bytes hold a sequence breaker. */
  isBreaker(token: number): boolean {
    if (this.patterns.length === 0 || this.bytesOf === undefined) return false;
    if (token >= this.breaker.length) {
      const grown = new Uint8Array(Math.max(token + 1, this.breaker.length * 2, 1024));
      grown.set(this.breaker);
      this.breaker = grown;
    }
    let b = this.breaker[token]!;
    if (b === 0) {
      const bytes = this.bytesOf(token);
      b = this.patterns.some((p) => contains(bytes, p)) ? 2 : 1;
      this.breaker[token] = b;
    }
    return b === 2;
  }

  /**
   * Lowers in `logits` the tokens that would extend a repeat of the end of `h` (the history window,
   * oldest first). Touches only those tokens.
   */
  apply(logits: Float32Array, h: Uint32Array): void {
    const len = h.length;
    const { dryMultiplier: mult, dryBase: base, dryAllowedLength: allowed } = this.settings;
    if (len < 2 || mult === 0) return;
    // The longest suffix free of breakers bounds every match.
    let free = 0;
    while (free < len && !this.isBreaker(h[len - 1 - free]!)) free++;
    const cap = Math.min(free, allowed + MAX_EXTRA_LENGTH);
    if (cap < allowed) return;
    const best = this.best;
    best.clear();
    const last = h[len - 1]!;
    // Each earlier position i: the tokens before i matched against the end; h[i] would come next.
    for (let i = 1; i < len; i++) {
      if (h[i - 1] !== last) continue;
      const limit = Math.min(cap, i);
      let k = 1;
      while (k < limit && h[i - 1 - k] === h[len - 1 - k]) k++;
      if (k >= allowed) {
        const t = h[i]!;
        if (k > (best.get(t) ?? 0)) best.set(t, k);
      }
    }
    const n = logits.length;
    for (const [t, k] of best) {
      if (t < n) logits[t] = logits[t]! - mult * base ** (k - allowed);
    }
  }
}

/** Whether `hay` contains `needle` (non-empty). */
function contains(hay: Uint8Array, needle: Uint8Array): boolean {
  const m = needle.length;
  outer: for (let i = 0; i + m <= hay.length; i++) {
    for (let j = 0; j < m; j++) if (hay[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}
