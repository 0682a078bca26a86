// Quantizers for the ternary formats TQ1_0 and TQ2_0 (layouts: see ternary.ts): every element of a
// 256-element block becomes −d, 0 or +d. Written for this package; llama.cpp's reference takes
// d = max|x| and rounds x/d, which is exact for ternary weights (BitNet b1.58) and loses most of
// the values of any other tensor. This search keeps the first property and fixes the second.
//
// For a given d the best code of x is −1, 0 or +1 by |x| against d/2, so the nonzero elements are
// always the k largest in magnitude, for some k. For the set of the k largest, the d that minimizes
// Σ w·(x − d·t)² is Σ w|x| / Σ w over the set, with error Σ w·x² − (Σ w|x|)²/Σ w: one pass over
// the elements sorted by |x| scores every k, and the best k gives d. (Ternary data — every value
// −a, 0 or a — gives back d = a and no error.) d is then rounded to f16 and every element re-coded
// against the value it will be decoded with. `w` is the column importance when one is given, 1
// otherwise.
//
// Non-finite values take no part in the fit; ±Inf then gets ±1 and NaN 0. A scale beyond the f16
// range is clamped to 65504, so huge inputs saturate instead of decoding to ±Inf.
import { f16ToF32, f32ToF16, writeU16 } from "./f16.js";

const QK = 256;
const F16_MAX = 65504;

const MAG = new Float64Array(QK); // |x| of the block, non-finite values as 0
const W = new Float64Array(QK); // the elements' weights
const ORDER = new Uint16Array(QK); // element indices by decreasing |x|
const CODE = new Uint8Array(QK); // digit t + 1 ∈ {0, 1, 2} of each element

/**
 * The f16 bits of the best d for x[o..o+256) with weights `imp` (indexed like x) or 1 (see the
 * header); 0 for a block with no nonzero finite value.
 */
function fitScale(x: Float32Array, o: number, imp: Float32Array | undefined): number {
  let weighted = imp !== undefined;
  if (imp) {
    let sw = 0;
    for (let j = 0; j < QK; j++) sw += imp[o + j]!;
    if (!(sw > 0)) weighted = false; // no column of this block matters: the plain fit
  }
  for (let j = 0; j < QK; j++) {
    const v = x[o + j]!;
    MAG[j] = v - v === 0 ? Math.abs(v) : 0;
    W[j] = weighted ? imp![o + j]! : 1;
    ORDER[j] = j;
  }
  ORDER.sort((a, b) => MAG[b]! - MAG[a]!);
  let sx = 0;
  let sw = 0;
  let bestScore = 0;
  let bestD = 0;
  for (let k = 0; k < QK; k++) {
    const j = ORDER[k]!;
    if (MAG[j] === 0) break;
    sx += W[j]! * MAG[j]!;
    sw += W[j]!;
    if (sw > 0 && sx * sx > bestScore * sw) {
      bestScore = (sx * sx) / sw;
      bestD = sx / sw;
    }
  }
  if (bestD === 0) {
    // Every nonzero element has weight 0: their size still sets a scale that codes them all.
    bestD = MAG[ORDER[0]!]!;
  }
  return f32ToF16(Math.min(bestD, F16_MAX));
}

/** Codes x[o..o+256) against the decoded scale d into CODE (digits 0, 1, 2 for −1, 0, +1). */
function codeBlock(x: Float32Array, o: number, d: number): void {
  const half = d / 2;
  for (let j = 0; j < QK; j++) {
    const v = x[o + j]!;
    // d = 0 codes everything 0; NaN fails both comparisons.
    CODE[j] = d > 0 && v > half ? 2 : d > 0 && v < -half ? 0 : 1;
  }
}

/** Values → TQ2_0 blocks (66 bytes per 256 values); `imp` as in the header. */
export function quantizeTQ2_0(x: Float32Array, dst: Uint8Array, imp?: Float32Array): void {
  const nb = x.length / QK;
  for (let i = 0; i < nb; i++) {
    const o = 66 * i;
    const bits = fitScale(x, QK * i, imp);
    codeBlock(x, QK * i, f16ToF32(bits));
    // Byte 32h + m holds, from its low bits up, elements 128h + 32s + m for s = 0..3.
    for (let h = 0; h < 2; h++) {
      for (let m = 0; m < 32; m++) {
        const e = 128 * h + m;
        dst[o + 32 * h + m] = CODE[e]! | (CODE[e + 32]! << 2) | (CODE[e + 64]! << 4) | (CODE[e + 96]! << 6);
      }
    }
    writeU16(dst, o + 64, bits);
  }
}

/**
 * One TQ1_0 byte: the base-3 number of `n` digits (elements e, e + step, …; the first most
 * significant), padded with zero digits to five, stored as ⌈v·256/243⌉.
 */
function packTrits(e: number, step: number, n: number): number {
  let v = 0;
  for (let k = 0; k < 5; k++) v = 3 * v + (k < n ? CODE[e + k * step]! : 0);
  return Math.ceil((v * 256) / 243);
}

/** Values → TQ1_0 blocks (54 bytes per 256 values); `imp` as in the header. */
export function quantizeTQ1_0(x: Float32Array, dst: Uint8Array, imp?: Float32Array): void {
  const nb = x.length / QK;
  for (let i = 0; i < nb; i++) {
    const o = 54 * i;
    const bits = fitScale(x, QK * i, imp);
    codeBlock(x, QK * i, f16ToF32(bits));
    for (let m = 0; m < 32; m++) dst[o + m] = packTrits(m, 32, 5); // elements 0..159
    for (let m = 0; m < 16; m++) dst[o + 32 + m] = packTrits(160 + m, 16, 5); // 160..239
    for (let m = 0; m < 4; m++) dst[o + 48 + m] = packTrits(240 + m, 4, 4); // 240..255
    writeU16(dst, o + 52, bits);
  }
}
