// The search shared by the grid i-quant quantizers (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S;
// packing in iq2-quant.ts and iq3-quant.ts). Written for this package after the shape of
// llama.cpp's: a block of 256 is cut into groups of 16 or 32 elements with a scale each, groups
// into rows of grid entries (4 or 8 values from a few positive levels) with separate signs; the
// group scales are stored as odd multiples (2c + 1, c = 0..15) of one f16 block scale.
//
//   1. Signs come off first: each element's magnitude is fitted. Where a row's signs must have even
//      parity (IQ2_XXS, IQ2_XS, IQ3_XXS store 7 of 8 sign bits), the element of least w·|x| gets
//      the wrong sign and is fitted as −|x| (its best level is then the smallest).
//   2. Per group, a scan of scales s (the group's largest magnitude at grid levels 0.7·top to
//      1.25·top, ~30 steps, and at each lower level): every row takes the grid entry nearest x/s
//      (iq-lattice.ts), and the least-squares s for those entries scores the scan point by
//      Σ w·(x − s·g)²; the best is then refined, alternating nearest entries and least-squares
//      scale, while the error drops.
//   3. Per block, the f16 scale d is tried at a few values near max(s)/31, each group taking the
//      code c (of those next to its s) whose entries, re-picked at the decoded scale, give the
//      least error; the d of least total error is kept with its codes and entries.
//   4. d is then scaled so the block keeps its gain: Σ w·x·y = Σ w·x². The least-squares fit has
//      Σ w·x·y = Σ w·y² instead: it shrinks the decoded weights by the share of their energy the
//      grid cannot represent (about 2% at IQ3 and 8% at IQ2 on the built-in model), which
//      costs a network more than the larger error of the unshrunk weights. On the built-in model,
//      llama-quantize's IQ2_M file with minfer's IQ2_S tensors had mean KLD 0.130 without this
//      step and 0.097 with it (llama-quantize's own: 0.104); its IQ2_S mix with minfer's IQ2_XS
//      0.215 and 0.140 (0.138). (llama.cpp's files keep a gain of 0.97 to 1.02: its least-squares
//      scales get fudge factors, ×1.0125 for IQ3_XXS, ×1.033 for IQ3_S.)
//
// The error weighed is Σ w·(x − y)², w from the importance given (an importance matrix's column;
// see GridFormat.spread), or 1.
// Non-finite values are fitted as 0; ±Inf then gets the largest level with its sign, NaN the
// smallest. A block scale beyond the f16 range is clamped to 65504.
import { f16ToF32, f32ToF16 } from "./f16.js";
import { type Lattice, nearestEntry } from "./iq-lattice.js";

const QK = 256;
const F16_MAX = 65504;
const SCAN = 31;

/** How a type stores what this search finds. */
export interface GridFormat {
  readonly lattice: Lattice;
  /** Elements per group scale: 16 or 32. */
  readonly group: number;
  /** Signs with even parity per row of 8. */
  readonly paritySigns: boolean;
  /** A group decodes with scale d·mult·(2c + 1). */
  readonly mult: number;
  /**
   * With an importance: absent, w = importance; else w = importance·√(spread·mean x² + x²) over
   * the block (what measured the lower KL divergence, see iq2-quant.ts).
   */
  readonly spread?: number;
}

/** What the search leaves for the packer: read after {@link fitBlock}. */
export const FIT = {
  /** f16 bits of the block scale. */
  d: 0,
  /** Each group's scale code c (0..15). */
  code: new Uint8Array(QK / 16),
  /** Each row's grid entry (a row is lattice.dim values; 256 / dim rows). */
  entry: new Uint16Array(QK / 4),
  /** Bit j of sign[r]: element 8r + j is negated (even parity per byte where asked for). */
  sign: new Uint8Array(QK / 8),
};

const A = new Float64Array(QK); // magnitudes to fit (the parity-flipped element negative)
const W = new Float64Array(QK); // weights
const T = new Float64Array(QK); // A / scale, the target in grid units
const S = new Float64Array(QK / 16); // fitted group scales
const PICK = new Uint16Array(QK / 4); // the entries found by fitGroup for its group
const TRY = new Uint16Array(QK / 4); // entries of the scale being tried

