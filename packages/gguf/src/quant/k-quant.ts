// Quantizers for Q4_K, Q5_K and Q6_K (layouts: see k-dequant.ts). These are reference-grade
// searches written for this package, not llama.cpp's (imatrix-aware) algorithms; any bytes they
// produce are valid blocks that ggml decodes with its ordinary dequantizers.
//
// Shape of every kernel: (1) per sub-block, try a handful of candidate grid scales and keep the
// (scale, min) that minimizes the squared error; (2) quantize the sub-block scales (and mins) to
// the block's integer scale format against an f16 super-block scale; (3) re-quantize every
// element against the scale it will actually be decoded with.
import { f32ToF16, roundToF16, writeU16 } from "./f16.js";
import { allFinite, importanceWeights } from "./importance.js";

/** Nearest integer, halves away from zero. */
export function roundAway(v: number): number {
  return v < 0 ? -Math.floor(-v + 0.5) : Math.floor(v + 0.5);
}

/** v limited to [lo, hi]. */
export function clamp(v: number, lo: number, hi: number): number {
  return Math.min(Math.max(v, lo), hi);
}

/**
 * Fits x[o..o+n) ≈ s·q − m with integers q ∈ 0..nmax, s ≥ 0 and m ≥ 0 (the offset −m is never
 * above zero, as the K formats require), by trying grids of nmax + δ steps over [min(0, lo), hi]
 * and solving least squares for (s, m) given each grid's q. Returns [s, m].
 */
