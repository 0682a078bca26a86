// Quantizers for Q2_K and Q3_K (layouts: see k-dequant.ts). Like k-quant.ts, these are
// reference-grade least-squares searches written for this package, not llama.cpp's algorithms;
// any bytes they produce are valid blocks that ggml decodes with its ordinary dequantizers.
//
// Both formats have 16 sub-blocks of 16 elements whose integer scales are coded against f16
// super-block scales, and those codes are coarse (4 bits in Q2_K, 6 in Q3_K), so the choice of
// the super-block scales matters as much as the sub-block fits. Each kernel:
//  (1) fits every sub-block on its own (scale and min, or a signed scale) by least squares;
//  (2) derives f16 super-block scales from the largest sub-block fits;
//  (3) with those fixed, picks each sub-block's integer codes by scoring the candidates within
//      ±RADIUS of the codes nearest its own fit (Q2_K: up to 5 × 5 scale/min pairs; Q3_K: up to
//      5 signed scales) on the sub-block's actual decode, each element rounded against the step
//      it will be decoded with;
//  (4) refits the super-block scales by least squares given all those integers, rounds them to
//      f16 and repeats (3), keeping the block with the least squared error.
import { f32ToF16, roundToF16, writeU16 } from "./f16.js";
import { allFinite, importanceWeights } from "./importance.js";
import {
  clamp,
  fitScaleMin,
  fitScaleMinW,
  fitScaleSymmetric,
  fitScaleSymmetricW,
  roundAway,
} from "./k-quant.js";

/** Rounds of (4) after the first (3); a round that does not lower the error ends the search. */
const REFITS = 2;
/** How far from the code nearest a sub-block's own fit the code search goes (each way). */
const RADIUS = 2;

const XS = new Float64Array(16); // one sub-block's values
const SC = new Uint8Array(16); // current codes: Q2_K scale (0..15) / Q3_K biased scale (0..63)
const MC = new Uint8Array(16); // current Q2_K min codes (0..15)
const BEST_SC = new Uint8Array(16);
const BEST_MC = new Uint8Array(16);
const FITS = new Float64Array(32); // per sub-block fitted scale (and min)
const Q = new Int8Array(256); // final per-element codes
// Each element's weight in the squared error: without an importance 1 (Q2_K) or x² (Q3_K), which
// leaves every sum exactly as the unweighted form computes it (1·a = a; (x·x)·e·e = x·x·e·e).
const WB = new Float64Array(256); // the super-block's
const WS = new Float64Array(16); // the sub-block's being scored
/** Whether the block being quantized has importance weights (else WB holds the defaults above). */
let weighted = false;

// ---- Q2_K --------------------------------------------------------------------------------------

/** Squared error of decoding XS[0..16) as step·q − off, q = clamp(round((v + off)/step), 0, 3). */
function errQ2(step: number, off: number, bestErr: number): number {
  const xs = XS;
  let err = 0;
  if (step > 0) {
    for (let j = 0; j < 16; j++) {
      const v = xs[j]!;
      const y = (v + off) / step;
      const l = y < 0.5 ? 0 : y >= 2.5 ? 3 : Math.floor(y + 0.5);
      const e = step * l - off - v;
      err += WS[j]! * e * e;
      if (err >= bestErr) return err;
    }
  } else {
    for (let j = 0; j < 16; j++) {
      const e = off + xs[j]!;
      err += WS[j]! * e * e;
      if (err >= bestErr) return err;
    }
  }
  return err;
}

/**
 * For f16 scales (d, dmin), the best (scale, min) code pair of every sub-block of x[xo..xo+256)
 * into SC/MC; returns the block's total squared error.
 */