/** Picks every row's nearest entry for scale s into `into`; returns [Σ w·A·g, Σ w·g²] via SUMS. */
const SUMS = new Float64Array(2);
function pickAll(lat: Lattice, o: number, n: number, s: number, into: Uint16Array): void {
  const { dim, values } = lat;
  const inv = 1 / s;
  for (let j = o; j < o + n; j++) T[j] = A[j]! * inv;
  let sqx = 0;
  let sq2 = 0;
  for (let r = o; r < o + n; r += dim) {
    const e = nearestEntry(lat, T, r, W, r);
    into[r / dim] = e;
    for (let k = 0; k < dim; k++) {
      const g = values[e * dim + k]!;
      const wg = W[r + k]! * g;
      sqx += wg * A[r + k]!;
      sq2 += wg * g;
    }
  }
  SUMS[0] = sqx;
  SUMS[1] = sq2;
}

/** The weighted error of group [o, o+n) decoded at scale s with entries `from`. */
function groupError(lat: Lattice, o: number, n: number, s: number, from: Uint16Array): number {
  const { dim, values } = lat;
  let err = 0;
  for (let j = o; j < o + n; j++) {
    const diff = A[j]! - s * values[from[(j / dim) | 0]! * dim + (j % dim)]!;
    err += W[j]! * diff * diff;
  }
  return err;
}

/** Fits group [o, o+n): returns its least-squares scale (0 for a zero group), entries in PICK. */
function fitGroup(lat: Lattice, o: number, n: number): number {
  const { dim, levels } = lat;
  const top = levels[levels.length - 1]!;
  let amax = 0;
  for (let j = o; j < o + n; j++) if (A[j]! > amax) amax = A[j]!;
  const first = o / dim;
  const rows = n / dim;
  if (!(amax > 1e-30)) {
    PICK.fill(0, first, first + rows);
    return 0;
  }
  // Maximize (Σ w·A·g)² / Σ w·g², the error's drop for the least-squares scale.
  let best = 0;
  let bestS = 0;
  const tryScale = (s: number): boolean => {
    pickAll(lat, o, n, s, TRY);
    const [sqx, sq2] = SUMS;
    if (!(sqx > 0 && sq2 > 0)) return false;
    const score = (sqx * sqx) / sq2;
    // Ties (equal values fit exactly on several levels) go to the larger scale, the lower levels:
    // every group of a constant block then fits alike, and one block scale codes them all.
    if (score < best * (1 + 1e-9) && !(score > best * (1 - 1e-9) && sqx / sq2 > bestS)) return false;
    best = score;
    bestS = sqx / sq2;
    PICK.set(TRY.subarray(first, first + rows), first);
    return true;
  };
  const scan = (): void => {
    for (let k = 0; k < SCAN; k++) tryScale(amax / (top * (0.7 + (0.55 * k) / (SCAN - 1))));
    // The largest magnitude on each level exactly: a group of equal values, or a spike, may be
    // best on a low level (some grids have no entry of equal high values).
    for (let l = 0; l < levels.length - 1; l++) tryScale(amax / levels[l]!);
  };
  scan();
  if (bestS === 0) {
    W.fill(1, o, o + n); // all weights zero: fit the magnitudes unweighted
    scan();
  }
  for (let round = 0; round < 6 && bestS > 0; round++) if (!tryScale(bestS)) break;
  return bestS;
}

/** Fills A, W and FIT.sign for block x[o..o+256), weights from imp (or 1). */
function prepare(f: GridFormat, x: Float32Array, o: number, imp: Float32Array | undefined): void {
  let weighted = imp !== undefined;
  if (imp) {
    for (let j = 0; j < QK; j++)
      if (!(imp[o + j]! >= 0 && imp[o + j]! < Number.POSITIVE_INFINITY)) weighted = false;
  }
  let sum2 = 0;
  for (let j = 0; j < QK; j++) {
    const v = x[o + j]!;
    A[j] = v - v === 0 ? Math.abs(v) : 0;
    sum2 += A[j]! * A[j]!;
  }
  const sigma2 = ((f.spread ?? 0) * sum2) / QK;
  for (let j = 0; j < QK; j++) {
    if (!weighted) W[j] = 1;
    else if (f.spread === undefined) W[j] = imp![o + j]!;
    else W[j] = imp![o + j]! * Math.sqrt(sigma2 + A[j]! * A[j]!);
  }
  for (let r = 0; r < QK / 8; r++) {
    let s = 0;
    for (let k = 0; k < 8; k++) if (x[o + 8 * r + k]! < 0) s |= 1 << k;
    if (f.paritySigns && popcount8(s) % 2 === 1) {
      let jmin = 0;
      let min = Number.POSITIVE_INFINITY;
      for (let k = 0; k < 8; k++) {
        const v = x[o + 8 * r + k]!;
        // (never ±Inf, which must keep its sign)
        const c = v - v === 0 || Number.isNaN(v) ? W[8 * r + k]! * A[8 * r + k]! : Number.POSITIVE_INFINITY;
        if (c < min) {
          min = c;
          jmin = k;
        }
      }
      A[8 * r + jmin] = -A[8 * r + jmin]!;
      s ^= 1 << jmin;
    }
    FIT.sign[r] = s;
  }
}

