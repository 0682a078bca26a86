// Quantizers for IQ1_S and IQ1_M (layouts: see iq1.ts). Written for this package after the shape
// of llama.cpp's search. Every row of 8 elements is one entry q of iq1s_grid (8 values from
// {−1, 0, 1}) shifted by δ = ±1/8 and scaled: y = s·(q + δ). IQ1_S has one scale and one δ per
// group of 32; IQ1_M a scale per 16 and a δ per row. Scales are d·(2c + 1), c = 0..7.
//
//   1. Per scale group, the best code ignoring the grid is exact: for a given δ the elements coded
//      −1, 0, 1 are the lowest, middle and highest by value, so trying every pair of cut points
//      over the sorted values (and every δ choice) finds it, with its least-squares scale.
//   2. Each row then takes the grid entry nearest it (iq-lattice.ts; its δ re-chosen), and scales
//      around the fit are tried, alternating nearest entries and least-squares scale, keeping the
//      least error Σ w·(x − y)² (w the importance).
//   3. Per block, d is tried at a few values near max(s)/15, each group taking the code c (of
//      those next to its s) whose entries, re-picked at the decoded scale, give the least error.
//   4. d is scaled so that the block keeps its gain, Σ w·x·y = Σ w·x², as in iq-grid-fit.ts
//      (step 4 there: the least-squares fit shrinks an IQ1 block by about 18%).
//
// llama.cpp writes these types only from an importance, and so does quantize(). Non-finite values
// are fitted as 0; ±Inf then gets the grid value of its sign. d beyond the f16 range is clamped.
import { f16ToF32, f32ToF16, writeU16 } from "./f16.js";
import { lazyGrid } from "./iq-common.js";
import { IQ1S_DELTA, IQ1S_GRID } from "./iq-grids.js";
import { buildLattice, type Lattice, nearestEntry } from "./iq-lattice.js";

const QK = 256;
const F16_MAX = 65504;
const DELTA = IQ1S_DELTA; // = IQ1M_DELTA

const iq1sGrid = lazyGrid(IQ1S_GRID, 8, 2048);
let lattice: Lattice | undefined;
function iq1Lattice(): Lattice {
  if (!lattice) {
    const bytes = iq1sGrid();
    lattice = buildLattice(new Int8Array(bytes.buffer, bytes.byteOffset, bytes.length), 8, 2);
  }
  return lattice;
}

/**
 * IQ1_S: a scale and a δ per 32 elements; IQ1_M: a scale per 16 and a δ per row. `spread` as in
 * iq-grid-fit.ts: w = importance (IQ1_S), or importance·√(2·mean x² + x²) (IQ1_M). On the
 * built-in model, llama-quantize's IQ1_M file with minfer's IQ1_M tensors had mean KLD 0.440 with
 * the importance alone and 0.407 with the magnitude term (llama-quantize's own: 0.400); for IQ1_S
 * the importance alone measured 0.434 and importance·√(mean x² + x²) 0.586 (llama-quantize's: 0.436).
 */
interface Format {
  readonly group: number;
  readonly rowDelta: boolean;
  readonly spread?: number;
}
const IQ1S: Format = { group: 32, rowDelta: false };
const IQ1M: Format = { group: 16, rowDelta: true, spread: 2 };

const X = new Float64Array(QK); // the block, non-finite values as 0
const W = new Float64Array(QK);
const T = new Float64Array(8); // a row's target in grid units
/** Per row: grid entry and δ sign (1 or −1); per scale group: code. Read by the packers. */
const ENTRY = new Uint16Array(QK / 8);
const NEG = new Uint8Array(QK / 8);
const CODE = new Uint8Array(QK / 16);
const S = new Float64Array(QK / 16); // fitted group scales
const TRY_E = new Uint16Array(QK / 8);
const TRY_N = new Uint8Array(QK / 8);
const KEEP_E = new Uint16Array(QK / 8);
const KEEP_N = new Uint8Array(QK / 8);
const PLUS_E = new Uint16Array(QK / 8); // pickGroup's entries for +δ
const CODES = new Uint8Array(QK / 16); // the codes of the block scale being tried

/** The error of row r at scale s with entry e and δ sign neg (1: −δ). */
function rowError(lat: Lattice, r: number, s: number, e: number, neg: number): number {
  const delta = neg ? -DELTA : DELTA;
  let err = 0;
  for (let k = 0; k < 8; k++) {
    const diff = X[8 * r + k]! - s * (lat.values[8 * e + k]! + delta);
    err += W[8 * r + k]! * diff * diff;
  }
  return err;
}

