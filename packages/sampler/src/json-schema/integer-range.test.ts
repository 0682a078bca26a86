import { describe, expect, it } from "vitest";
import { Grammar } from "../grammar/index.js";
import { lcg } from "../test-helpers.js";
import { integerRange } from "./integer-range.js";

/** Whether `n` written as JSON is matched, for every n in a window around [lo, hi]. */
function check(lo: number, hi: number, window: [number, number]): void {
  const g = Grammar.parse(`root ::= ${integerRange(lo, hi)}\n`);
  for (let n = window[0]; n <= window[1]; n++) {
    expect(g.matches(String(n)), `${n} in [${lo}, ${hi}]`).toBe(n >= lo && n <= hi);
  }
  // Never a leading zero, a plus sign or a negative zero.
  for (const bad of ["00", "01", "-0", "+1", "007", ""]) expect(g.matches(bad), bad).toBe(false);
}

describe("integerRange", () => {
  it.each([
    [0, 0],
    [0, 9],
    [1, 10],
    [7, 7],
    [-5, 5],
    [-15, 230],
    [-1234, 56789],
    [-100, -7],
    [99, 1000],
    [100, 100999],
    [19, 91],
    [-999, -100],
  ])("matches exactly [%i, %i]", (lo, hi) => {
    const span = hi - lo;
    const pad = Math.max(20, Math.min(span, 3000));
    if (span <= 6000) check(lo, hi, [lo - pad, hi + pad]);
    else {
      check(lo, hi, [lo - pad, lo + 3000]);
      check(lo, hi, [hi - 3000, hi + pad]);
    }
  });

  it("matches exactly random ranges", () => {
    const rand = lcg(99);
    for (let i = 0; i < 40; i++) {
      const scale = 10 ** Math.floor(rand() * 5);
      const a = Math.floor((rand() - 0.5) * 2 * scale);
      const b = a + Math.floor(rand() * scale);
      check(a, b, [a - 50, b + 50]);
    }
  });

  it("stops an unbounded end at 16 digits, as llama.cpp's ranges do", () => {
    // llama.cpp, minimum 37 alone: [1-2] [0-9]{2,15} | "3" ([7-9] [0-9]{0,14} | ...) | [4-9] [0-9]{1,15}:
    // 37 up to sixteen nines.
    const gAbove = Grammar.parse(`root ::= ${integerRange(37, Infinity)}\n`);
    for (let n = -50; n <= 2000; n++) expect(gAbove.matches(String(n)), String(n)).toBe(n >= 37);
    expect(gAbove.matches("9999999999999999")).toBe(true);
    expect(gAbove.matches("1000000000000000")).toBe(true);
    expect(gAbove.matches("10000000000000000")).toBe(false);
    const gBelow = Grammar.parse(`root ::= ${integerRange(-Infinity, -12)}\n`);
    for (let n = -2000; n <= 50; n++) expect(gBelow.matches(String(n)), String(n)).toBe(n <= -12);
    expect(gBelow.matches("-9999999999999999")).toBe(true);
    expect(gBelow.matches("-10000000000000000")).toBe(false);
    const gAll = Grammar.parse(`root ::= ${integerRange(-Infinity, 5)}\n`);
    for (let n = -300; n <= 300; n++) expect(gAll.matches(String(n)), String(n)).toBe(n <= 5);
    expect(gAll.matches("-9999999999999999")).toBe(true);
    expect(gAll.matches("-12345678901234567")).toBe(false);
  });

  it("writes the whole 16-digit range as llama.cpp's integral part", () => {
    // [0] | [1-9] [0-9]{0,15}, with an optional "-" before a non-zero magnitude.
    const g = Grammar.parse(`root ::= ${integerRange(-Infinity, Infinity)}\n`);
    for (const ok of ["0", "7", "-7", "1234567890123456", "-9999999999999999"])
      expect(g.matches(ok), ok).toBe(true);
    for (const bad of ["12345678901234567", "-0", "01", "+1", "1.0"]) expect(g.matches(bad), bad).toBe(false);
  });
});
