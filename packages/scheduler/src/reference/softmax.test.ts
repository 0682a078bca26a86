import { describe, expect, it } from "vitest";
import { dense } from "./dense.js";
import { alibiSlope, softmax } from "./softmax.js";

describe("reference softmax", () => {
  it("softmax of [0, ln 3] is [0.25, 0.75] (normalised)", () => {
    const out = softmax(dense([2, 1, 1, 1], Float64Array.of(0, Math.log(3))), undefined, 1, 0);
    expect(out.data[0]).toBeCloseTo(0.25, 15);
    expect(out.data[1]).toBeCloseTo(0.75, 15);
  });
  it("applies scale and a −∞ mask per row", () => {
    const a = dense([3, 2, 1, 1], Float64Array.of(2, 0, 5, 0, 0, 0));
    const mask = dense([3, 2, 1, 1], Float64Array.of(0, 0, Number.NEGATIVE_INFINITY, 0, 0, 0));
    const out = softmax(a, mask, 0.5, 0);
    // Row 0: softmax([1, 0]) and 0 for the masked cell; row 1: uniform.
    expect(out.data[0]).toBeCloseTo(Math.E / (Math.E + 1), 14);
    expect(out.data[2]).toBe(0);
    expect(out.data[3]).toBeCloseTo(1 / 3, 15);
  });
  it("ALiBi slopes follow ggml (8 heads, max bias 8: 1/2, 1/4, …)", () => {
    expect(alibiSlope(0, 8, 8)).toBeCloseTo(0.5, 15);
    expect(alibiSlope(1, 8, 8)).toBeCloseTo(0.25, 15);
    expect(alibiSlope(3, 8, 0)).toBe(1);
  });
});