/** Row r's nearest entry at scale s with δ sign neg, into TRY_E; returns its error. */
function pickRow(lat: Lattice, r: number, s: number, neg: number): number {
  const delta = neg ? -DELTA : DELTA;
  for (let k = 0; k < 8; k++) T[k] = X[8 * r + k]! / s - delta;
  const e = nearestEntry(lat, T, 0, W, 8 * r);
  TRY_E[r] = e;
  TRY_N[r] = neg;
  return rowError(lat, r, s, e, neg);
}

/**
 * Picks entries and δ for the rows of group [o, o+n) at scale s into TRY_E / TRY_N (δ per row, or
 * one for the group); returns the group's error.
 */
function pickGroup(f: Format, lat: Lattice, o: number, n: number, s: number): number {
  const r0 = o / 8;
  const rows = n / 8;
  if (f.rowDelta) {
    let total = 0;
    for (let r = r0; r < r0 + rows; r++) {
      const plus = pickRow(lat, r, s, 0);
      const e = TRY_E[r]!;
      const minus = pickRow(lat, r, s, 1);
      if (plus <= minus) {
        TRY_E[r] = e;
        TRY_N[r] = 0;
      }
      total += Math.min(plus, minus);
    }
    return total;
  }
  let plus = 0;
  for (let r = r0; r < r0 + rows; r++) plus += pickRow(lat, r, s, 0);
  PLUS_E.set(TRY_E.subarray(r0, r0 + rows), r0);
  let minus = 0;
  for (let r = r0; r < r0 + rows; r++) minus += pickRow(lat, r, s, 1);
  if (plus <= minus) {
    TRY_E.set(PLUS_E.subarray(r0, r0 + rows), r0);
    TRY_N.fill(0, r0, r0 + rows);
  }
  return Math.min(plus, minus);
}

/** The least-squares scale of group [o, o+n) for the entries and δ in TRY_E / TRY_N (0 if none). */
function lsScale(lat: Lattice, o: number, n: number): number {
  let sqx = 0;
  let sq2 = 0;
  for (let j = o; j < o + n; j++) {
    const r = j >> 3;
    const q = lat.values[8 * TRY_E[r]! + (j & 7)]! + (TRY_N[r] ? -DELTA : DELTA);
    sqx += W[j]! * q * X[j]!;
    sq2 += W[j]! * q * q;
  }
  return sqx > 0 && sq2 > 0 ? sqx / sq2 : 0;
}

const ORDER = new Uint8Array(32);
const PX = new Float64Array(4 * 33); // per row: prefix sums of w·x over the sorted elements
const PW = new Float64Array(4 * 33);

/**
 * Step 1 for group [o, o+n): the best scale ignoring the grid, over the cut points and δ choices.
 * Returns it (0 when nothing fits).
 */
function splitScale(f: Format, o: number, n: number): number {
  const rows = n / 8;
  for (let j = 0; j < n; j++) ORDER[j] = j;
  const order = ORDER.subarray(0, n).sort((a, b) => X[o + a]! - X[o + b]!);
  for (let r = 0; r < rows; r++) {
    PX[33 * r] = 0;
    PW[33 * r] = 0;
  }
  for (let k = 0; k < n; k++) {
    const j = order[k]!;
    for (let r = 0; r < rows; r++) {
      const mine = j >> 3 === r;
      PX[33 * r + k + 1] = PX[33 * r + k]! + (mine ? W[o + j]! * X[o + j]! : 0);
      PW[33 * r + k + 1] = PW[33 * r + k]! + (mine ? W[o + j]! : 0);
    }
  }
  const combos = f.rowDelta ? 1 << rows : 2;
  let best = 0;
  let bestS = 0;
  for (let i1 = 0; i1 <= n; i1++) {
    for (let i2 = i1; i2 <= n; i2++) {
      for (let c = 0; c < combos; c++) {
        let sqx = 0;
        let sq2 = 0;
        for (let r = 0; r < rows; r++) {
          const neg = f.rowDelta ? (c >> r) & 1 : c;
          const d = neg ? -DELTA : DELTA;
          const b = 33 * r;
          const xl = PX[b + i1]!;
          const xm = PX[b + i2]! - xl;
          const xh = PX[b + n]! - PX[b + i2]!;
          const wl = PW[b + i1]!;
          const wm = PW[b + i2]! - wl;
          const wh = PW[b + n]! - PW[b + i2]!;
          sqx += (d - 1) * xl + d * xm + (d + 1) * xh;
          sq2 += (d - 1) * (d - 1) * wl + d * d * wm + (d + 1) * (d + 1) * wh;
        }
        if (!(sqx > 0 && sq2 > 0)) continue;
        const score = (sqx * sqx) / sq2;
        // Ties (equal values fit exactly several ways) go to the larger scale, as in iq-grid-fit.ts.
        if (score > best * (1 + 1e-9) || (score > best * (1 - 1e-9) && sqx / sq2 > bestS)) {
          best = score;
          bestS = sqx / sq2;
        }
      }
    }
  }
  return bestS;
}

