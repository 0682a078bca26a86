import { at, type Dense, dense, forRows } from "./dense.js";

/** ALiBi slope of head `h` of `nHead` for max bias `maxBias` (ggml's soft_max_ext); 1 without ALiBi. */
export function alibiSlope(h: number, nHead: number, maxBias: number): number {
  if (maxBias <= 0) return 1;
  const nHeadLog2 = 2 ** Math.floor(Math.log2(nHead));
  const m0 = 2 ** (-maxBias / nHeadLog2);
  const m1 = 2 ** (-maxBias / 2 / nHeadLog2);
  return h < nHeadLog2 ? m0 ** (h + 1) : m1 ** (2 * (h - nHeadLog2) + 1);
}

/** Normalised softmax of one run of values (max-subtracted; −∞ entries get 0). */
export function softmaxRow(x: Float64Array): Float64Array {
  let max = Number.NEGATIVE_INFINITY;
  for (const v of x) if (v > max) max = v;
  const out = new Float64Array(x.length);
  if (max === Number.NEGATIVE_INFINITY) return out;
  let sum = 0;
  for (let i = 0; i < x.length; i++) {
    out[i] = Math.exp(x[i]! - max);
    sum += out[i]!;
  }
  for (let i = 0; i < x.length; i++) out[i]! /= sum;
  return out;
}

/**
 * Per row: softmax(a * scale + slope * mask). The mask row is a's row index (dim 1), repeated
 * over dims 2 and 3; the ALiBi slope depends on dim 2 (the head), as in ggml_soft_max_ext.
 */
export function softmax(a: Dense, mask: Dense | undefined, scale: number, maxBias: number): Dense {
  const out = dense(a.ne);
  const n = a.ne[0];
  const row = new Float64Array(n);
  forRows(a.ne, (i1, i2, i3, s) => {
    const slope = alibiSlope(i2, a.ne[2], maxBias);
    const m = mask ? at(mask.ne, 0, i1, i2 % mask.ne[2], i3 % mask.ne[3]) : -1;
    for (let i = 0; i < n; i++) row[i] = a.data[s + i]! * scale + (mask ? slope * mask.data[m + i]! : 0);
    out.data.set(softmaxRow(row), s);
  });
  return out;
}
