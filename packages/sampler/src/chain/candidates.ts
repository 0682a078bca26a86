import { invalidArgument } from "../errors.js";
import { nanAt, selectTopK, sortIds } from "../select.js";

/**
 * exp((v − max) · invT), the unnormalized softmax weight; with a `+Infinity` max, 1 for the
 * `+Infinity` logits and 0 for the rest.
 */
export function weight(v: number, max: number, invT: number): number {
  if (max === Infinity) return v === Infinity ? 1 : 0;
  return Math.exp((v - max) * invT);
}

/** The error for logits that leave nothing to draw. */
export function allNegInf(): Error {
  return invalidArgument("logits", "every logit is -Infinity: no token can be drawn");
}

/** Ids up to this many sort by packed float64 keys (id in the low 21 bits); larger, by a comparator. */
const KEY_SORT_MAX = 1 << 21;

/**
 * The candidate tokens the truncation stages narrow down (llama.cpp's token-data array, without
 * copying logits): `ids[0..size)` index `logits`, the working logits after bias, penalties, DRY and
 * the constraint. `sorted`: the ids run larger logit first (lower id on ties); otherwise in
 * vocabulary order. Buffers are scratch, grown on demand and reused from call to call.
 *
 * `partial`: only a most-probable prefix of the set is stored (every id that can survive top-p and
 * min-p), and `zAll` is the temperature-1 normalizer Σ exp(v − max) of the whole set, which top-p
 * needs. top-p and min-p make the set exact again.
 */
export class Candidates {
  ids = new Uint32Array(0);
  size = 0;
  sorted = false;
  partial = false;
  zAll = 0;
  logits: Float32Array = new Float32Array(0);
  /** Scratch probabilities, parallel to `ids`. */
  probs = new Float64Array(0);
  private heap = new Float32Array(0);
  private keys = new Float64Array(0);

  private reserve(n: number): void {
    if (this.ids.length < n) this.ids = new Uint32Array(n);
    if (this.probs.length < n) this.probs = new Float64Array(n);
  }

  /** The `k` largest logits, sorted. Throws when every logit is `-Infinity`. */
  fillTopK(logits: Float32Array, k: number): void {
    this.logits = logits;
    this.reserve(k);
    if (this.heap.length < k) this.heap = new Float32Array(k);
    this.size = selectTopK(logits, k, this.heap, this.ids);
    if (this.size === 0) throw allNegInf();
    this.sorted = true;
    this.partial = false;
  }

  /** `ids[0..size)`, already sorted larger logit first (lower id on ties), as the set. */
  fillSorted(logits: Float32Array, ids: Uint32Array, size: number): void {
    this.logits = logits;
    this.reserve(size);
    this.ids.set(ids.subarray(0, size));
    this.size = size;
    this.sorted = true;
    this.partial = false;
  }

  /** Every finite id in vocabulary order (unsorted). Throws for NaN or when nothing is finite. */
  fillAll(logits: Float32Array): void {
    this.logits = logits;
    const n = logits.length;
    this.reserve(n);
    let m = 0;
    for (let i = 0; i < n; i++) {
      const v = logits[i]!;
      if (v !== -Infinity) {
        if (Number.isNaN(v)) throw nanAt(i);
        this.ids[m++] = i;
      }
    }
    if (m === 0) throw allNegInf();
    this.size = m;
    this.sorted = false;
    this.partial = false;
  }