/** Steps 1 and 2 for group [o, o+n): its scale (0 for a zero group), entries in ENTRY / NEG. */
function fitGroup(f: Format, lat: Lattice, o: number, n: number): number {
  const r0 = o / 8;
  const rows = n / 8;
  let amax = 0;
  for (let j = o; j < o + n; j++) amax = Math.max(amax, Math.abs(X[j]!));
  if (!(amax > 1e-30)) return 0;
  let wsum = 0;
  for (let j = o; j < o + n; j++) wsum += W[j]!;
  if (!(wsum > 0)) W.fill(1, o, o + n); // no column of this group matters: fit it unweighted
  const s0 = splitScale(f, o, n);
  if (!(s0 > 0)) return 0;
  let bestErr = Number.POSITIVE_INFINITY;
  let bestS = 0;
  const tryScale = (s: number): boolean => {
    pickGroup(f, lat, o, n, s);
    const ls = lsScale(lat, o, n);
    if (!(ls > 0)) return false;
    let err = 0;
    for (let r = r0; r < r0 + rows; r++) err += rowError(lat, r, ls, TRY_E[r]!, TRY_N[r]!);
    // (ties to the larger scale, as above; the error of an exact fit is 0 at several scales)
    if (!(err < bestErr - 1e-12 * bestErr || (err <= bestErr && ls > bestS))) return false;
    bestErr = err;
    bestS = ls;
    ENTRY.set(TRY_E.subarray(r0, r0 + rows), r0);
    NEG.set(TRY_N.subarray(r0, r0 + rows), r0);
    return true;
  };
  for (let k = 0; k <= 12; k++) tryScale(s0 * (0.7 + 0.05 * k));
  for (let round = 0; round < 6 && bestS > 0; round++) if (!tryScale(bestS)) break;
  return bestS;
}

/** Fits block x[o..o+256): d's f16 bits; codes, entries and δ signs in CODE, ENTRY, NEG. */
function fitBlock(f: Format, x: Float32Array, o: number, imp: Float32Array): number {
  const lat = iq1Lattice();
  let sum2 = 0;
  for (let j = 0; j < QK; j++) {
    const v = x[o + j]!;
    X[j] = v - v === 0 ? v : 0;
    sum2 += X[j]! * X[j]!;
  }
  const sigma2 = ((f.spread ?? 0) * sum2) / QK;
  for (let j = 0; j < QK; j++) {
    W[j] = f.spread === undefined ? imp[o + j]! : imp[o + j]! * Math.sqrt(sigma2 + X[j]! * X[j]!);
  }
  const zero = lat.onGrid[(3 ** 8 - 1) / 2]!; // the entry of eight zeros
  ENTRY.fill(zero);
  NEG.fill(0);
  CODE.fill(0);
  const ng = QK / f.group;
  let max = 0;
  for (let g = 0; g < ng; g++) {
    S[g] = fitGroup(f, lat, g * f.group, f.group);
    max = Math.max(max, S[g]!);
  }
  if (max === 0) return 0;
  // Step 3: d and the codes, each group's entries re-picked at its decoded scale.
  let bits = 0;
  let bestErr = Number.POSITIVE_INFINITY;
  const codes = CODES.subarray(0, ng);
  for (const k of [0.98, 1, 1.02, 1.04, 1.07]) {
    const b = f32ToF16(Math.min((max * k) / 15, F16_MAX));
    const d = f16ToF32(b);
    if (d === 0) continue;
    let total = 0;
    for (let g = 0; g < ng; g++) {
      const o2 = g * f.group;
      const r0 = o2 / 8;
      const rows = f.group / 8;
      const c0 = Math.round((S[g]! / d - 1) / 2);
      let best = Number.POSITIVE_INFINITY;
      for (let c = Math.max(0, c0 - 1); c <= Math.min(7, c0 + 1); c++) {
        const err = pickGroup(f, lat, o2, f.group, d * (2 * c + 1));
        if (err < best) {
          best = err;
          codes[g] = c;
          KEEP_E.set(TRY_E.subarray(r0, r0 + rows), r0);
          KEEP_N.set(TRY_N.subarray(r0, r0 + rows), r0);
        }
      }
      total += best;
    }
    if (total < bestErr) {
      bestErr = total;
      bits = b;
      CODE.set(codes);
      ENTRY.set(KEEP_E);
      NEG.set(KEEP_N);
    }
  }
  for (let j = 0; j < QK; j++) {
    const v = x[o + j]!;
    if (v === Number.POSITIVE_INFINITY || v === Number.NEGATIVE_INFINITY) pin(lat, j, v > 0 ? 1 : -1);
  }
  return unitGain(f, lat, bits);
}

