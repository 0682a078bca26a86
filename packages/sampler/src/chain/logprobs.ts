import { selectTopK } from "../select.js";
import { weight } from "./candidates.js";

/** A token and its log-probability (natural log). */
export interface TokenLogprob {
  readonly token: number;
  readonly logprob: number;
}

/** What {@link Sampler.sampleWithLogprobs} returns. */
export interface SampleResult {
  /** The token drawn. */
  readonly token: number;
  /** Its log-probability (natural log) in the distribution described at {@link Sampler.sampleWithLogprobs}. */
  readonly logprob: number;
  /** The `n` most probable tokens in that distribution, most probable first (lower id on ties). */
  readonly top: readonly TokenLogprob[];
}

/**
 * The log-softmax at temperature 1 over the whole vocabulary: `lse` (= max + ln Σ exp(v − max),
 * float64) so that a token's log-probability is `logits[id] − lse`, and the `n` best tokens.
 * Allocates only the result (n entries) and the bounded heap.
 */
export class LogSoftmax {
  private heap = new Float32Array(0);
  private ids = new Uint32Array(0);
  lse = 0;

  /** Computes `lse` and returns the top `n` (id, logprob), best first. The caller checked for NaN. */
  compute(logits: Float32Array, n: number): TokenLogprob[] {
    let max = -Infinity;
    for (let i = 0; i < logits.length; i++) if (logits[i]! > max) max = logits[i]!;
    let z = 0;
    for (let i = 0; i < logits.length; i++) z += weight(logits[i]!, max, 1);
    this.lse = max === Infinity ? Infinity : max + Math.log(z);
    if (n <= 0) return [];
    if (this.heap.length < n) {
      this.heap = new Float32Array(n);
      this.ids = new Uint32Array(n);
    }
    const m = selectTopK(logits, n, this.heap, this.ids);
    const out: TokenLogprob[] = [];
    for (let j = 0; j < m; j++)
      out.push({ token: this.ids[j]!, logprob: this.logprob(logits[this.ids[j]!]!) });
    return out;
  }

  /** The log-probability of a token whose logit is `v`, under the last {@link compute}. */
  logprob(v: number): number {
    if (this.lse === Infinity) return v === Infinity ? 0 : -Infinity;
    return v - this.lse;
  }
}