export function fitScaleMin(x: Float32Array, o: number, n: number, nmax: number): [number, number] {
  let lo = 0;
  let hi = Number.NEGATIVE_INFINITY;
  for (let j = 0; j < n; j++) {
    const v = x[o + j];
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (!(hi > lo)) return [0, -lo]; // constant block: all elements equal lo ≤ 0
  let bestS = (hi - lo) / nmax;
  let bestB = lo;
  let bestErr = Number.POSITIVE_INFINITY;
  // Candidate grids: δ from −1 to +1.5 in steps of 0.1, plus two refinement passes of the best fit.
  const tryGrid = (iscale: number, offset: number): void => {
    let sl = 0;
    let sll = 0;
    let sx = 0;
    let slx = 0;
    for (let j = 0; j < n; j++) {
      const v = x[o + j];
      const l = clamp(roundAway((v - offset) * iscale), 0, nmax);
      sl += l;
      sll += l * l;
      sx += v;
      slx += l * v;
    }
    const det = n * sll - sl * sl;
    let s: number;
    let b: number;
    if (det > 0) {
      s = (n * slx - sl * sx) / det;
      b = (sll * sx - sl * slx) / det;
    } else {
      s = 0;
      b = sx / n;
    }
    if (b > 0) {
      // The offset must be ≤ 0: fit the scale alone with b = 0.
      b = 0;
      s = sll > 0 ? slx / sll : 0;
    }
    if (s < 0) s = 0;
    let err = 0;
    for (let j = 0; j < n; j++) {
      const v = x[o + j];
      const l = s > 0 ? clamp(roundAway((v - b) / s), 0, nmax) : 0;
      const e = s * l + b - v;
      err += e * e;
    }
    if (err < bestErr) {
      bestErr = err;
      bestS = s;
      bestB = b;
    }
  };
  for (let k = -10; k <= 15; k++) tryGrid((nmax + 0.1 * k) / (hi - lo), lo);
  for (let pass = 0; pass < 2 && bestS > 0; pass++) tryGrid(1 / bestS, bestB);
  return [bestS, -bestB];
}

/**
 * Fits x[o..o+n) ≈ s·q with integers q ∈ −nneg..nneg−1, trying scales that map the signed
 * abs-max element to −nneg + δ and solving least squares for s given each grid's q. Returns s
 * (negative when the abs-max element is positive, to use the extra negative level).
 */
export function fitScaleSymmetric(x: Float32Array, o: number, n: number, nneg: number): number {
  let amax = 0;
  let max = 0;
  for (let j = 0; j < n; j++) {
    const v = x[o + j];
    if (Math.abs(v) > amax) {
      amax = Math.abs(v);
      max = v;
    }
  }
  if (amax === 0) return 0;
  let best = max / -nneg;
  let bestScore = -1;
  for (let k = -10; k <= 10; k++) {
    const iscale = -(nneg + 0.1 * k) / max;
    let sll = 0;
    let slx = 0;
    for (let j = 0; j < n; j++) {
      const v = x[o + j];
      const l = clamp(roundAway(v * iscale), -nneg, nneg - 1);
      sll += l * l;
      slx += l * v;
    }
    // Squared error with the optimal s = slx/sll is Σx² − slx²/sll: maximize slx²/sll.
    const score = sll > 0 ? (slx * slx) / sll : 0;
    if (score > bestScore) {
      bestScore = score;
      best = slx / sll;
    }
  }
  return best;
}

/**
 * fitScaleMin with each element's squared error weighted by w[wo + j] (finite, ≥ 0): the grids
 * are the same, the (s, m) of each is the weighted least-squares fit. A sub-block whose weights
 * are all zero takes the unweighted fit.
 */
export function fitScaleMinW(
  x: Float32Array,
  o: number,
  w: Float64Array,
  wo: number,
  n: number,
  nmax: number,
): [number, number] {
  let lo = 0;
  let hi = Number.NEGATIVE_INFINITY;
  let sw = 0;
  for (let j = 0; j < n; j++) {
    const v = x[o + j]!;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
    sw += w[wo + j]!;
  }
  if (!(hi > lo)) return [0, -lo];
  if (!(sw > 0)) return fitScaleMin(x, o, n, nmax);
  let bestS = (hi - lo) / nmax;
  let bestB = lo;
  let bestErr = Number.POSITIVE_INFINITY;
  const tryGrid = (iscale: number, offset: number): void => {
    let sl = 0;
    let sll = 0;
    let sx = 0;
    let slx = 0;
    for (let j = 0; j < n; j++) {
      const v = x[o + j]!;
      const wj = w[wo + j]!;
      const l = clamp(roundAway((v - offset) * iscale), 0, nmax);
      sl += wj * l;
      sll += wj * l * l;
      sx += wj * v;
      slx += wj * l * v;
    }
    const det = sw * sll - sl * sl;
    let s: number;
    let b: number;
    if (det > 0) {
      s = (sw * slx - sl * sx) / det;
      b = (sll * sx - sl * slx) / det;
    } else {
      s = 0;
      b = sx / sw;
    }
    if (b > 0) {
      b = 0;
      s = sll > 0 ? slx / sll : 0;
    }
    if (s < 0) s = 0;
    let err = 0;
    for (let j = 0; j < n; j++) {
      const v = x[o + j]!;
      const l = s > 0 ? clamp(roundAway((v - b) / s), 0, nmax) : 0;
      const e = s * l + b - v;
      err += w[wo + j]! * e * e;
    }
    if (err < bestErr) {
      bestErr = err;
      bestS = s;
      bestB = b;
    }
  };
  for (let k = -10; k <= 15; k++) tryGrid((nmax + 0.1 * k) / (hi - lo), lo);
  for (let pass = 0; pass < 2 && bestS > 0; pass++) tryGrid(1 / bestS, bestB);
  return [bestS, -bestB];
}

/**
 * fitScaleSymmetric with each element's squared error weighted by w[wo + j] (finite, ≥ 0); a
 * sub-block whose weights are all zero takes the unweighted fit.
 */
export function fitScaleSymmetricW(
  x: Float32Array,
  o: number,
  w: Float64Array,
  wo: number,
  n: number,
  nneg: number,
): number {
  let amax = 0;
  let max = 0;
  let sw = 0;
  for (let j = 0; j < n; j++) {
    const v = x[o + j]!;
    sw += w[wo + j]!;
    if (Math.abs(v) > amax) {
      amax = Math.abs(v);
      max = v;
    }
  }
  if (amax === 0) return 0;
  if (!(sw > 0)) return fitScaleSymmetric(x, o, n, nneg);
  let best = max / -nneg;
  let bestScore = -1;
  for (let k = -10; k <= 10; k++) {
    const iscale = -(nneg + 0.1 * k) / max;
    let sll = 0;
    let slx = 0;
    for (let j = 0; j < n; j++) {
      const v = x[o + j]!;
      const wj = w[wo + j]!;
      const l = clamp(roundAway(v * iscale), -nneg, nneg - 1);
      sll += wj * l * l;
      slx += wj * l * v;
    }
    const score = sll > 0 ? (slx * slx) / sll : 0;
    if (score > bestScore) {
      bestScore = score;
      best = sll > 0 ? slx / sll : best;
    }
  }
  return best;
}

// ---- Fast paths -------------------------------------------------------------------------------
// The kernels below make exactly the bytes that fitScaleMin / fitScaleSymmetric and the loops
// they replaced made: every value that decides an output is computed by the same floating-point
// operations in the same order. What changes is the work around them:
//  - a sub-block is copied once into a Float64Array scratch (no per-block allocation);
//  - the candidate grids' least-squares sums are accumulated two (Q4_K/Q5_K) or three (Q6_K)
//    candidates per pass, each sum still added element by element in order;
//  - a candidate whose (s, b) equals one already scored is not scored again (same error, and a
//    tie never replaces the best), and an error sum is abandoned once it reaches the best error
//    (adding non-negative terms never decreases a rounded sum);
//  - Q6_K uses |v·i| = |v|·|i| (IEEE products are sign-symmetric), so its rounding needs no sign
//    branch and its Σl·v is the exact negation of Σ|l|·|v| when the scale's sign is negative.
// Sub-blocks holding a non-finite value take the generic functions above.

let XS = new Float64Array(32); // the sub-block's values
let DS = new Float64Array(32); // Q4_K/Q5_K: value − lo; Q6_K: |value|
let CAP = new Float64Array(32); // Q6_K: per-element magnitude bound (nneg or nneg − 1)

function scratch(n: number): void {
  if (XS.length < n) {
    XS = new Float64Array(n);
    DS = new Float64Array(n);
    CAP = new Float64Array(n);
  }
}

// State of the running fitScaleMinFast search, in a typed array so its doubles stay unboxed:
// [best s, best b, best error, last scored s, last scored b, min of the result, and the
// (s, b) of the two candidates being scored at 6..9].
const FIT = new Float64Array(10);

/** The least-squares (s, b) of fitScaleMin's tryGrid for sums (sl, sll, slx), into FIT[at..]. */
function solveScaleMin(n: number, sx: number, sl: number, sll: number, slx: number, at: number): void {
  const det = n * sll - sl * sl;
  let s: number;
  let b: number;
  if (det > 0) {
    s = (n * slx - sl * sx) / det;
    b = (sll * sx - sl * slx) / det;
  } else {
    s = 0;
    b = sx / n;
  }
  if (b > 0) {
    b = 0;
    s = sll > 0 ? slx / sll : 0;
  }
  if (s < 0) s = 0;
  FIT[at] = s;
  FIT[at + 1] = b;
}

/** Whether (s, b) equals a candidate already scored (its error is known not to beat the best). */
function seen(s: number, b: number): boolean {
  const fit = FIT;
  return (
    (s === fit[3] && b === fit[4]) || (s === fit[0] && b === fit[1] && fit[2]! < Number.POSITIVE_INFINITY)
  );
}

/** Squared error of (s, b) on xs[0..n), as fitScaleMin sums it; ≥ bestErr once it reaches it. */
function errScaleMin(
  xs: Float64Array,
  n: number,
  nmax: number,
  s: number,
  b: number,
  bestErr: number,
): number {
  let err = 0;
  if (s > 0) {
    for (let j = 0; j < n; j++) {
      const v = xs[j]!;
      const y = (v - b) / s;
      const t = y + 0.5;
      const l = y < 0 ? 0 : t >= nmax ? nmax : Math.floor(t);
      const e = s * l + b - v;
      err += e * e;
      if (err >= bestErr) return err;
    }
  } else {
    const z = s * 0;
    for (let j = 0; j < n; j++) {
      const e = z + b - xs[j]!;
      err += e * e;
      if (err >= bestErr) return err;
    }
  }
  return err;
}

/** Makes (s, b) with error `err` the best if it beats it, and the last scored. */
function offer(s: number, b: number, err: number): void {
  const fit = FIT;
  fit[3] = s;
  fit[4] = b;
  if (err < fit[2]!) {
    fit[0] = s;
    fit[1] = b;
    fit[2] = err;
  }
}

/**
 * Scores the candidates with sums (sl0, sll0, slx0) and then (sl1, sll1, slx1) exactly as two
 * calls of fitScaleMin's tryGrid would, both error sums in one pass when both are needed.
 */
function scorePair(
  xs: Float64Array,
  n: number,
  nmax: number,
  sx: number,
  sl0: number,
  sll0: number,
  slx0: number,
  sl1: number,
  sll1: number,
  slx1: number,
): void {
  const fit = FIT;
  solveScaleMin(n, sx, sl0, sll0, slx0, 6);
  solveScaleMin(n, sx, sl1, sll1, slx1, 8);
  const s0 = fit[6]!;
  const b0 = fit[7]!;
  const s1 = fit[8]!;
  const b1 = fit[9]!;
  const need0 = !seen(s0, b0);
  const need1 = !seen(s1, b1) && !(s1 === s0 && b1 === b0);
  const bestErr = fit[2]!;
  if (need0 && need1 && s0 > 0 && s1 > 0) {
    let err0 = 0;
    let err1 = 0;
    for (let j = 0; j < n; j++) {
      const v = xs[j]!;
      const y0 = (v - b0) / s0;
      const y1 = (v - b1) / s1;
      const t0 = y0 + 0.5;
      const t1 = y1 + 0.5;
      const l0 = y0 < 0 ? 0 : t0 >= nmax ? nmax : Math.floor(t0);
      const l1 = y1 < 0 ? 0 : t1 >= nmax ? nmax : Math.floor(t1);
      const e0 = s0 * l0 + b0 - v;
      const e1 = s1 * l1 + b1 - v;
      err0 += e0 * e0;
      err1 += e1 * e1;
      if (err0 >= bestErr && err1 >= bestErr) break; // neither can win: both stay ≥ bestErr
    }
    offer(s0, b0, err0);
    offer(s1, b1, err1);
    return;
  }
  if (need0) offer(s0, b0, errScaleMin(xs, n, nmax, s0, b0, bestErr));
  if (need1) offer(s1, b1, errScaleMin(xs, n, nmax, s1, b1, fit[2]!));
}

/** fitScaleMin(x, o, n, nmax), same result: returns s and leaves m in FIT[5]. */
function fitScaleMinFast(x: Float32Array, o: number, n: number, nmax: number): number {
  scratch(n);
  const xs = XS;
  const ds = DS;
  const fit = FIT;
  let lo = 0;
  let hi = Number.NEGATIVE_INFINITY;
  let finite = 0;
  for (let j = 0; j < n; j++) {
    const v = x[o + j]!;
    xs[j] = v;
    finite += v - v; // NaN once any value is ±Inf or NaN
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (finite !== 0) {
    const [s, m] = fitScaleMin(x, o, n, nmax);
    fit[5] = m;
    return s;
  }
  if (!(hi > lo)) {
    fit[5] = -lo;
    return 0;
  }
  let sx = 0;
  for (let j = 0; j < n; j++) {
    sx += xs[j]!;
    ds[j] = xs[j]! - lo;
  }
  const range = hi - lo;
  fit[0] = range / nmax;
  fit[1] = lo;
  fit[2] = Number.POSITIVE_INFINITY;
  fit[3] = Number.NaN;
  fit[4] = Number.NaN;

  // Grids δ = −1.0 … +1.5 over [lo, hi], two per pass: l = clamp(round((v − lo)·i), 0, nmax),
  // where v − lo ≥ 0 and i > 0, so rounding half away from zero is floor(y + 0.5).
  for (let k = -10; k <= 15; k += 2) {
    const i0 = (nmax + 0.1 * k) / range;
    const i1 = (nmax + 0.1 * (k + 1)) / range;
    let sl0 = 0;
    let sll0 = 0;
    let slx0 = 0;
    let sl1 = 0;
    let sll1 = 0;
    let slx1 = 0;
    for (let j = 0; j < n; j++) {
      const v = xs[j]!;
      const dv = ds[j]!;
      const t0 = dv * i0 + 0.5;
      const t1 = dv * i1 + 0.5;
      const l0 = t0 >= nmax ? nmax : Math.floor(t0);
      const l1 = t1 >= nmax ? nmax : Math.floor(t1);
      sl0 += l0;
      sll0 += l0 * l0;
      slx0 += l0 * v;
      sl1 += l1;
      sll1 += l1 * l1;
      slx1 += l1 * v;
    }
    scorePair(xs, n, nmax, sx, sl0, sll0, slx0, sl1, sll1, slx1);
  }
  // Two refinement passes around the best fit.
  for (let pass = 0; pass < 2 && fit[0]! > 0; pass++) {
    const iscale = 1 / fit[0]!;
    const offset = fit[1]!;
    let sl = 0;
    let sll = 0;
    let slx = 0;
    for (let j = 0; j < n; j++) {
      const v = xs[j]!;
      const y = (v - offset) * iscale;
      const t = y + 0.5;
      const l = y < 0 ? 0 : t >= nmax ? nmax : Math.floor(t);
      sl += l;
      sll += l * l;
      slx += l * v;
    }
    solveScaleMin(n, sx, sl, sll, slx, 6);
    const s = fit[6]!;
    const b = fit[7]!;
    if (!seen(s, b)) offer(s, b, errScaleMin(xs, n, nmax, s, b, fit[2]!));
  }
  fit[5] = -fit[1]!;
  return fit[0]!;
}

/** fitScaleSymmetric(x, o, n, nneg), same result. */
function fitScaleSymmetricFast(x: Float32Array, o: number, n: number, nneg: number): number {
  scratch(n);
  const as = DS;
  const cap = CAP;
  let amax = 0;
  let max = 0;
  let finite = 0;
  for (let j = 0; j < n; j++) {
    const v = x[o + j]!;
    finite += v - v;
    const a = v < 0 ? -v : v;
    as[j] = a;
    if (a > amax) {
      amax = a;
      max = v;
    }
  }
  if (finite !== 0) return fitScaleSymmetric(x, o, n, nneg);
  if (amax === 0) return 0;
  // iscale = −(nneg + δ)/max has the sign of −max; v·iscale < 0 exactly when v has max's sign
  // (v ≠ 0), where l may reach −nneg, else nneg − 1. l·v = sign(iscale)·|l|·|v|.
  for (let j = 0; j < n; j++) {
    const v = x[o + j]!;
    cap[j] = v !== 0 && v < 0 === max < 0 ? nneg : nneg - 1;
  }
  const sign = max < 0 ? 1 : -1;
  let best = max / -nneg;
  let bestScore = -1;
  for (let k = -10; k <= 10; k += 3) {
    const i0 = (nneg + 0.1 * k) / amax;
    const i1 = (nneg + 0.1 * (k + 1)) / amax;
    const i2 = (nneg + 0.1 * (k + 2)) / amax;
    let sll0 = 0;
    let slx0 = 0;
    let sll1 = 0;
    let slx1 = 0;
    let sll2 = 0;
    let slx2 = 0;
    for (let j = 0; j < n; j++) {
      const a = as[j]!;
      const c = cap[j]!;
      const r0 = Math.floor(a * i0 + 0.5);
      const r1 = Math.floor(a * i1 + 0.5);
      const r2 = Math.floor(a * i2 + 0.5);
      // biome-ignore lint/complexity/useMathMinMax: a compare is ~1.5x faster here than Math.min
      const l0 = r0 > c ? c : r0;
      // biome-ignore lint/complexity/useMathMinMax: a compare is ~1.5x faster here than Math.min
      const l1 = r1 > c ? c : r1;
      // biome-ignore lint/complexity/useMathMinMax: a compare is ~1.5x faster here than Math.min
      const l2 = r2 > c ? c : r2;
      sll0 += l0 * l0;
      slx0 += l0 * a;
      sll1 += l1 * l1;
      slx1 += l1 * a;
      sll2 += l2 * l2;
      slx2 += l2 * a;
    }
    const s0 = sll0 > 0 ? (slx0 * slx0) / sll0 : 0;
    if (s0 > bestScore) {
      bestScore = s0;
      best = (sign * slx0) / sll0;
    }
    const s1 = sll1 > 0 ? (slx1 * slx1) / sll1 : 0;
    if (s1 > bestScore) {
      bestScore = s1;
      best = (sign * slx1) / sll1;
    }
    const s2 = sll2 > 0 ? (slx2 * slx2) / sll2 : 0;
    if (s2 > bestScore) {
      bestScore = s2;
      best = (sign * slx2) / sll2;
    }
  }
  return best;
}

/** Packs 8 six-bit scales and mins into 12 bytes at dst[o..o+12), the inverse of scaleMinK4. */
function packScaleMinK4(sc: Uint8Array, mn: Uint8Array, dst: Uint8Array, o: number): void {
  for (let j = 0; j < 4; j++) {
    dst[o + j] = sc[j]! | ((sc[j + 4]! >> 4) << 6);
    dst[o + j + 4] = mn[j]! | ((mn[j + 4]! >> 4) << 6);
    dst[o + j + 8] = (sc[j + 4]! & 15) | ((mn[j + 4]! & 15) << 4);
  }
}

/** Squared error of decoding x[o..o+32) with (step, off), summed in order; ≥ bestErr once it reaches it. */
function errStepOff(
  x: Float32Array,
  o: number,
  nmax: number,
  step: number,
  off: number,
  bestErr: number,
): number {
  let err = 0;
  if (step > 0) {
    for (let j = 0; j < 32; j++) {
      const v = x[o + j]!;
      const y = (v + off) / step;
      const t = y + 0.5;
      const l = y < 0 ? 0 : t >= nmax ? nmax : Math.floor(t);
      const e = step * l - off - v;
      err += e * e;
      if (err >= bestErr) return err;
    }
  } else {
    const z = step * 0;
    for (let j = 0; j < 32; j++) {
      const e = z - off - x[o + j]!;
      err += e * e;
      if (err >= bestErr) return err;
    }
  }
  return err;
}

const SCALES = new Float64Array(16);
const MINS = new Float64Array(8);
const LS = new Uint8Array(8);
const LM = new Uint8Array(8);
const Q = new Uint8Array(256);

/**
 * Shared body of Q4_K and Q5_K: per 32-element sub-block fit (scale, min), scales and mins to
 * 6 bits against f16 d and dmin, then q ∈ 0..nmax for each element. Writes d, dmin and the packed
 * scales at block offset `o` and returns the 256 q values in natural order (a shared scratch).
 */
function quantizeAsymBlock(
  x: Float32Array,
  xo: number,
  nmax: number,
  dst: Uint8Array,
  o: number,
): Uint8Array {
  const scales = SCALES;
  const mins = MINS;
  let maxScale = 0;
  let maxMin = 0;
  for (let k = 0; k < 8; k++) {
    const s = fitScaleMinFast(x, xo + 32 * k, 32, nmax);
    const m = FIT[5]!;
    scales[k] = s;
    mins[k] = m;
    if (s > maxScale) maxScale = s;
    if (m > maxMin) maxMin = m;
  }
  const d = roundToF16(maxScale / 63);
  const dmin = roundToF16(maxMin / 63);
  writeU16(dst, o, f32ToF16(d));
  writeU16(dst, o + 2, f32ToF16(dmin));
  // Round each sub-block's scale and min to 6 bits, trying the neighbours of the nearest codes
  // and keeping the pair with the least squared error on the sub-block's actual decode.
  const ls = LS;
  const lm = LM;
  const q = Q;
  for (let k = 0; k < 8; k++) {
    const xs = xo + 32 * k;
    const rs = d > 0 ? clamp(roundAway(scales[k]! / d), 0, 63) : 0;
    const rm = dmin > 0 ? clamp(roundAway(mins[k]! / dmin), 0, 63) : 0;
    ls[k] = 0;
    lm[k] = 0;
    let bestErr = Number.POSITIVE_INFINITY;
    let bestStep = Number.NaN;
    let bestOff = Number.NaN;
    const cs1 = Math.min(63, rs + 1);
    const cm0 = Math.max(0, rm - 1);
    const cm1 = Math.min(63, rm + 1);
    for (let cs = Math.max(0, rs - 1); cs <= cs1; cs++) {
      const step = Math.fround(d * cs);
      for (let cm = cm0; cm <= cm1; cm++) {
        const off = Math.fround(dmin * cm);
        if (step === bestStep && off === bestOff) continue; // same decode: same error, not better
        const err = errStepOff(x, xs, nmax, step, off, bestErr);
        if (err < bestErr) {
          bestErr = err;
          bestStep = step;
          bestOff = off;
          ls[k] = cs;
          lm[k] = cm;
        }
      }
    }
    const step = Math.fround(d * ls[k]!);
    const off = Math.fround(dmin * lm[k]!);
    if (step > 0) {
      for (let j = 0; j < 32; j++) {
        const y = (x[xs + j]! + off) / step;
        const t = y + 0.5;
        q[32 * k + j] = y < 0 ? 0 : t >= nmax ? nmax : Math.floor(t);
      }
    } else {
      q.fill(0, 32 * k, 32 * k + 32);
    }
  }
  packScaleMinK4(ls, lm, dst, o + 4);
  return q;
}

const WB = new Float64Array(256); // one super-block's element weights

/** Weighted squared error of decoding x[o..o+n) with (step, off), element weights w[wo..). */
function errStepOffW(
  x: Float32Array,
  o: number,
  w: Float64Array,
  wo: number,
  n: number,
  nmax: number,
  step: number,
  off: number,
): number {
  let err = 0;
  for (let j = 0; j < n; j++) {
    const v = x[o + j]!;
    const l = step > 0 ? clamp(roundAway((v + off) / step), 0, nmax) : 0;
    const e = step * l - off - v;
    err += w[wo + j]! * e * e;
  }
  return err;
}

/**
 * quantizeAsymBlock with importance `imp` (indexed like x): the sub-block fits and the choice of
 * each sub-block's 6-bit scale and min codes minimize the weighted squared error. The block's
 * values must be finite.
 */
function quantizeAsymBlockW(
  x: Float32Array,
  xo: number,
  nmax: number,
  dst: Uint8Array,
  o: number,
  imp: Float32Array,
): Uint8Array {
  const w = WB;
  importanceWeights(x, imp, xo, 256, 2, w);
  const scales = SCALES;
  const mins = MINS;
  let maxScale = 0;
  let maxMin = 0;
  for (let k = 0; k < 8; k++) {
    const [s, m] = fitScaleMinW(x, xo + 32 * k, w, 32 * k, 32, nmax);
    scales[k] = s;
    mins[k] = m;
    if (s > maxScale) maxScale = s;
    if (m > maxMin) maxMin = m;
  }
  const d = roundToF16(maxScale / 63);
  const dmin = roundToF16(maxMin / 63);
  writeU16(dst, o, f32ToF16(d));
  writeU16(dst, o + 2, f32ToF16(dmin));
  const ls = LS;
  const lm = LM;
  const q = Q;
  for (let k = 0; k < 8; k++) {
    const xs = xo + 32 * k;
    const rs = d > 0 ? clamp(roundAway(scales[k]! / d), 0, 63) : 0;
    const rm = dmin > 0 ? clamp(roundAway(mins[k]! / dmin), 0, 63) : 0;
    ls[k] = rs;
    lm[k] = rm;
    let bestErr = errStepOffW(x, xs, w, 32 * k, 32, nmax, Math.fround(d * rs), Math.fround(dmin * rm));
    for (let cs = Math.max(0, rs - 2); cs <= Math.min(63, rs + 2); cs++) {
      const step = Math.fround(d * cs);
      for (let cm = Math.max(0, rm - 2); cm <= Math.min(63, rm + 2); cm++) {
        const err = errStepOffW(x, xs, w, 32 * k, 32, nmax, step, Math.fround(dmin * cm));
        if (err < bestErr) {
          bestErr = err;
          ls[k] = cs;
          lm[k] = cm;
        }
      }
    }
    const step = Math.fround(d * ls[k]!);
    const off = Math.fround(dmin * lm[k]!);
    for (let j = 0; j < 32; j++) {
      q[32 * k + j] = step > 0 ? clamp(roundAway((x[xs + j]! + off) / step), 0, nmax) : 0;
    }
  }
  packScaleMinK4(ls, lm, dst, o + 4);
  return q;
}

/** One super-block's quantized codes: the weighted search when an importance is given and the values are finite. */
function asymBlock(
  x: Float32Array,
  xo: number,
  nmax: number,
  dst: Uint8Array,
  o: number,
  imp: Float32Array | undefined,
): Uint8Array {
  return imp && allFinite(x, xo, 256)
    ? quantizeAsymBlockW(x, xo, nmax, dst, o, imp)
    : quantizeAsymBlock(x, xo, nmax, dst, o);
}

/**
 * Values → Q4_K blocks (256 elements, 144 bytes each). `imp`, when given, holds each element's
 * importance (indexed like x) and the searches minimize the importance-weighted error.
 */
export function quantizeQ4K(x: Float32Array, dst: Uint8Array, imp?: Float32Array): void {
  const nb = x.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 144;
    const q = asymBlock(x, i * 256, 15, dst, o, imp);
    for (let c = 0; c < 4; c++) {
      for (let l = 0; l < 32; l++) dst[o + 16 + 32 * c + l] = q[64 * c + l]! | (q[64 * c + 32 + l]! << 4);
    }
  }
}

/** Values → Q5_K blocks (256 elements, 176 bytes each); `imp` as in quantizeQ4K. */
export function quantizeQ5K(x: Float32Array, dst: Uint8Array, imp?: Float32Array): void {
  const nb = x.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 176;
    const q = asymBlock(x, i * 256, 31, dst, o, imp);
    dst.fill(0, o + 16, o + 48);
    for (let c = 0; c < 4; c++) {
      for (let l = 0; l < 32; l++) {
        const lo = q[64 * c + l]!;
        const hi = q[64 * c + 32 + l]!;
        dst[o + 48 + 32 * c + l] = (lo & 15) | ((hi & 15) << 4);
        dst[o + 16 + l]! |= ((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1));
      }
    }
  }
}

