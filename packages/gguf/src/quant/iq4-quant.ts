// Quantizers for IQ4_NL and IQ4_XS (layouts: see iq4.ts). A search written for this package;
// any bytes it produces are valid blocks that ggml decodes with its ordinary dequantizers.
//
// Shape of both kernels: (1) per group of 32 values, try scales that put the abs-max element on
// or near an end of the level table, give every element its nearest level, and keep the scale
// with the least weighted squared error after a least-squares refit; then alternate "nearest
// levels for this scale" and "least-squares scale for these levels" while the error drops.
// (2) IQ4_XS only: quantize the eight group scales to 6-bit integers against an f16 super-block
// scale (a few candidates). (3) re-pick every element's level against the scale it will
// actually be decoded with.
//
// Two regimes, chosen by measured KL divergence (docs/FIDELITY.md, "The IQ4_NL / IQ4_XS search
// without an importance matrix"):
// - With an importance matrix, the error is weighted by the columns' importance, both table ends
//   (−127 and +113) are tried, and each IQ4_XS group also tries the 6-bit integers next to its
//   nearest: the weighted error is a good proxy of the model's loss, so a wider search pays.
// - Without one, the weights are a heuristic (σ² + x², σ² twice the block's mean square), and a
//   wider search fits that proxy at the model's expense: the abs-max element goes to the −127 end
//   only (the orientation llama.cpp's search uses too; it lowered the KLD under every weighting
//   measured) and each IQ4_XS group takes its nearest integer. On a 12.6M-parameter trained checkpoint the plain squared error over both
//   ends gave 1.15× llama-quantize's KLD; this regime gives 1.02× (IQ4_NL) and 1.03× (IQ4_XS).
//
// Non-finite values take no part in the scale search; ±Inf then gets the level of largest
// magnitude on its side and NaN the level nearest zero. A scale beyond the f16 range is clamped
// to ±65504, so huge inputs saturate instead of decoding to ±Inf.
import { f16ToF32, f32ToF16, writeU16 } from "./f16.js";
import { KVALUES_IQ4NL } from "./iq-grids.js";

/** The 16 levels, as doubles. */
const LEVEL = Float64Array.from(KVALUES_IQ4NL);
/** MID[i]: the midpoint between LEVEL[i] and LEVEL[i + 1]. */
const MID = Float64Array.from({ length: 15 }, (_, i) => (LEVEL[i]! + LEVEL[i + 1]!) / 2);
/** The code whose level is nearest zero (LEVEL[8] = 1); what elements of a zero-scale group get. */
const ZERO_CODE = 8;
/** Candidate inverse scales per table end: the abs-max element goes to end + k, |k| ≤ this. */
const NTRY = 8;
/** Largest finite f16. */
const F16_MAX = 65504;

/** The code of the level nearest t (ties go to the larger level); ±Inf → an end, NaN → 0. */
function nearest(t: number): number {
  // Binary search for the number of midpoints ≤ t (15 midpoints: 4 comparisons).
  let lo = 0;
  let hi = 15;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (t >= MID[m]!) lo = m + 1;
    else hi = m;
  }
  return lo;
}

/** f16 bits of `d`, clamped to the finite range. */
function scaleBits(d: number): number {
  return f32ToF16(Math.min(Math.max(d, -F16_MAX), F16_MAX));
}

const XS = new Float64Array(32); // the group's values, non-finite ones replaced by 0
/**
 * Element weights of the group being fitted (the columns' importance, or the heuristic σ² + x²),
 * or undefined for the plain squared error (a block with a non-finite value). Set by the kernels
 * around each fit and error sum.
 */
let W: Float64Array | undefined;
/** Whether W is an importance matrix's (the wide search) or the heuristic (see the header). */
let IMPORTANCE = false;
const WBLOCK = new Float64Array(256);
/** Element offset of the current group within WBLOCK. */
let WO = 0;

/**
 * Sets W for the super-block x[o..o+n) from importance imp (indexed like x), or from the values
 * (σ² + x², non-finite values as 0) when there is none. With an importance matrix, a block
 * holding a non-finite value gets the plain squared error.
 */
