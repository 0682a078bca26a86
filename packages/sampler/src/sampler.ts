import { invalidArgument } from "./errors.js";
import { checkSeed, type ResolvedSamplerOptions, resolveOptions, type SamplerOptions } from "./options.js";
import { Xoshiro128 } from "./prng.js";
import { argmax, checkLogits, nanAt, selectTopK, sortIds } from "./select.js";

/** With top-k off, the nucleus is first looked for among this many best ids. */
const NUCLEUS_FIRST_K = 256;

/**
 * Draws a token id from logits. One stage per llama.cpp sampler, in llama.cpp's chain order:
 * top-k → top-p → temperature → dist.
 *
 * 1. top-k: keep the `topK` largest logits (lower id first on ties); `-Infinity` is never kept.
 * 2. top-p: softmax of the kept logits (temperature 1, as llama.cpp's top-p sees them before its
 *    temperature stage); keep the smallest most-probable-first prefix whose cumulative probability
 *    is ≥ `topP`, at least one token.
 * 3. temperature: softmax of the survivors' logits divided by `temperature` (float64 sums).
 * 4. dist: one uniform double from xoshiro128** picks a survivor by cumulative probability, walking
 *    them most probable first (vocabulary order when neither cut is on).
 *
 * `temperature <= 0` is greedy: {@link argmax}, no draw. Every other call consumes the same amount of
 * the PRNG stream, so the n-th call's draw depends only on the seed and n.
 *
 * @example
 * ```ts
 * const sampler = new Sampler({ temperature: 0.7, topK: 40, topP: 0.9, seed: 42 });
 * const token = sampler.sample(logits); // logits: Float32Array of vocabulary size
 * ```
 */
export class Sampler {
  private opts: ResolvedSamplerOptions;
  private readonly rng: Xoshiro128;
  // Scratch, grown on demand and reused across calls.
  private ids = new Uint32Array(0);
  private heap = new Float32Array(0);
  private weights = new Float64Array(0);
  private keys = new Float64Array(0);

  /** Throws `INVALID_ARGUMENT` ({@link SamplerError}) for an invalid option, naming it. */
  constructor(options: SamplerOptions = {}) {
    this.opts = resolveOptions(options);
    this.rng = new Xoshiro128(this.opts.seed);
  }

  /** The options in use, defaults filled in; `seed` is the one chosen when none was given. */
  get options(): ResolvedSamplerOptions {
    return this.opts;
  }

  /**
   * Restarts the PRNG stream: from `seed` when given (it becomes `options.seed`), else from the
   * current `options.seed`, so the following draws repeat.
   */
  reset(seed?: number): void {
    if (seed !== undefined) this.opts = Object.freeze({ ...this.opts, seed: checkSeed(seed) });
    this.rng.seed(this.opts.seed);
  }

  /**
   * A token id drawn from `logits` (one per vocabulary entry). Throws `INVALID_ARGUMENT` for empty
   * logits, a NaN logit, or logits that are all `-Infinity`.
   */
  sample(logits: Float32Array): number {
    checkLogits(logits);
    const { temperature, topK, topP } = this.opts;
    if (temperature <= 0) {
      const id = argmax(logits);
      if (logits[id] === -Infinity) throw allNegInf();
      return id;
    }
    const u = this.rng.nextFloat64();
    const n = logits.length;
    if (topK > 0 && topK < n) return this.drawTopK(logits, topK, topP, temperature, u);
    if (topP < 1) return this.drawNucleus(logits, topP, temperature, u);
    return this.drawAll(logits, temperature, u);
  }

  /** top-k on: select k, then cut and draw among them. */
  private drawTopK(logits: Float32Array, k: number, topP: number, temperature: number, u: number): number {
    if (this.heap.length < k) this.heap = new Float32Array(k);
    const ids = this.scratchIds(k);
    const m = selectTopK(logits, k, this.heap, ids);
    if (m === 0) throw allNegInf();
    let cut = m;
    if (topP < 1) {
      const max = logits[ids[0]!]!;
      let z = 0;
      for (let j = 0; j < m; j++) z += weight(logits[ids[j]!]!, max, 1);
      cut = nucleusCut(logits, ids, m, max, z, topP);
    }
    return this.draw(logits, ids, cut, temperature, u);
  }

