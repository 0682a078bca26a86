/**
 * GBNF for the numbers between two bounds, as `minimum` / `maximum` / `exclusiveMinimum` /
 * `exclusiveMaximum` on `type: "number"` ask. What is written is a subset of those numbers: plain decimals
 * (no exponent) of at most MAX_DIGITS digits before the point and MAX_DIGITS after it, `-` only before a
 * non-zero value. Every such decimal in range is accepted, compared exactly as a decimal with the bound as
 * JavaScript writes it (its shortest round-trip form); a text then parses to a double inside the bound,
 * since rounding to the nearest double keeps order. An exclusive bound is taken as the next double
 * beyond it, inclusive.
 */

import { alt, group, repeat, seq } from "./gbnf.js";
import { MAX_MAGNITUDE, naturals, signed } from "./integer-range.js";
import { MAX_DIGITS } from "./limits.js";

/** One unit of the last fraction digit is 1; a value is held as value · 10^MAX_DIGITS. */
const SCALE = 10n ** BigInt(MAX_DIGITS);
/** The largest value written, scaled: MAX_DIGITS nines, a point, MAX_DIGITS nines. */
export const MAX_SCALED = (MAX_MAGNITUDE + 1n) * SCALE - 1n;

/** Beyond every written number (whose integral part has at most MAX_DIGITS digits), with room to spare. */
const FAR = 10 ** (MAX_DIGITS + 1);

/** A bound: its value and whether it is exclusive. */
export interface DecimalBound {
  readonly value: number;
  readonly exclusive: boolean;
}

/**
 * The scaled range [lo, hi] of written numbers within the bounds (undefined: unbounded on that side), or
 * undefined when no number of at most MAX_DIGITS digits on either side of the point lies in it.
 */
export function scaledRange(
  min: DecimalBound | undefined,
  max: DecimalBound | undefined,
): [bigint, bigint] | undefined {
  let lo = -MAX_SCALED;
  let hi = MAX_SCALED;
  // A bound past every written number either leaves none or bounds nothing (and may have no next double).
  if ((min && min.value >= FAR) || (max && max.value <= -FAR)) return undefined;
  if (min && min.value > -FAR) {
    lo = bigMax(lo, scaled(min.exclusive ? nextDouble(min.value, 1) : min.value, "up"));
  }
  if (max && max.value < FAR) {
    hi = bigMin(hi, scaled(max.exclusive ? nextDouble(max.value, -1) : max.value, "down"));
  }
  return lo <= hi ? [lo, hi] : undefined;
}

/** A GBNF expression for the written numbers in the scaled range [lo, hi] (from {@link scaledRange}). */
export function decimalRange(lo: bigint, hi: bigint): string {
  return alt(...signed(lo, hi, magnitudes));
}

/** `v` (a finite double) times 10^MAX_DIGITS, rounded `up` or `down` to an integer, exactly. */
export function scaled(v: number, rounding: "up" | "down"): bigint {
  // The shortest decimal that reads back as v: digits and a power of ten.
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:e([-+]\d+))?$/.exec(String(v));
  if (!m) throw new Error(`not a finite number: ${v}`);
  const fraction = m[3] ?? "";
  const exponent = Number(m[4] ?? 0) - fraction.length + MAX_DIGITS;
  let n = BigInt(m[2]! + fraction);
  if (m[1] === "-") n = -n;
  if (exponent >= 0) return n * 10n ** BigInt(exponent);
  const d = 10n ** BigInt(-exponent);
  // BigInt division truncates towards zero.
  const q = n / d;
  if (q * d === n) return q;
  if (rounding === "up") return n > 0n ? q + 1n : q;
  return n > 0n ? q : q - 1n;
}

