import { DType } from "@minfer/ir";
import { describe, expect, it } from "vitest";
import { attention } from "./attention.js";
import { dense } from "./dense.js";

// hd = 1; two cells with equal keys; values 1 and 3.
const k = dense([1, 1, 2, 1], Float64Array.of(1, 1));
const v = dense([1, 1, 2, 1], Float64Array.of(1, 3));

describe("reference attention", () => {
  it("equal scores average the values", () => {
    const q = dense([1, 1, 1, 1], Float64Array.of(1));
    const out = attention(q, k, v, dense([2, 1, 1, 1], Float64Array.of(0, 0)), DType.F32, 1, 0);
    expect(out.data[0]).toBeCloseTo(2, 15);
  });
  it("a −∞ mask hides a cell, and spans see only [start, end)", () => {
    const q = dense([1, 1, 1, 1], Float64Array.of(1));
    const masked = attention(
      q,
      k,
      v,
      dense([2, 1, 1, 1], Float64Array.of(Number.NEGATIVE_INFINITY, 0)),
      DType.F32,
      1,
      0,
    );
    expect(masked.data[0]).toBe(3);
    const spans = attention(q, k, v, dense([2, 1, 1, 1], Float64Array.of(0, 1)), DType.I32, 1, 0);
    expect(spans.data[0]).toBe(1);
  });
  it("GQA: two query heads share one kv head", () => {
    const q = dense([1, 2, 1, 1], Float64Array.of(1, -1));
    const kk = dense([1, 1, 2, 1], Float64Array.of(0, Math.log(3)));
    const out = attention(q, kk, v, dense([2, 1, 1, 1], Float64Array.of(0, 0)), DType.F32, 1, 0);
    // Head 0: weights softmax([0, ln 3]) = [1/4, 3/4] → 2.5; head 1: softmax([0, −ln 3]) = [3/4, 1/4] → 1.5.
    expect(out.data[0]).toBeCloseTo(2.5, 14);
    expect(out.data[1]).toBeCloseTo(1.5, 14);
  });
  it("softcap: s = c·tanh(s/c)", () => {
    const q = dense([1, 1, 1, 1], Float64Array.of(1));
    const kk = dense([1, 1, 2, 1], Float64Array.of(0, 100));
    const out = attention(q, kk, v, dense([2, 1, 1, 1], Float64Array.of(0, 0)), DType.F32, 1, 1);
    const w = Math.exp(Math.tanh(100));
    expect(out.data[0]).toBeCloseTo((1 + 3 * w) / (1 + w), 14);
  });
});