  /**
   * top-k off, top-p on: the normalizer runs over the whole vocabulary; the nucleus is searched among
   * the best NUCLEUS_FIRST_K ids, then, when it does not fit, among every id that can be in it (one
   * index sort).
   */
  private drawNucleus(logits: Float32Array, topP: number, temperature: number, u: number): number {
    const n = logits.length;
    let max = -Infinity;
    let count = 0;
    for (let i = 0; i < n; i++) {
      const v = logits[i]!;
      if (v > max) max = v;
      else if (Number.isNaN(v)) throw nanAt(i);
      if (v !== -Infinity) count++;
    }
    if (count === 0) throw allNegInf();
    let z = 0;
    for (let i = 0; i < n; i++) z += weight(logits[i]!, max, 1);
    if (NUCLEUS_FIRST_K < count) {
      const k = NUCLEUS_FIRST_K;
      if (this.heap.length < k) this.heap = new Float32Array(k);
      const ids = this.scratchIds(k);
      const m = selectTopK(logits, k, this.heap, ids);
      const cut = nucleusCut(logits, ids, m, max, z, topP);
      if (cut < m) return this.draw(logits, ids, cut, temperature, u);
    }
    // The nucleus' last token has probability ≥ (1 − topP) / count: the tail it starts holds more
    // than 1 − topP over at most `count` tokens, none more probable than it. Halved for rounding.
    const threshold = max + Math.log((0.5 * (1 - topP) * z) / count);
    const ids = this.scratchIds(n);
    if (this.keys.length < n) this.keys = new Float64Array(n);
    const m = sortIds(logits, threshold, ids, this.keys);
    return this.draw(logits, ids, nucleusCut(logits, ids, m, max, z, topP), temperature, u);
  }

  /** No cut: the whole vocabulary, walked in vocabulary order. */
  private drawAll(logits: Float32Array, temperature: number, u: number): number {
    const n = logits.length;
    const max = logits[argmax(logits)]!;
    if (max === -Infinity) throw allNegInf();
    if (this.weights.length < n) this.weights = new Float64Array(n);
    const w = this.weights;
    const inv = 1 / temperature;
    let total = 0;
    for (let i = 0; i < n; i++) total += w[i] = weight(logits[i]!, max, inv);
    const target = u * total;
    let cum = 0;
    let last = 0;
    for (let i = 0; i < n; i++) {
      const wi = w[i]!;
      if (wi === 0) continue;
      cum += wi;
      if (target < cum) return i;
      last = i;
    }
    return last;
  }

  /** Draws among `ids[0..cut)` (sorted best first) with the temperature's softmax. */
  private draw(logits: Float32Array, ids: Uint32Array, cut: number, temperature: number, u: number): number {
    if (cut === 1) return ids[0]!;
    if (this.weights.length < cut) this.weights = new Float64Array(cut);
    const w = this.weights;
    const max = logits[ids[0]!]!;
    const inv = 1 / temperature;
    let total = 0;
    for (let j = 0; j < cut; j++) total += w[j] = weight(logits[ids[j]!]!, max, inv);
    const target = u * total;
    let cum = 0;
    let last = 0;
    for (let j = 0; j < cut; j++) {
      const wj = w[j]!;
      if (wj === 0) break; // sorted: the rest weigh 0 too
      cum += wj;
      if (target < cum) return ids[j]!;
      last = j;
    }
    return ids[last]!;
  }

  private scratchIds(size: number): Uint32Array {
    if (this.ids.length < size) this.ids = new Uint32Array(size);
    return this.ids;
  }
}

/**
 * The smallest prefix of `ids[0..m)` (sorted best first) whose cumulative probability, under the
 * temperature-1 softmax with normalizer `z`, is ≥ `topP`; at least 1; m when the prefix never gets
 * there.
 */
function nucleusCut(
  logits: Float32Array,
  ids: Uint32Array,
  m: number,
  max: number,
  z: number,
  topP: number,
): number {
  let cum = 0;
  for (let j = 0; j < m; j++) {
    cum += weight(logits[ids[j]!]!, max, 1) / z;
    if (cum >= topP) return j + 1;
  }
  return m;
}

/**
 * exp((v − max) · invT), the unnormalized softmax weight; with a `+Infinity` max, 1 for the
 * `+Infinity` logits and 0 for the rest.
 */
function weight(v: number, max: number, invT: number): number {
  if (max === Infinity) return v === Infinity ? 1 : 0;
  return Math.exp((v - max) * invT);
}

function allNegInf(): Error {
  return invalidArgument("logits", "every logit is -Infinity: no token can be drawn");
}