function assignQ2(x: Float32Array, xo: number, d: number, dmin: number): number {
  let total = 0;
  for (let k = 0; k < 16; k++) {
    for (let j = 0; j < 16; j++) {
      XS[j] = x[xo + 16 * k + j]!;
      WS[j] = WB[16 * k + j]!;
    }
    // The nearest codes are scored first, so a tie keeps them.
    const rs = d > 0 ? clamp(roundAway(FITS[2 * k]! / d), 0, 15) : 0;
    const rm = dmin > 0 ? clamp(roundAway(FITS[2 * k + 1]! / dmin), 0, 15) : 0;
    let bestErr = errQ2(Math.fround(d * rs), Math.fround(dmin * rm), Number.POSITIVE_INFINITY);
    let bs = rs;
    let bm = rm;
    for (let sc = Math.max(0, rs - RADIUS); sc <= Math.min(15, rs + RADIUS); sc++) {
      const step = Math.fround(d * sc);
      for (let mc = Math.max(0, rm - RADIUS); mc <= Math.min(15, rm + RADIUS); mc++) {
        const err = errQ2(step, Math.fround(dmin * mc), bestErr);
        if (err < bestErr) {
          bestErr = err;
          bs = sc;
          bm = mc;
        }
      }
    }
    SC[k] = bs;
    MC[k] = bm;
    total += bestErr;
  }
  return total;
}

/** Element code of v for (step, off), as the Q2_K decode uses it. */
function codeQ2(v: number, step: number, off: number): number {
  return step > 0 ? clamp(roundAway((v + off) / step), 0, 3) : 0;
}

/**
 * Values → Q2_K blocks (256 elements, 84 bytes each). `imp`, when given, holds each element's
 * importance (indexed like x): the fits, code choices and refits then minimize the
 * importance-weighted squared error.
 */
export function quantizeQ2K(x: Float32Array, dst: Uint8Array, imp?: Float32Array): void {
  const nb = x.length / 256;
  const q = Q;
  for (let i = 0; i < nb; i++) {
    const o = i * 84;
    const xo = i * 256;
    weighted = imp !== undefined && allFinite(x, xo, 256);
    if (weighted) importanceWeights(x, imp!, xo, 256, 1, WB);
    else WB.fill(1);
    let maxScale = 0;
    let maxMin = 0;
    for (let k = 0; k < 16; k++) {
      const [s, m] = weighted
        ? fitScaleMinW(x, xo + 16 * k, WB, 16 * k, 16, 3)
        : fitScaleMin(x, xo + 16 * k, 16, 3);
      FITS[2 * k] = s;
      FITS[2 * k + 1] = m;
      if (s > maxScale) maxScale = s;
      if (m > maxMin) maxMin = m;
    }
    let d = roundToF16(maxScale / 15);
    let dmin = roundToF16(maxMin / 15);
    let bestD = d;
    let bestDmin = dmin;
    let bestErr = Number.POSITIVE_INFINITY;
    // (codes 0 when no round has a finite error — NaN/∞ input — never an earlier block's)
    BEST_SC.fill(0);
    BEST_MC.fill(0);
    for (let round = 0; round <= REFITS; round++) {
      const err = assignQ2(x, xo, d, dmin);
      if (!(err < bestErr)) break;
      bestErr = err;
      bestD = d;
      bestDmin = dmin;
      BEST_SC.set(SC);
      BEST_MC.set(MC);
      if (round === REFITS) break;
      // Least squares for (d, dmin) in x ≈ d·a − dmin·b, a = scale code·q, b = min code.
      let saa = 0;
      let sab = 0;
      let sbb = 0;
      let sax = 0;
      let sbx = 0;
      for (let k = 0; k < 16; k++) {
        const step = Math.fround(d * SC[k]!);
        const off = Math.fround(dmin * MC[k]!);
        const b = MC[k]!;
        for (let j = 0; j < 16; j++) {
          const v = x[xo + 16 * k + j]!;
          const wt = WB[16 * k + j]!;
          const a = SC[k]! * codeQ2(v, step, off);
          saa += wt * a * a;
          sab += wt * a * b;
          sbb += wt * b * b;
          sax += wt * a * v;
          sbx += wt * b * v;
        }
      }
      const det = saa * sbb - sab * sab;
      let nd = det > 0 ? (sax * sbb - sbx * sab) / det : saa > 0 ? sax / saa : 0;
      let nm = det > 0 ? (sax * sab - sbx * saa) / det : 0;
      if (nm < 0) {
        nm = 0;
        nd = saa > 0 ? sax / saa : 0;
      }
      if (nd < 0) {
        nd = 0;
        nm = sbb > 0 ? Math.max(0, -sbx / sbb) : 0;
      }
      nd = roundToF16(nd);
      nm = roundToF16(nm);
      if (nd === d && nm === dmin) break;
      d = nd;
      dmin = nm;
    }
    writeU16(dst, o + 80, f32ToF16(bestD));
    writeU16(dst, o + 82, f32ToF16(bestDmin));
    for (let k = 0; k < 16; k++) {
      dst[o + k] = BEST_SC[k]! | (BEST_MC[k]! << 4);
      const step = Math.fround(bestD * BEST_SC[k]!);
      const off = Math.fround(bestDmin * BEST_MC[k]!);
      for (let j = 0; j < 16; j++) q[16 * k + j] = codeQ2(x[xo + 16 * k + j]!, step, off);
    }
    for (let h = 0; h < 2; h++) {
      for (let l = 0; l < 32; l++) {
        const y = 128 * h + l;
        dst[o + 16 + 32 * h + l] = q[y]! | (q[y + 32]! << 2) | (q[y + 64]! << 4) | (q[y + 96]! << 6);
      }
    }
  }
}