  /**
   * The prefix of the sorted set that top-p (`topP < 1`) and min-p (`minP > 0`) can keep: the best
   * `firstK` ids when that provably suffices, else every id above a bound below both cuts (one index
   * sort). Sets `partial` and `zAll`. Throws for NaN or when nothing is finite.
   */
  fillPrefix(logits: Float32Array, topP: number, minP: number, firstK: number): void {
    this.logits = logits;
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
    this.zAll = z;
    this.partial = true;
    this.sorted = true;
    const minLogit = minP > 0 ? max + Math.log(minP) : -Infinity;
    if (firstK < count) {
      this.fillTopK(logits, firstK);
      this.partial = true;
      const lastV = logits[this.ids[this.size - 1]!]!;
      if (minLogit > lastV || (topP < 1 && this.topPCut(topP, max, z) < this.size)) return;
    }
    // The nucleus' last token has probability ≥ (1 − topP) / count: the tail it starts holds more
    // than 1 − topP over at most `count` tokens, none more probable than it. Halved for rounding.
    let bound = topP < 1 ? max + Math.log((0.5 * (1 - topP) * z) / count) : -Infinity;
    if (max === Infinity) bound = Infinity;
    else if (minP > 0) bound = Math.max(bound, minLogit - 1e-4 * (1 + Math.abs(minLogit)));
    this.reserve(n);
    if (this.keys.length < n) this.keys = new Float64Array(n);
    this.size = sortIds(logits, bound, this.ids, this.keys);
  }

  /** Every id whose logit is ≥ `threshold`, sorted (may be none). The caller has checked for NaN. */
  fillAbove(logits: Float32Array, threshold: number): void {
    this.logits = logits;
    const n = logits.length;
    this.reserve(n);
    if (this.keys.length < n) this.keys = new Float64Array(n);
    this.size = sortIds(logits, threshold, this.ids, this.keys);
    this.sorted = true;
    this.partial = false;
  }

  /** The smallest sorted prefix reaching cumulative probability `topP` under normalizer z (at least 1). */
  topPCut(topP: number, max: number, z: number): number {
    let cum = 0;
    for (let j = 0; j < this.size; j++) {
      cum += weight(this.logits[this.ids[j]!]!, max, 1) / z;
      if (cum >= topP) return j + 1;
    }
    return this.size;
  }

  /** The largest logit among the candidates. */
  max(): number {
    if (this.sorted) return this.logits[this.ids[0]!]!;
    let m = -Infinity;
    for (let j = 0; j < this.size; j++) m = Math.max(m, this.logits[this.ids[j]!]!);
    return m;
  }

  /** Fills `probs[0..size)` with the softmax of the candidates' logits times `invT`; returns the max logit. */
  softmax(invT = 1): number {
    const max = this.max();
    let z = 0;
    for (let j = 0; j < this.size; j++) z += this.probs[j] = weight(this.logits[this.ids[j]!]!, max, invT);
    for (let j = 0; j < this.size; j++) this.probs[j]! /= z;
    return max;
  }

  /** Sorts the candidates larger logit first, lower id on ties. */
  sort(): void {
    if (this.sorted) return;
    const { ids, logits, size } = this;
    if (size > KEY_SORT_MAX || logits.length > KEY_SORT_MAX) {
      ids.subarray(0, size).sort((a, b) => {
        const va = logits[a]!;
        const vb = logits[b]!;
        return va > vb ? -1 : va < vb ? 1 : a - b;
      });
    } else {
      if (this.keys.length < size) this.keys = new Float64Array(size);
      const keys = this.keys;
      const bits = new Uint32Array(logits.buffer, logits.byteOffset, logits.length);
      for (let j = 0; j < size; j++) {
        const i = ids[j]!;
        let b = bits[i]!;
        if (b === 0x80000000) b = 0; // -0 ranks with +0
        const ord = b & 0x80000000 ? ~b >>> 0 : (b | 0x80000000) >>> 0;
        keys[j] = (0xffffffff - ord) * KEY_SORT_MAX + i;
      }
      const sorted = keys.subarray(0, size).sort();
      for (let j = 0; j < size; j++) ids[j] = sorted[j]! % KEY_SORT_MAX;
    }
    this.sorted = true;
  }

  /** Keeps the candidates whose logit is ≥ `threshold` (at least the best one); order is kept. */
  keepAtLeast(threshold: number): void {
    const { ids, logits } = this;
    let m = 0;
    for (let j = 0; j < this.size; j++) {
      const id = ids[j]!;
      if (logits[id]! >= threshold) ids[m++] = id;
    }
    if (m === 0) {
      const max = this.max();
      for (let j = 0; j < this.size; j++) if (logits[ids[j]!] === max) ids[m++] = ids[j]!;
    }
    this.size = m;
    this.partial = false;
  }
}