/** Weighted squared error of x[o..o+16) decoded with Q6_K step `step`. */
function errQ6W(x: Float32Array, o: number, wo: number, step: number): number {
  let err = 0;
  for (let j = 0; j < 16; j++) {
    const v = x[o + j]!;
    const l = step !== 0 ? clamp(roundAway(v / step), -32, 31) : 0;
    const e = step * l - v;
    err += WB[wo + j]! * e * e;
  }
  return err;
}

/** The int8 scale code among ls and its two neighbours each way with the least weighted error. */
function bestQ6Code(x: Float32Array, o: number, wo: number, d: number, ls: number): number {
  let best = ls;
  let bestErr = errQ6W(x, o, wo, Math.fround(d * ls));
  for (let c = Math.max(-128, ls - 2); c <= Math.min(127, ls + 2); c++) {
    const err = errQ6W(x, o, wo, Math.fround(d * c));
    if (err < bestErr) {
      bestErr = err;
      best = c;
    }
  }
  return best;
}

/**
 * Values → Q6_K blocks (256 elements, 210 bytes each): 16-element sub-blocks, int8 scales. `imp`
 * as in quantizeQ4K: with it, the sub-block fits and the int8 scale codes (the nearest and its
 * neighbours) minimize the importance-weighted error.
 */