function setWeights(x: Float32Array, imp: Float32Array | undefined, o: number, n: number): void {
  W = undefined;
  WO = 0;
  IMPORTANCE = imp !== undefined;
  if (imp === undefined) {
    // On the 12.6M checkpoint (IQ4_NL / IQ4_XS KLD over llama-quantize's, −127 end only): σ² + x²
    // 1.02 / 1.03, x² (llama.cpp's weights without an imatrix) 1.05 / 1.07, none 1.18 / 1.15.
    let s2 = 0;
    for (let j = 0; j < n; j++) {
      const v = x[o + j]!;
      WBLOCK[j] = v - v === 0 ? v * v : 0;
      s2 += WBLOCK[j]!;
    }
    s2 *= 2 / n;
    for (let j = 0; j < n; j++) WBLOCK[j] += s2;
    W = WBLOCK;
    return;
  }
  for (let j = 0; j < n; j++) if (x[o + j]! - x[o + j]! !== 0) return;
  // The importance alone: on minfer-default-7m, IQ4_XS with imp·√(σ² + x²) (llama.cpp's choice)
  // measured KLD 0.01444, with imp·x² 0.01628, with imp alone 0.01304 (llama-quantize: 0.01356).
  let sw = 0;
  for (let j = 0; j < n; j++) {
    WBLOCK[j] = imp[o + j]!;
    sw += WBLOCK[j]!;
  }
  if (sw > 0) W = WBLOCK;
}

/**
 * Fits x[o..o+32) ≈ d·LEVEL[q] with q the nearest level to x/d (see the header). Returns d
 * (signed: negative puts positive values on the −127 side of the table), 0 for a zero group.
 */
export function fitIQ4Scale(x: Float32Array, o: number): number {
  const xs = XS;
  let amax = 0;
  let max = 0;
  for (let j = 0; j < 32; j++) {
    let v = x[o + j]!;
    if (v - v !== 0) v = 0; // ±Inf or NaN
    xs[j] = v;
    const a = v < 0 ? -v : v;
    if (a > amax) {
      amax = a;
      max = v;
    }
  }
  if (amax === 0) return 0;
  // Σx² − (Σq·x)²/Σq² is the error of the least-squares d = Σq·x/Σq²: maximize (Σq·x)²/Σq².
  let bestD = 0;
  let bestScore = 0;
  let w = W;
  const wo = WO;
  if (w) {
    let sw = 0;
    for (let j = 0; j < 32; j++) sw += w[wo + j]!;
    if (!(sw > 0)) w = undefined; // no column of this group matters: the plain fit
  }
  const score = (id: number): void => {
    let sqx = 0;
    let sq2 = 0;
    if (w) {
      for (let j = 0; j < 32; j++) {
        const v = xs[j]!;
        const q = LEVEL[nearest(v * id)]!;
        const wq = w[wo + j]! * q;
        sqx += wq * v;
        sq2 += wq * q;
      }
    } else {
      for (let j = 0; j < 32; j++) {
        const v = xs[j]!;
        const q = LEVEL[nearest(v * id)]!;
        sqx += q * v;
        sq2 += q * q;
      }
    }
    if (!(sq2 > 0)) return;
    if (sqx * sqx > bestScore * sq2) {
      bestScore = (sqx * sqx) / sq2;
      bestD = sqx / sq2;
    }
  };
  for (let k = -NTRY; k <= NTRY; k++) {
    score((LEVEL[0]! + k) / max);
    if (IMPORTANCE) score((LEVEL[15]! + k) / max);
  }
  // Alternate nearest levels and least-squares scale; each round can only lower the error.
  for (let round = 0; round < 8 && bestD !== 0; round++) {
    const before = bestScore;
    score(1 / bestD);
    if (!(bestScore > before)) break;
  }
  return bestD;
}

/**
 * Writes the codes of x[o..o+32) decoded with scale `d` as 16 bytes at dst[q..q+16): element j in
 * the low nibble of byte j, element j + 16 in its high nibble.
 */
function writeCodes(x: Float32Array, o: number, d: number, dst: Uint8Array, q: number): void {
  for (let j = 0; j < 16; j++) dst[q + j] = codeOf(x[o + j]!, d) | (codeOf(x[o + j + 16]!, d) << 4);
}

/** The code of the level nearest v when decoded with scale d. */
function codeOf(v: number, d: number): number {
  if (d === 0 || Number.isNaN(v)) return ZERO_CODE;
  return nearest(v / d);
}

/**
 * Squared error of x[o..o+32) decoded with scale d after nearest-level coding, non-finite values
 * counted as 0 (as in the fit); returns once it reaches `bound`.
 */
