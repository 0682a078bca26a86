/**
 * GBNF for the decimal integers in [lo, hi] (either end may be unbounded), written the way JSON writes
 * them: no leading zeros, `-` only before a non-zero magnitude. Built digit by digit: a range of
 * equal-length numerals splits at its first differing digit into "low prefix, then anything above",
 * "whole digits in between" and "high prefix, then anything below".
 */

import { alt, repeat, seq } from "./gbnf.js";

/** One digit class `[a-b]` (or the digit itself). */
function digits(a: number, b: number): string {
  if (a === b) return `"${a}"`;
  return b === a + 1 ? `[${a}${b}]` : `[${a}-${b}]`;
}

/** Numerals of exactly `n` digits from `a` to `b` (equal-length digit strings, a <= b; leading zeros allowed). */
function sameLength(a: string, b: string): string[] {
  if (a.length === 0) return [""];
  const a0 = Number(a[0]);
  const b0 = Number(b[0]);
  const restA = a.slice(1);
  const restB = b.slice(1);
  if (a0 === b0) return sameLength(restA, restB).map((tail) => seq(`"${a0}"`, tail));
  const lowAll = /^0*$/.test(restA);
  const highAll = /^9*$/.test(restB);
  const anyTail = repeat("[0-9]", restA.length, restA.length);
  const out: string[] = [];
  // The first digit's run whose tails are unrestricted: from a0 (if a's tail is all zeros) to b0 (if b's is all nines).
  const from = lowAll ? a0 : a0 + 1;
  const to = highAll ? b0 : b0 - 1;
  if (!lowAll) out.push(...sameLength(restA, "9".repeat(restA.length)).map((t) => seq(`"${a0}"`, t)));
  if (from <= to) out.push(seq(digits(from, to), anyTail));
  if (!highAll) out.push(...sameLength("0".repeat(restB.length), restB).map((t) => seq(`"${b0}"`, t)));
  return out;
}

/** Alternatives for the naturals in [lo, hi] (0 <= lo <= hi; hi may be Infinity), without leading zeros. */
function naturals(lo: number, hi: number): string[] {
  const out: string[] = [];
  if (lo === 0) {
    out.push('"0"');
    if (hi === 0) return out;
    lo = 1;
  }
  const loLen = String(lo).length;
  const hiLen = hi === Infinity ? Infinity : String(hi).length;
  if (loLen === hiLen) return [...out, ...sameLength(String(lo), String(hi))];
  out.push(...sameLength(String(lo), "9".repeat(loLen)));
  // Every length strictly between lo's and hi's is unrestricted: [1-9] then loLen.. digits.
  if (hi === Infinity) {
    out.push(seq("[1-9]", repeat("[0-9]", loLen, Infinity)));
    return out;
  }
  if (loLen + 1 <= hiLen - 1) out.push(seq("[1-9]", repeat("[0-9]", loLen, hiLen - 2)));
  out.push(...sameLength(`1${"0".repeat(hiLen - 1)}`, String(hi)));
  return out;
}

/**
 * A GBNF expression for the integers in [lo, hi] (lo may be -Infinity, hi Infinity; both safe integers
 * otherwise; lo <= hi).
 */
export function integerRange(lo: number, hi: number): string {
  const out: string[] = [];
  if (lo < 0) {
    // Negative part: -m for m in [max(1, -hi), -lo].
    const mLo = hi < 0 ? -hi : 1;
    const mHi = -lo;
    const neg = naturals(mLo, mHi);
    out.push(seq('"-"', neg.length === 1 ? neg[0]! : `(${alt(...neg)})`));
  }
  if (hi >= 0) out.push(...naturals(Math.max(0, lo), hi));
  return alt(...out);
}
