import { describe, expect, it } from "vitest";
import { dense } from "./dense.js";
import { rope } from "./rope.js";

// [mode, nDims, nCtxOrig, freqBase, freqScale, extFactor, attnFactor, betaFast, betaSlow]
const params = (
  mode: number,
  nDims: number,
  more: Partial<Record<"freqScale" | "extFactor" | "attnFactor", number>> = {},
) => [mode, nDims, 4096, 10000, more.freqScale ?? 1, more.extFactor ?? 0, more.attnFactor ?? 1, 32, 1];
const pos1 = dense([1, 1, 1, 1], Float64Array.of(1));

describe("reference rope", () => {
  it("normal mode at position 1, base 10000: pairs (0,1) turn by 1 rad, (2,3) by 0.01 rad", () => {
    const x = dense([4, 1, 1, 1], Float64Array.of(1, 0, 1, 0));
    const out = rope(x, pos1, params(0, 4));
    expect([...out.data].map((v) => +v.toFixed(12))).toEqual(
      [Math.cos(1), Math.sin(1), Math.cos(0.01), Math.sin(0.01)].map((v) => +v.toFixed(12)),
    );
  });
  it("neox mode rotates (i, i + nDims/2)", () => {
    const x = dense([4, 1, 1, 1], Float64Array.of(1, 1, 0, 0));
    const out = rope(x, pos1, params(2, 4));
    expect(out.data[0]).toBeCloseTo(Math.cos(1), 14);
    expect(out.data[2]).toBeCloseTo(Math.sin(1), 14);
    expect(out.data[1]).toBeCloseTo(Math.cos(0.01), 14);
    expect(out.data[3]).toBeCloseTo(Math.sin(0.01), 14);
  });
  it("leaves dimensions past nDims alone", () => {
    const x = dense([4, 1, 1, 1], Float64Array.of(1, 0, 7, 9));
    const out = rope(x, pos1, params(0, 2));
    expect(out.data[2]).toBe(7);
    expect(out.data[3]).toBe(9);
  });
  it("frequency factors divide the angle", () => {
    const x = dense([2, 1, 1, 1], Float64Array.of(1, 0));
    const out = rope(x, pos1, params(0, 2), dense([1, 1, 1, 1], Float64Array.of(2)));
    expect(out.data[0]).toBeCloseTo(Math.cos(0.5), 14);
    expect(out.data[1]).toBeCloseTo(Math.sin(0.5), 14);
  });
  it("YaRN scales the magnitude by attnFactor·(1 + 0.1·ln(1/freqScale))", () => {
    const x = dense([2, 1, 1, 1], Float64Array.of(1, 0));
    const out = rope(
      x,
      dense([1, 1, 1, 1], Float64Array.of(0)),
      params(0, 2, { freqScale: 0.5, extFactor: 1, attnFactor: 2 }),
    );
    expect(out.data[0]).toBeCloseTo(2 * (1 + 0.1 * Math.log(2)), 14);
  });
  it("linear scaling (freqScale 0.5) halves the angle without YaRN", () => {
    const x = dense([2, 1, 1, 1], Float64Array.of(1, 0));
    const out = rope(x, dense([1, 1, 1, 1], Float64Array.of(2)), params(0, 2, { freqScale: 0.5 }));
    expect(out.data[0]).toBeCloseTo(Math.cos(1), 14);
  });
});