export function quantizeQ6K(x: Float32Array, dst: Uint8Array, imp?: Float32Array): void {
  const nb = x.length / 256;
  const scales = SCALES;
  const q = Q;
  for (let i = 0; i < nb; i++) {
    const o = i * 210;
    const xo = i * 256;
    const weighted = imp !== undefined && allFinite(x, xo, 256);
    if (weighted) {
      // The importance alone: the 16-element fits have few levels to spare for a magnitude term.
      for (let j = 0; j < 256; j++) WB[j] = imp[xo + j]!;
    }
    let amax = 0;
    let max = 0;
    for (let k = 0; k < 16; k++) {
      const s = weighted
        ? fitScaleSymmetricW(x, xo + 16 * k, WB, 16 * k, 16, 32)
        : fitScaleSymmetricFast(x, xo + 16 * k, 16, 32);
      scales[k] = s;
      if (Math.abs(s) > amax) {
        amax = Math.abs(s);
        max = s;
      }
    }
    // Map the largest-magnitude scale to −128 so all int8 levels are usable.
    const d = roundToF16(max / -128);
    writeU16(dst, o + 208, f32ToF16(d));
    for (let k = 0; k < 16; k++) {
      let ls = d !== 0 ? clamp(roundAway(scales[k]! / d), -128, 127) : 0;
      if (weighted && d !== 0) ls = bestQ6Code(x, xo + 16 * k, 16 * k, d, ls);
      dst[o + 192 + k] = ls & 0xff;
      const step = Math.fround(d * ls);
      const xk = xo + 16 * k;
      if (step !== 0) {
        for (let j = 0; j < 16; j++) q[16 * k + j] = clamp(roundAway(x[xk + j]! / step), -32, 31) + 32;
      } else {
        q.fill(32, 16 * k, 16 * k + 16);
      }
    }
    for (let h = 0; h < 2; h++) {
      for (let l = 0; l < 32; l++) {
        const y = 128 * h + l;
        const q1 = q[y]!;
        const q2 = q[y + 32]!;
        const q3 = q[y + 64]!;
        const q4 = q[y + 96]!;
        dst[o + 64 * h + l] = (q1 & 15) | ((q3 & 15) << 4);
        dst[o + 64 * h + l + 32] = (q2 & 15) | ((q4 & 15) << 4);
        dst[o + 128 + 32 * h + l] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6);
      }
    }
  }
}
