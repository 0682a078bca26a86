/**
 * GBNF for the decimal integers in [lo, hi], written the way JSON writes them: no leading zeros, `-` only
 * before a non-zero magnitude. An unbounded end stops at MAX_DIGITS digits, as llama.cpp's ranges do.
 * Built digit by digit: a range of equal-length numerals splits at its first differing digit into "low
 * prefix, then anything above", "whole digits in between" and "high prefix, then anything below".
 */

import { alt, repeat, seq } from "./gbnf.js";
import { MAX_DIGITS } from "./limits.js";

/** The largest magnitude written: MAX_DIGITS nines. */
export const MAX_MAGNITUDE = 10n ** BigInt(MAX_DIGITS) - 1n;

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
  if (!lowAll) for (const t of sameLength(restA, "9".repeat(restA.length))) out.push(seq(`"${a0}"`, t));
  if (from <= to) out.push(seq(digits(from, to), anyTail));
  if (!highAll) for (const t of sameLength("0".repeat(restB.length), restB)) out.push(seq(`"${b0}"`, t));
  return out;
}

/** Alternatives for the naturals in [lo, hi] (0 <= lo <= hi <= MAX_MAGNITUDE), without leading zeros. */
export function naturals(lo: bigint, hi: bigint): string[] {
  const out: string[] = [];
  if (lo === 0n) {
    out.push('"0"');
    if (hi === 0n) return out;
    lo = 1n;
  }
  const loText = String(lo);
  const hiText = String(hi);
  if (loText.length === hiText.length) return [...out, ...sameLength(loText, hiText)];
  out.push(...sameLength(loText, "9".repeat(loText.length)));
  // Every length strictly between lo's and hi's is unrestricted: [1-9] then loLen.. digits.
  if (loText.length + 1 <= hiText.length - 1)
    out.push(seq("[1-9]", repeat("[0-9]", loText.length, hiText.length - 2)));
  out.push(...sameLength(`1${"0".repeat(hiText.length - 1)}`, hiText));
  return out;
}

/**
 * A GBNF expression for the integers in [lo, hi]: lo may be -Infinity and hi Infinity (then at most
 * MAX_DIGITS digits), both safe integers otherwise; lo <= hi.
 */
export function integerRange(lo: number, hi: number): string {
  const l = lo === -Infinity ? -MAX_MAGNITUDE : BigInt(lo);
  const h = hi === Infinity ? MAX_MAGNITUDE : BigInt(hi);
  return alt(...signed(l, h, (a, b) => naturals(a, b)));
}

/**
 * Alternatives for the values in [lo, hi] (either sign), given `magnitudes(a, b)`: alternatives for the
 * magnitudes in [a, b] (0 <= a <= b). A negative value is `-` and a magnitude of at least 1 (`unit`).
 */
export function signed(
  lo: bigint,
  hi: bigint,
  magnitudes: (a: bigint, b: bigint) => string[],
  unit = 1n,
): string[] {
  const out: string[] = [];
  if (lo < 0n) {
    const mLo = hi < 0n ? -hi : unit;
    const neg = magnitudes(mLo, -lo);
    out.push(seq('"-"', neg.length === 1 ? neg[0]! : `(${alt(...neg)})`));
  }
  if (hi >= 0n) out.push(...magnitudes(lo > 0n ? lo : 0n, hi));
  return out;
}