function popcount8(v: number): number {
  let n = 0;
  for (let b = v; b; b &= b - 1) n++;
  return n;
}

const CODE = new Uint8Array(QK / 16);
const ENTRY = new Uint16Array(QK / 4);

/**
 * Chooses each group's code for block scale d (an f16 value) into CODE and its entries, re-picked
 * at the decoded scale, into ENTRY; returns the total error.
 */
function chooseCodes(f: GridFormat, d: number): number {
  const { group, mult, lattice: lat } = f;
  let total = 0;
  for (let g = 0; g < QK / group; g++) {
    const o = g * group;
    const c0 = Math.round((S[g]! / (d * mult) - 1) / 2);
    let best = Number.POSITIVE_INFINITY;
    for (let c = Math.max(0, c0 - 1); c <= Math.min(15, c0 + 1); c++) {
      const s = d * mult * (2 * c + 1);
      pickAll(lat, o, group, s, TRY);
      const err = groupError(lat, o, group, s, TRY);
      if (err < best) {
        best = err;
        CODE[g] = c;
        ENTRY.set(TRY.subarray(o / lat.dim, (o + group) / lat.dim), o / lat.dim);
      }
    }
    total += best;
  }
  return total;
}

/** Fits block x[o..o+256) (importance `imp`, indexed like x, or none): the result is in {@link FIT}. */
export function fitBlock(f: GridFormat, x: Float32Array, o: number, imp: Float32Array | undefined): void {
  prepare(f, x, o, imp);
  const { group, mult, lattice: lat } = f;
  let max = 0;
  for (let g = 0; g < QK / group; g++) {
    S[g] = fitGroup(lat, g * group, group);
    if (S[g]! > max) max = S[g]!;
  }
  FIT.d = 0;
  FIT.code.fill(0);
  FIT.entry.fill(0);
  if (max === 0) return;
  let bestErr = Number.POSITIVE_INFINITY;
  for (const k of [0.98, 1, 1.02, 1.04, 1.07]) {
    const bits = f32ToF16(Math.min((max * k) / (31 * mult), F16_MAX));
    const d = f16ToF32(bits);
    if (d === 0) continue;
    const err = chooseCodes(f, d);
    if (err < bestErr) {
      bestErr = err;
      FIT.d = bits;
      FIT.code.set(CODE);
      FIT.entry.set(ENTRY);
    }
  }
  unitGain(f);
  // Unfittable rows (±Inf): their largest level, by sign (A holds 0 for them, so redo the entry).
  for (let j = 0; j < QK; j++) {
    const v = x[o + j]!;
    if (v === Number.POSITIVE_INFINITY || v === Number.NEGATIVE_INFINITY) pinToTop(lat, j);
  }
}

/**
 * Step 4: rescales FIT.d so that the decoded block y has Σ w·x·y = Σ w·x² (see the header).
 */
function unitGain(f: GridFormat): void {
  const { group, mult, lattice: lat } = f;
  const { dim, values } = lat;
  const d = f16ToF32(FIT.d);
  let xy = 0;
  let xx = 0;
  for (let j = 0; j < QK; j++) {
    const g = values[FIT.entry[(j / dim) | 0]! * dim + (j % dim)]!;
    xy += W[j]! * A[j]! * d * mult * (2 * FIT.code[(j / group) | 0]! + 1) * g;
    xx += W[j]! * A[j]! * A[j]!;
  }
  if (xy > 0 && xx > 0) FIT.d = f32ToF16(Math.min((d * xx) / xy, F16_MAX));
}

/** Sets element j's row entry to one whose value at j is the largest level, others kept close. */
function pinToTop(lat: Lattice, j: number): void {
  const { dim, levels, values, size } = lat;
  const r = (j / dim) | 0;
  const top = levels[levels.length - 1]!;
  const cur = FIT.entry[r]!;
  let best = -1;
  let bestD = Number.POSITIVE_INFINITY;
  for (let e = 0; e < size; e++) {
    if (values[e * dim + (j % dim)] !== top) continue;
    let dist = 0;
    for (let k = 0; k < dim; k++)
      if (k !== j % dim) dist += (values[e * dim + k]! - values[cur * dim + k]!) ** 2;
    if (dist < bestD) {
      bestD = dist;
      best = e;
    }
  }
  if (best >= 0) FIT.entry[r] = best;
}