// ---- Q3_K --------------------------------------------------------------------------------------

/**
 * Error of decoding XS[0..16) as step·q, q = clamp(round(v/step), −4, 3): each element's squared
 * error weighted by v². Unweighted least squares shrinks Q3_K blocks (decoded·x / x·x ≈ 0.98 on
 * trained weights) and that bias costs more KL divergence than its lower RMS error saves
 * (packages/gguf/QUANTIZATION.md); the weights keep the large values, and the gain, near exact.
 */
function errQ3(step: number, bestErr: number): number {
  const xs = XS;
  let err = 0;
  if (step !== 0) {
    for (let j = 0; j < 16; j++) {
      const v = xs[j]!;
      const l = clamp(roundAway(v / step), -4, 3);
      const e = step * l - v;
      err += WS[j]! * e * e;
      if (err >= bestErr) return err;
    }
  } else {
    for (let j = 0; j < 16; j++) {
      const v = xs[j]!;
      err += weighted ? WS[j]! * v * v : v * v * (v * v); // (x² weight × x², exact IEEE steps)
      if (err >= bestErr) return err;
    }
  }
  return err;
}

/** For f16 scale d, the best biased scale code (0..63) of every sub-block into SC; returns the total error. */
function assignQ3(x: Float32Array, xo: number, d: number): number {
  let total = 0;
  for (let k = 0; k < 16; k++) {
    for (let j = 0; j < 16; j++) {
      XS[j] = x[xo + 16 * k + j]!;
      WS[j] = WB[16 * k + j]!;
    }
    const rc = d !== 0 ? clamp(roundAway(FITS[k]! / d), -32, 31) + 32 : 32; // scored first: a tie keeps it
    let bestErr = errQ3(Math.fround(d * (rc - 32)), Number.POSITIVE_INFINITY);
    let bs = rc;
    for (let c = Math.max(0, rc - RADIUS); c <= Math.min(63, rc + RADIUS); c++) {
      const err = errQ3(Math.fround(d * (c - 32)), bestErr);
      if (err < bestErr) {
        bestErr = err;
        bs = c;
      }
    }
    SC[k] = bs;
    total += bestErr;
  }
  return total;
}

/** Q3_K's element weights with an importance: imp·x² ("x2") or imp·√(σ² + x²) ("sigma"). */
const Q3_WEIGHT: "x2" | "sigma" = "sigma";

/** WB ← the Q3_K element weights of x[xo..xo+256) with importance imp (see Q3_WEIGHT). */
function q3Weights(x: Float32Array, imp: Float32Array, xo: number): void {
  if (Q3_WEIGHT === "sigma") {
    importanceWeights(x, imp, xo, 256, 2, WB);
    return;
  }
  for (let j = 0; j < 256; j++) {
    const v = x[xo + j]!;
    WB[j] = imp[xo + j]! * v * v;
  }
}

