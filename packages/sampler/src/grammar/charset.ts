import type { CodeRange } from "./ast.js";

/** The last Unicode code point. */
export const MAX_CODE_POINT = 0x10ffff;

/**
 * A set of code points as sorted, disjoint, non-adjacent inclusive ranges: `bounds[2i]` to
 * `bounds[2i + 1]`. Negated classes are turned into their complement when built.
 */
export class CharSet {
  readonly bounds: Int32Array;
  /** Membership of the 128 ASCII code points, for the common case. */
  private readonly ascii: Uint8Array;

  private constructor(bounds: Int32Array) {
    this.bounds = bounds;
    this.ascii = new Uint8Array(128);
    for (let i = 0; i < bounds.length; i += 2) {
      for (let c = bounds[i]!; c <= Math.min(bounds[i + 1]!, 127); c++) this.ascii[c] = 1;
    }
  }

  /** The set of the code points in `ranges` (or of every other code point when `negated`). */
  static of(ranges: readonly CodeRange[], negated = false): CharSet {
    const sorted = [...ranges].sort((a, b) => a.lo - b.lo);
    const merged: number[] = [];
    for (const { lo, hi } of sorted) {
      const n = merged.length;
      if (n > 0 && lo <= merged[n - 1]! + 1) merged[n - 1] = Math.max(merged[n - 1]!, hi);
      else merged.push(lo, hi);
    }
    if (!negated) return new CharSet(Int32Array.from(merged));
    const out: number[] = [];
    let next = 0;
    for (let i = 0; i < merged.length; i += 2) {
      if (merged[i]! > next) out.push(next, merged[i]! - 1);
      next = merged[i + 1]! + 1;
    }
    if (next <= MAX_CODE_POINT) out.push(next, MAX_CODE_POINT);
    return new CharSet(Int32Array.from(out));
  }

  /** Whether `c` is in the set. */
  has(c: number): boolean {
    if (c < 128) return this.ascii[c] === 1;
    const b = this.bounds;
    let lo = 0;
    let hi = (b.length >> 1) - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (c < b[2 * mid]!) hi = mid - 1;
      else if (c > b[2 * mid + 1]!) lo = mid + 1;
      else return true;
    }
    return false;
  }

  /** Whether some code point in [lo, hi] is in the set. */
  intersects(lo: number, hi: number): boolean {
    const b = this.bounds;
    for (let i = 0; i < b.length; i += 2) {
      if (b[i]! > hi) return false;
      if (b[i + 1]! >= lo) return true;
    }
    return false;
  }

  /** Whether the set is empty (a class like `[^\x00-\U0010FFFF]` never matches). */
  get empty(): boolean {
    return this.bounds.length === 0;
  }
}
