// Search structures over an i-quant grid, for the quantizers (iq2-quant.ts, iq3-quant.ts): which
// grid entry is nearest a point. A grid is a subset of a lattice — every entry's values come from
// a few levels (IQ3_XXS: 4, 12, …, 52, 62; IQ2_*: 8, 25, 43) — so a point first rounds coordinate
// by coordinate to the nearest lattice point, which is the weighted-nearest point of the whole
// lattice whatever the (per-coordinate) weights. When that lattice point is a grid entry it is the
// answer; otherwise the answer is sought among the grid entries nearest that lattice point, listed
// once per lattice point when the grid is first used (the nearest `shells` distinct distances).
//
// Everything here is derived from the grid tables of iq-grids.ts at first use.

/** A grid with its lattice and the nearest-entry lists of the lattice points off the grid. */
export interface Lattice {
  /** Values per entry (4 or 8). */
  readonly dim: number;
  /** Number of grid entries. */
  readonly size: number;
  /** Entry e's values at [e·dim, (e + 1)·dim). */
  readonly values: Float64Array;
  /** The distinct values, ascending, and the midpoints between neighbours. */
  readonly levels: Float64Array;
  readonly mids: Float64Array;
  /** Lattice point (level indices, coordinate k as digit k in base levels.length) → entry, or −1. */
  readonly onGrid: Int32Array;
  /** The candidate entries of off-grid lattice point u: list[start[u] .. start[u + 1]). */
  readonly start: Int32Array;
  readonly list: Uint16Array;
}

/**
 * Builds the lattice of `grid` (entries of `dim` bytes, as iq-common's lazyGrid unpacks them):
 * every off-grid lattice point lists the entries at its `shells` smallest distinct squared
 * distances (in values, not level indices).
 */
export function buildLattice(grid: Uint8Array | Int8Array, dim: number, shells: number): Lattice {
  const size = grid.length / dim;
  const values = Float64Array.from(grid);
  const levels = Float64Array.from(new Set(grid)).sort();
  const nl = levels.length;
  const mids = Float64Array.from({ length: nl - 1 }, (_, i) => (levels[i]! + levels[i + 1]!) / 2);
  const points = nl ** dim;
  const onGrid = new Int32Array(points).fill(-1);
  for (let e = 0; e < size; e++) {
    let u = 0;
    for (let k = dim - 1; k >= 0; k--) u = u * nl + levels.indexOf(values[e * dim + k]!);
    onGrid[u] = e;
  }
  const start = new Int32Array(points + 1);
  const chosen: number[] = [];
  const d2 = new Float64Array(size);
  const p = new Float64Array(dim);
  const low = new Float64Array(shells);
  for (let u = 0; u < points; u++) {
    start[u] = chosen.length;
    if (onGrid[u]! >= 0) continue;
    for (let k = 0, r = u; k < dim; k++, r = Math.floor(r / nl)) p[k] = levels[r % nl]!;
    // The `shells` smallest distinct distances, ascending (unused slots +Inf).
    low.fill(Number.POSITIVE_INFINITY);
    for (let e = 0; e < size; e++) {
      let s = 0;
      for (let k = 0; k < dim; k++) s += (values[e * dim + k]! - p[k]!) ** 2;
      d2[e] = s;
      if (s >= low[shells - 1]!) continue;
      let i = 0;
      while (low[i]! < s) i++;
      if (low[i] === s) continue;
      low.copyWithin(i + 1, i, shells - 1);
      low[i] = s;
    }
    let cut = 0;
    for (let i = 0; i < shells; i++) if (low[i]! < Number.POSITIVE_INFINITY) cut = low[i]!;
    for (let e = 0; e < size; e++) if (d2[e]! <= cut) chosen.push(e);
  }
  start[points] = chosen.length;
  return { dim, size, values, levels, mids, onGrid, start, list: Uint16Array.from(chosen) };
}

/**
 * The entry nearest t[to..to+dim) under weights w[wo..wo+dim): the one minimizing
 * Σ w·(t − entry)² (exactly when the rounded point is on the grid, among its listed neighbours
 * otherwise). t is in grid units; negative or huge coordinates clamp to the end levels.
 */
export function nearestEntry(lat: Lattice, t: Float64Array, to: number, w: Float64Array, wo: number): number {
  const { dim, levels, mids, onGrid } = lat;
  const nl = levels.length;
  let u = 0;
  for (let k = dim - 1; k >= 0; k--) {
    const v = t[to + k]!;
    let l = 0;
    while (l < nl - 1 && v >= mids[l]!) l++;
    u = u * nl + l;
  }
  const e = onGrid[u]!;
  if (e >= 0) return e;
  const { values, start, list } = lat;
  let best = -1;
  let bestErr = Number.POSITIVE_INFINITY;
  for (let i = start[u]!; i < start[u + 1]!; i++) {
    const c = list[i]!;
    const g = c * dim;
    let err = 0;
    for (let k = 0; k < dim; k++) {
      const diff = t[to + k]! - values[g + k]!;
      err += w[wo + k]! * diff * diff;
    }
    if (err < bestErr) {
      bestErr = err;
      best = c;
    }
  }
  return best;
}
