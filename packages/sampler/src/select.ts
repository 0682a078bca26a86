import { invalidArgument } from "./errors.js";

/**
 * Index of the largest logit; the lowest index on ties. Throws `INVALID_ARGUMENT` for empty logits or
 * a NaN logit. All `-Infinity` gives 0 (every index ties).
 */
export function argmax(logits: Float32Array): number {
  checkLogits(logits);
  // The hot path of greedy decoding (a 152k vocabulary every token): four running maxima and a
  // running sum in one pass, then the first index holding the maximum. A NaN makes the sum NaN
  // (as does +Infinity beside -Infinity); only then is the slow, exact scan needed.
  const n = logits.length;
  let m0 = Number.NEGATIVE_INFINITY;
  let m1 = m0;
  let m2 = m0;
  let m3 = m0;
  let sum = 0;
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const a = logits[i]!;
    const b = logits[i + 1]!;
    const c = logits[i + 2]!;
    const d = logits[i + 3]!;
    if (a > m0) m0 = a;
    if (b > m1) m1 = b;
    if (c > m2) m2 = c;
    if (d > m3) m3 = d;
    sum += a + b + c + d;
  }
  for (; i < n; i++) {
    const a = logits[i]!;
    if (a > m0) m0 = a;
    sum += a;
  }
  if (Number.isNaN(sum)) return argmaxChecked(logits);
  const best = logits.indexOf(Math.max(m0, m1, m2, m3));
  return Math.max(best, 0);
}

/** argmax one element at a time, throwing at the first NaN. */
function argmaxChecked(logits: Float32Array): number {
  let best = 0;
  let bestV = logits[0]!;
  if (Number.isNaN(bestV)) throw nanAt(0);
  for (let i = 1; i < logits.length; i++) {
    const v = logits[i]!;
    if (v > bestV) {
      bestV = v;
      best = i;
    } else if (Number.isNaN(v)) {
      throw nanAt(i);
    }
  }
  return best;
}

/** Throws `INVALID_ARGUMENT` unless `logits` is a non-empty Float32Array. */
export function checkLogits(logits: Float32Array): void {
  if (!(logits instanceof Float32Array)) throw invalidArgument("logits", "must be a Float32Array");
  if (logits.length === 0) throw invalidArgument("logits", "must not be empty (length 0)");
}

/** The error for a NaN logit at `i`. */
export function nanAt(i: number): Error {
  return invalidArgument("logits", `logits[${i}] is NaN`);
}

/**
 * The `k` best ids of `logits` (larger logit first, lower id first on ties), skipping `-Infinity`,
 * into `outIds[0..m)`, sorted best first; returns m ≤ k. A bounded min-heap whose root is the worst
 * kept id: O(n + m log k) for the usual case where few logits beat the root. Throws
 * `INVALID_ARGUMENT` for a NaN logit. `heap` and `outIds` must hold k entries; k ≥ 1.
 */
export function selectTopK(logits: Float32Array, k: number, heap: Float32Array, outIds: Uint32Array): number {
  const n = logits.length;
  let m = 0;
  let i = 0;
  // Fill.
  for (; i < n && m < k; i++) {
    const v = logits[i]!;
    if (v === -Infinity) continue;
    if (Number.isNaN(v)) throw nanAt(i);
    // Sift up: the new id is the highest so far, so it is worse than any equal value.
    let c = m++;
    while (c > 0) {
      const p = (c - 1) >> 1;
      if (heap[p]! < v) break; // the parent is already worse: the new entry stays below it
      heap[c] = heap[p]!;
      outIds[c] = outIds[p]!;
      c = p;
    }
    heap[c] = v;
    outIds[c] = i;
  }
  // Scan: ids grow, so an equal value is worse than the root; only a strictly larger one enters.
  let root = m > 0 ? heap[0]! : Infinity;
  for (; i < n; i++) {
    const v = logits[i]!;
    if (v > root) {
      siftDown(heap, outIds, m, v, i);
      root = heap[0]!;
    } else if (Number.isNaN(v)) {
      throw nanAt(i);
    }
  }
  // Heap sort: pop the worst into the back.
  for (let end = m - 1; end > 0; end--) {
    const v = heap[end]!;
    const id = outIds[end]!;
    heap[end] = heap[0]!;
    outIds[end] = outIds[0]!;
    siftDown(heap, outIds, end, v, id);
  }
  return m;
}

/** true when (va, ia) ranks below (vb, ib): smaller value, or equal value and higher id. */
function worse(va: number, ia: number, vb: number, ib: number): boolean {
  return va < vb || (va === vb && ia > ib);
}

/** Places (v, id) at the root of the size-`size` heap and sifts it down. */
function siftDown(heap: Float32Array, ids: Uint32Array, size: number, v: number, id: number): void {
  let c = 0;
  for (;;) {
    let w = 2 * c + 1;
    if (w >= size) break;
    const r = w + 1;
    if (r < size && worse(heap[r]!, ids[r]!, heap[w]!, ids[w]!)) w = r;
    if (!worse(heap[w]!, ids[w]!, v, id)) break;
    heap[c] = heap[w]!;
    ids[c] = ids[w]!;
    c = w;
  }
  heap[c] = v;
  ids[c] = id;
}

/** Ids up to this many sort by packed float64 keys (id in the low 21 bits); larger, by a comparator. */
const KEY_SORT_MAX = 1 << 21;

/**
 * Every id whose logit is ≥ `threshold` and not `-Infinity` into `outIds[0..m)`, sorted larger logit
 * first (lower id on ties); returns m. One sort of indices: each id is packed with its logit's order
 * into one float64 key, so the typed array sorts natively without a comparator. The caller has
 * checked for NaN; `outIds` and `keys` must hold logits.length entries.
 */
export function sortIds(
  logits: Float32Array,
  threshold: number,
  outIds: Uint32Array,
  keys: Float64Array,
): number {
  const n = logits.length;
  let m = 0;
  if (n > KEY_SORT_MAX) {
    for (let i = 0; i < n; i++) {
      const v = logits[i]!;
      if (v !== -Infinity && v >= threshold) outIds[m++] = i;
    }
    outIds.subarray(0, m).sort((a, b) => {
      const va = logits[a]!;
      const vb = logits[b]!;
      return va > vb ? -1 : va < vb ? 1 : a - b;
    });
    return m;
  }
  const bits = new Uint32Array(logits.buffer, logits.byteOffset, n);
  for (let i = 0; i < n; i++) {
    const v = logits[i]!;
    if (v === -Infinity || !(v >= threshold)) continue;
    let b = bits[i]!;
    if (b === 0x80000000) b = 0; // -0 ranks with +0
    // Monotonic uint32 of the float (larger float → larger), then reversed for a descending order.
    const ord = b & 0x80000000 ? ~b >>> 0 : (b | 0x80000000) >>> 0;
    keys[m++] = (0xffffffff - ord) * KEY_SORT_MAX + i;
  }
  const sorted = keys.subarray(0, m).sort();
  for (let j = 0; j < m; j++) outIds[j] = sorted[j]! % KEY_SORT_MAX;
  return m;
}