/** Step 4: d's bits rescaled so that the decoded block has Σ w·x·y = Σ w·x² (see the header). */
function unitGain(f: Format, lat: Lattice, bits: number): number {
  const d = f16ToF32(bits);
  let xy = 0;
  let xx = 0;
  for (let j = 0; j < QK; j++) {
    const r = j >> 3;
    const q = lat.values[8 * ENTRY[r]! + (j & 7)]! + (NEG[r] ? -DELTA : DELTA);
    xy += W[j]! * X[j]! * d * (2 * CODE[(j / f.group) | 0]! + 1) * q;
    xx += W[j]! * X[j]! * X[j]!;
  }
  return xy > 0 && xx > 0 ? f32ToF16(Math.min((d * xx) / xy, F16_MAX)) : bits;
}

/** Sets element j's row entry to the nearest one whose value at j is `q`. */
function pin(lat: Lattice, j: number, q: number): void {
  const r = j >> 3;
  const cur = ENTRY[r]!;
  let best = cur;
  let bestD = Number.POSITIVE_INFINITY;
  for (let e = 0; e < lat.size; e++) {
    if (lat.values[8 * e + (j & 7)] !== q) continue;
    let dist = 0;
    for (let k = 0; k < 8; k++)
      if (k !== (j & 7)) dist += (lat.values[8 * e + k]! - lat.values[8 * cur + k]!) ** 2;
    if (dist < bestD) {
      bestD = dist;
      best = e;
    }
  }
  ENTRY[r] = best;
}

/**
 * Values → IQ1_S blocks (50 bytes per 256 values). `imp`, each element's importance (indexed like
 * x), is required (quantize() refuses the type without one): the search minimizes the
 * importance-weighted error.
 */
export function quantizeIQ1_S(x: Float32Array, dst: Uint8Array, imp?: Float32Array): void {
  const w = imp ?? new Float32Array(x.length).fill(1);
  for (let i = 0; i < x.length / QK; i++) {
    const o = 50 * i;
    writeU16(dst, o, fitBlock(IQ1S, x, QK * i, w));
    for (let g = 0; g < 8; g++) {
      let qh = (CODE[g]! << 12) | (NEG[4 * g]! << 15);
      for (let l = 0; l < 4; l++) {
        const e = ENTRY[4 * g + l]!;
        dst[o + 2 + 4 * g + l] = e & 255;
        qh |= (e >> 8) << (3 * l);
      }
      writeU16(dst, o + 34 + 2 * g, qh);
    }
  }
}

/** Values → IQ1_M blocks (56 bytes per 256 values); `imp` as in quantizeIQ1_S (required). */
export function quantizeIQ1_M(x: Float32Array, dst: Uint8Array, imp?: Float32Array): void {
  const w = imp ?? new Float32Array(x.length).fill(1);
  for (let i = 0; i < x.length / QK; i++) {
    const o = 56 * i;
    const d = fitBlock(IQ1M, x, QK * i, w);
    for (let r = 0; r < 32; r++) {
      const e = ENTRY[r]!;
      dst[o + r] = e & 255;
      const nibble = ((e >> 8) & 7) | (NEG[r]! << 3);
      if (r % 2 === 0) dst[o + 32 + (r >> 1)] = nibble;
      else dst[o + 32 + (r >> 1)]! |= nibble << 4;
    }
    // Word k: the 3-bit codes of scale groups 4k..4k+3 from bit 0 up, and nibble k of d on top.
    for (let k = 0; k < 4; k++) {
      let word = ((d >> (4 * k)) & 15) << 12;
      for (let h = 0; h < 4; h++) word |= CODE[4 * k + h]! << (3 * h);
      writeU16(dst, o + 48 + 2 * k, word);
    }
  }
}