/** Element code (−4..3) of v for step, as the Q3_K decode uses it. */
function codeQ3(v: number, step: number): number {
  return step !== 0 ? clamp(roundAway(v / step), -4, 3) : 0;
}

/**
 * Values → Q3_K blocks (256 elements, 110 bytes each). `imp` as in quantizeQ2K: with it, each
 * element's weight is its importance times Q3_WEIGHT's magnitude term instead of x².
 */
export function quantizeQ3K(x: Float32Array, dst: Uint8Array, imp?: Float32Array): void {
  const nb = x.length / 256;
  const q = Q;
  for (let i = 0; i < nb; i++) {
    const o = i * 110;
    const xo = i * 256;
    weighted = imp !== undefined && allFinite(x, xo, 256);
    if (weighted) q3Weights(x, imp!, xo);
    else {
      for (let j = 0; j < 256; j++) {
        const v = x[xo + j]!;
        WB[j] = v * v;
      }
    }
    let amax = 0;
    let max = 0;
    for (let k = 0; k < 16; k++) {
      const s = weighted
        ? fitScaleSymmetricW(x, xo + 16 * k, WB, 16 * k, 16, 4)
        : fitScaleSymmetric(x, xo + 16 * k, 16, 4);
      FITS[k] = s;
      if (Math.abs(s) > amax) {
        amax = Math.abs(s);
        max = s;
      }
    }
    // The largest-magnitude scale maps to code −32, the end of the signed 6-bit range.
    let d = roundToF16(max / -32);
    let bestD = d;
    let bestErr = Number.POSITIVE_INFINITY;
    BEST_SC.fill(0); // (as Q2_K's: never an earlier block's codes)
    for (let round = 0; round <= REFITS; round++) {
      const err = assignQ3(x, xo, d);
      if (!(err < bestErr)) break;
      bestErr = err;
      bestD = d;
      BEST_SC.set(SC);
      if (round === REFITS) break;
      // Least squares for d in x ≈ d·a, a = (code − 32)·q, weighted by x² as errQ3.
      let saa = 0;
      let sax = 0;
      for (let k = 0; k < 16; k++) {
        const c = SC[k]! - 32;
        const step = Math.fround(d * c);
        for (let j = 0; j < 16; j++) {
          const v = x[xo + 16 * k + j]!;
          const wt = WB[16 * k + j]!;
          const a = c * codeQ3(v, step);
          saa += wt * a * a;
          sax += wt * a * v;
        }
      }
      const nd = roundToF16(saa > 0 ? sax / saa : 0);
      if (nd === d) break;
      d = nd;
    }
    writeU16(dst, o + 108, f32ToF16(bestD));
    dst.fill(0, o, o + 32); // hmask
    dst.fill(0, o + 96, o + 108); // scales
    for (let k = 0; k < 16; k++) {
      const c = BEST_SC[k]!;
      if (k < 8) dst[o + 96 + k]! |= c & 15;
      else dst[o + 96 + k - 8]! |= (c & 15) << 4;
      dst[o + 104 + (k % 4)]! |= (c >> 4) << (2 * (k >> 2));
      const step = Math.fround(bestD * (c - 32));
      for (let j = 0; j < 16; j++) q[16 * k + j] = codeQ3(x[xo + 16 * k + j]!, step);
    }
    // Element n: low 2 bits of q + 4 in qs (Q2_K's order), bit n >> 5 of hmask[n & 31] set when q ≥ 0.
    for (let n = 0; n < 256; n++) if (q[n]! >= 0) dst[o + (n & 31)]! |= 1 << (n >> 5);
    for (let h = 0; h < 2; h++) {
      for (let l = 0; l < 32; l++) {
        const y = 128 * h + l;
        dst[o + 32 + 32 * h + l] =
          ((q[y]! + 4) & 3) |
          (((q[y + 32]! + 4) & 3) << 2) |
          (((q[y + 64]! + 4) & 3) << 4) |
          (((q[y + 96]! + 4) & 3) << 6);
      }
    }
  }
}