function groupError(x: Float32Array, o: number, d: number, bound: number): number {
  let err = 0;
  for (let j = 0; j < 32; j++) {
    let v = x[o + j]!;
    if (v - v !== 0) v = 0;
    const e = v - d * LEVEL[codeOf(v, d)]!;
    err += W ? W[WO + j]! * e * e : e * e;
    if (err >= bound) return err;
  }
  return err;
}

/**
 * Values → IQ4_NL blocks (18 bytes per 32 values). `imp`, when given, holds each element's
 * importance (indexed like x) and the scale search minimizes the importance-weighted error.
 */
export function quantizeIQ4NL(x: Float32Array, dst: Uint8Array, imp?: Float32Array): void {
  const nb = x.length / 32;
  for (let i = 0; i < nb; i++) {
    const o = 18 * i;
    setWeights(x, imp, 32 * i, 32);
    let bits = scaleBits(fitIQ4Scale(x, 32 * i));
    if ((bits & 0x7fff) === 0) bits = 0; // no −0 scale
    writeU16(dst, o, bits);
    writeCodes(x, 32 * i, f16ToF32(bits), dst, o + 2);
  }
  W = undefined;
  IMPORTANCE = false;
}

const SCALE = new Float64Array(8); // IQ4_XS: the eight fitted group scales
const L = new Int8Array(8); // IQ4_XS: the chosen 6-bit scales (−32..31)
const BEST_L = new Int8Array(8);

/**
 * Chooses the 6-bit scales of one IQ4_XS block against super-block scale `d` (already an f16
 * value) into L: each group's nearest integer, or with an importance matrix the best of it and
 * its neighbours. Returns the total weighted squared error.
 */
function chooseScales(x: Float32Array, o: number, d: number): number {
  let total = 0;
  for (let ib = 0; ib < 8; ib++) {
    const g = o + 32 * ib;
    WO = 32 * ib;
    const l0 = Math.min(Math.max(Math.round(SCALE[ib]! / d), -32), 31);
    let best = Number.POSITIVE_INFINITY;
    let bestL = 0;
    const r = IMPORTANCE ? 1 : 0;
    for (let l = l0 - r; l <= l0 + r; l++) {
      if (l < -32 || l > 31) continue;
      const err = groupError(x, g, d * l, best);
      if (err < best) {
        best = err;
        bestL = l;
      }
    }
    L[ib] = bestL;
    total += best;
  }
  return total;
}

/** Values → IQ4_XS blocks (136 bytes per 256 values); `imp` as in quantizeIQ4NL. */
export function quantizeIQ4XS(x: Float32Array, dst: Uint8Array, imp?: Float32Array): void {
  const nb = x.length / 256;
  for (let i = 0; i < nb; i++) {
    const xo = 256 * i;
    const o = 136 * i;
    setWeights(x, imp, xo, 256);
    let maxScale = 0;
    for (let ib = 0; ib < 8; ib++) {
      WO = 32 * ib;
      const s = fitIQ4Scale(x, xo + 32 * ib);
      SCALE[ib] = s;
      if (Math.abs(s) > Math.abs(maxScale)) maxScale = s;
    }
    // The largest group scale goes to −32 (the one 6-bit value of magnitude 32), or a little
    // inside it: candidates d = −maxScale/(32 − c/2), each group's integer chosen by error.
    let bits = 0;
    BEST_L.fill(0);
    if (maxScale !== 0) {
      let bestErr = Number.POSITIVE_INFINITY;
      for (let c = 0; c < 4; c++) {
        const b = scaleBits(-maxScale / (32 - c / 2));
        const d = f16ToF32(b);
        if (d === 0) continue;
        const err = chooseScales(x, xo, d);
        if (err < bestErr) {
          bestErr = err;
          bits = b;
          BEST_L.set(L);
        }
      }
    }
    const d = f16ToF32(bits);
    writeU16(dst, o, bits);
    let scalesH = 0;
    for (let ib = 0; ib < 8; ib++) {
      const l = BEST_L[ib]!;
      const biased = l + 32;
      if (ib % 2 === 0) dst[o + 4 + (ib >> 1)] = biased & 15;
      else dst[o + 4 + (ib >> 1)]! |= (biased & 15) << 4;
      scalesH |= (biased >> 4) << (2 * ib);
      writeCodes(x, xo + 32 * ib, d * l, dst, o + 8 + 16 * ib);
    }
    writeU16(dst, o + 2, scalesH);
  }
  W = undefined;
  IMPORTANCE = false;
}