/** The next double after `v` towards +Infinity (`dir` 1) or -Infinity (-1). */
export function nextDouble(v: number, dir: 1 | -1): number {
  if (v === 0) return dir * Number.MIN_VALUE;
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, v);
  const bits = view.getBigInt64(0);
  // Away from zero when moving the way of v's sign, else towards it.
  view.setBigInt64(0, v > 0 === dir > 0 ? bits + 1n : bits - 1n);
  return view.getFloat64(0);
}

function bigMax(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

function bigMin(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

/** The fraction digits of a scaled magnitude, MAX_DIGITS of them. */
function fractionOf(v: bigint): string {
  return String(v % SCALE).padStart(MAX_DIGITS, "0");
}

/** Alternatives for the magnitudes (scaled) in [a, b]: an integral part, then a fraction or none. */
function magnitudes(a: bigint, b: bigint): string[] {
  const ai = a / SCALE;
  const bi = b / SCALE;
  const zeros = "0".repeat(MAX_DIGITS);
  const nines = "9".repeat(MAX_DIGITS);
  const integral = (x: bigint, y: bigint) => {
    const alts = naturals(x, y);
    return alts.length === 1 ? alts[0]! : `(${alt(...alts)})`;
  };
  if (ai === bi) return [seq(integral(ai, ai), fraction(fractionOf(a), fractionOf(b)))];
  const out = [seq(integral(ai, ai), fraction(fractionOf(a), nines))];
  if (ai + 1n <= bi - 1n) out.push(seq(integral(ai + 1n, bi - 1n), fraction(zeros, nines)));
  out.push(seq(integral(bi, bi), fraction(zeros, fractionOf(b))));
  return out;
}

/**
 * An optional fraction (`.` and 1 to MAX_DIGITS digits, or nothing) whose digits, padded with zeros to
 * MAX_DIGITS, lie between `lo` and `hi` (MAX_DIGITS-digit strings, lo <= hi).
 */
function fraction(lo: string, hi: string): string {
  const digits = rest(lo, hi, 0, true, true);
  const none = /^0*$/.test(lo);
  if (digits === undefined) return "";
  return none ? `("." ${group(digits)})?` : seq('"."', group(digits));
}

/**
 * One digit or more from position `i`: the digits allowed when the text so far equals lo's (`low`) or
 * hi's (`high`) prefix; undefined when no digit fits. Further digits are optional where stopping (padding
 * with zeros) stays in range.
 */
function rest(lo: string, hi: string, i: number, low: boolean, high: boolean): string | undefined {
  if (i >= MAX_DIGITS) return undefined;
  // Past the low bound's last non-zero digit any digits stay above it; before a run of nines to the
  // end of the high bound, any digits stay below it.
  if (low && /^0*$/.test(lo.slice(i))) return rest(lo, hi, i, false, high);
  if (high && /^9*$/.test(hi.slice(i))) return rest(lo, hi, i, low, false);
  const left = MAX_DIGITS - 1 - i;
  if (!low && !high) return repeat("[0-9]", 1, left + 1);
  const from = low ? Number(lo[i]) : 0;
  const to = high ? Number(hi[i]) : 9;
  const alts: string[] = [];
  const after = (l: boolean, h: boolean): string => {
    const more = rest(lo, hi, i + 1, l, h);
    if (more === undefined) return "";
    // Stopping here pads with zeros: in range unless the low bound still has a non-zero digit to come.
    const mayStop = !l || /^0*$/.test(lo.slice(i + 1));
    return mayStop ? `${group(more)}?` : group(more);
  };
  for (let d = from; d <= to; ) {
    const l = low && d === from;
    const h = high && d === to;
    if (l || h) {
      alts.push(seq(`"${d}"`, after(l, h)));
      d++;
      continue;
    }
    // A run of digits strictly inside the bounds: any digits may follow.
    const end = high ? to - 1 : to;
    alts.push(seq(end === d ? `"${d}"` : `[${d}-${end}]`, repeat("[0-9]", 0, left)));
    d = end + 1;
  }
  return alt(...alts);
}
