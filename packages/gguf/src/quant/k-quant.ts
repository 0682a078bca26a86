// Quantizers for Q4_K, Q5_K and Q6_K (layouts: see k-dequant.ts). These are reference-grade
// searches written for this package, not llama.cpp's (imatrix-aware) algorithms; any bytes they
// produce are valid blocks that ggml decodes with its ordinary dequantizers.
//
// Shape of every kernel: (1) per sub-block, try a handful of candidate grid scales and keep the
// (scale, min) that minimizes the squared error; (2) quantize the sub-block scales (and mins) to
// the block's integer scale format against an f16 super-block scale; (3) re-quantize every
// element against the scale it will actually be decoded with.
import { f32ToF16, roundToF16, writeU16 } from "./f16.js";

/** Nearest integer, halves away from zero. */
function roundAway(v: number): number {
  return v < 0 ? -Math.floor(-v + 0.5) : Math.floor(v + 0.5);
}

function clamp(v: number, lo: number, hi: number): number {
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

/** Packs 8 six-bit scales and mins into 12 bytes at dst[o..o+12), the inverse of scaleMinK4. */
function packScaleMinK4(sc: Uint8Array, mn: Uint8Array, dst: Uint8Array, o: number): void {
  for (let j = 0; j < 4; j++) {
    dst[o + j] = sc[j] | ((sc[j + 4] >> 4) << 6);
    dst[o + j + 4] = mn[j] | ((mn[j + 4] >> 4) << 6);
    dst[o + j + 8] = (sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4);
  }
}

/**
 * Shared body of Q4_K and Q5_K: per 32-element sub-block fit (scale, min), scales and mins to
 * 6 bits against f16 d and dmin, then q ∈ 0..nmax for each element. Writes d, dmin and the packed
 * scales at block offset `o` and returns the 256 q values in natural order.
 */
function quantizeAsymBlock(
  x: Float32Array,
  xo: number,
  nmax: number,
  dst: Uint8Array,
  o: number,
): Uint8Array {
  const scales = new Float64Array(8);
  const mins = new Float64Array(8);
  let maxScale = 0;
  let maxMin = 0;
  for (let k = 0; k < 8; k++) {
    const [s, m] = fitScaleMin(x, xo + 32 * k, 32, nmax);
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
  const ls = new Uint8Array(8);
  const lm = new Uint8Array(8);
  const q = new Uint8Array(256);
  for (let k = 0; k < 8; k++) {
    const xs = xo + 32 * k;
    const rs = d > 0 ? clamp(roundAway(scales[k] / d), 0, 63) : 0;
    const rm = dmin > 0 ? clamp(roundAway(mins[k] / dmin), 0, 63) : 0;
    let bestErr = Number.POSITIVE_INFINITY;
    for (let cs = Math.max(0, rs - 1); cs <= Math.min(63, rs + 1); cs++) {
      for (let cm = Math.max(0, rm - 1); cm <= Math.min(63, rm + 1); cm++) {
        const step = Math.fround(d * cs);
        const off = Math.fround(dmin * cm);
        let err = 0;
        for (let j = 0; j < 32; j++) {
          const v = x[xs + j];
          const l = step > 0 ? clamp(roundAway((v + off) / step), 0, nmax) : 0;
          const e = step * l - off - v;
          err += e * e;
        }
        if (err < bestErr) {
          bestErr = err;
          ls[k] = cs;
          lm[k] = cm;
        }
      }
    }
    const step = Math.fround(d * ls[k]);
    const off = Math.fround(dmin * lm[k]);
    for (let j = 0; j < 32; j++) {
      q[32 * k + j] = step > 0 ? clamp(roundAway((x[xs + j] + off) / step), 0, nmax) : 0;
    }
  }
  packScaleMinK4(ls, lm, dst, o + 4);
  return q;
}

/** Values → Q4_K blocks (256 elements, 144 bytes each). */
export function quantizeQ4K(x: Float32Array, dst: Uint8Array): void {
  const nb = x.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 144;
    const q = quantizeAsymBlock(x, i * 256, 15, dst, o);
    for (let c = 0; c < 4; c++) {
      for (let l = 0; l < 32; l++) dst[o + 16 + 32 * c + l] = q[64 * c + l] | (q[64 * c + 32 + l] << 4);
    }
  }
}

/** Values → Q5_K blocks (256 elements, 176 bytes each). */
export function quantizeQ5K(x: Float32Array, dst: Uint8Array): void {
  const nb = x.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 176;
    const q = quantizeAsymBlock(x, i * 256, 31, dst, o);
    dst.fill(0, o + 16, o + 48);
    for (let c = 0; c < 4; c++) {
      for (let l = 0; l < 32; l++) {
        const lo = q[64 * c + l];
        const hi = q[64 * c + 32 + l];
        dst[o + 48 + 32 * c + l] = (lo & 15) | ((hi & 15) << 4);
        dst[o + 16 + l] |= ((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1));
      }
    }
  }
}

/** Values → Q6_K blocks (256 elements, 210 bytes each): 16-element sub-blocks, int8 scales. */
export function quantizeQ6K(x: Float32Array, dst: Uint8Array): void {
  const nb = x.length / 256;
  const scales = new Float64Array(16);
  const q = new Uint8Array(256);
  for (let i = 0; i < nb; i++) {
    const o = i * 210;
    const xo = i * 256;
    let amax = 0;
    let max = 0;
    for (let k = 0; k < 16; k++) {
      scales[k] = fitScaleSymmetric(x, xo + 16 * k, 16, 32);
      if (Math.abs(scales[k]) > amax) {
        amax = Math.abs(scales[k]);
        max = scales[k];
      }
    }
    // Map the largest-magnitude scale to −128 so all int8 levels are usable.
    const d = roundToF16(max / -128);
    writeU16(dst, o + 208, f32ToF16(d));
    for (let k = 0; k < 16; k++) {
      const ls = d !== 0 ? clamp(roundAway(scales[k] / d), -128, 127) : 0;
      dst[o + 192 + k] = ls & 0xff;
      const step = Math.fround(d * ls);
      for (let j = 0; j < 16; j++) {
        const v = x[xo + 16 * k + j];
        q[16 * k + j] = step !== 0 ? clamp(roundAway(v / step), -32, 31) + 32 : 32;
      }
    }
    for (let h = 0; h < 2; h++) {
      for (let l = 0; l < 32; l++) {
        const y = 128 * h + l;
        const q1 = q[y];
        const q2 = q[y + 32];
        const q3 = q[y + 64];
        const q4 = q[y + 96];
        dst[o + 64 * h + l] = (q1 & 15) | ((q3 & 15) << 4);
        dst[o + 64 * h + l + 32] = (q2 & 15) | ((q4 & 15) << 4);
        dst[o + 128 + 32 * h + l] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6);
      }
    }
  }
}
