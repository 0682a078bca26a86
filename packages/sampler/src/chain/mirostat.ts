import { nanAt } from "../select.js";
import { allNegInf, type Candidates, weight } from "./candidates.js";
import { draw } from "./draw.js";

/** How many of the most probable tokens mirostat v1 estimates the Zipf exponent from. */
const V1_M = 100;

/**
 * Mirostat (Basu et al., 2021), in place of the truncation stages: it steers the surprise
 * (−log2 p of the chosen token) towards `tau` by keeping a running bound `mu`, starting at 2·tau.
 * The probabilities are the softmax of the logits divided by the temperature.
 *
 * - v1 estimates the Zipf exponent ŝ of the 100 most probable tokens, derives the k whose top-k
 *   would have surprise mu, and draws from the top k.
 * - v2 keeps the tokens whose surprise is ≤ mu (at least the most probable) and draws among them,
 *   most probable first.
 *
 * Both renormalize over what they keep; the chosen token's surprise under that distribution updates
 * mu ← mu − eta·(surprise − tau) when the token is accepted ({@link Mirostat.update}).
 */
export class Mirostat {
  /** The running surprise bound. */
  mu: number;

  constructor(
    private readonly version: 1 | 2,
    private readonly tau: number,
    private readonly eta: number,
  ) {
    this.mu = 2 * tau;
  }

  /** Back to mu = 2·tau. */
  reset(): void {
    this.mu = 2 * this.tau;
  }

  /** Moves mu by the surprise (bits) of the accepted token. */
  update(surprise: number): void {
    this.mu -= this.eta * (surprise - this.tau);
  }

  /**
   * Draws a token with the uniform `u()`, called only when more than one token is kept (as
   * llama.cpp's discrete distribution draws nothing for one); returns it and its surprise in bits.
   */
  sample(
    c: Candidates,
    logits: Float32Array,
    temperature: number,
    u: () => number,
  ): { token: number; surprise: number } {
    if (this.version === 1) this.truncateV1(c, logits, temperature);
    else this.truncateV2(c, logits, temperature);
    const d = draw(c, temperature, c.size > 1 ? u() : 0);
    return { token: d.token, surprise: -Math.log2(d.p) };
  }

  private truncateV1(c: Candidates, logits: Float32Array, t: number): void {
    const n = logits.length;
    c.fillTopK(logits, Math.min(V1_M, n));
    const { ids, size } = c;
    let num = 0;
    let den = 0;
    for (let i = 0; i + 1 < size; i++) {
      const ti = Math.log((i + 2) / (i + 1));
      const a = logits[ids[i]!]!;
      const b = logits[ids[i + 1]!]!;
      if (b === -Infinity || a === Infinity) break;
      num += (ti * (a - b)) / t;
      den += ti * ti;
    }
    const s = num / den;
    const eps = s - 1;
    let k = ((eps * 2 ** this.mu) / (1 - n ** -eps)) ** (1 / s);
    k = Number.isNaN(k) ? n : Math.min(n, Math.max(1, Math.floor(k)));
    if (k !== size) c.fillTopK(logits, k);
  }

  private truncateV2(c: Candidates, logits: Float32Array, t: number): void {
    const n = logits.length;
    let max = -Infinity;
    for (let i = 0; i < n; i++) {
      const v = logits[i]!;
      if (v > max) max = v;
      else if (Number.isNaN(v)) throw nanAt(i);
    }
    if (max === -Infinity) throw allNegInf();
    const inv = 1 / t;
    let z = 0;
    for (let i = 0; i < n; i++) z += weight(logits[i]!, max, inv);
    // p ≥ 2^−mu  ⟺  (v − max)/t − ln z ≥ −mu·ln 2.
    const threshold = max === Infinity ? Infinity : max + t * (Math.log(z) - this.mu * Math.LN2);
    c.fillAbove(logits, threshold);
    if (c.size === 0) c.fillTopK(logits, 1);
    // The draw walks the kept tokens most probable first, as llama.cpp's does.
    else c.sort();
  }
}
