import { describe, expect, it } from "vitest";
import { SamplerError } from "./errors.js";
import { argmax, selectTopK, sortIds } from "./select.js";
import { randomLogits } from "./test-helpers.js";

function bruteSorted(logits: Float32Array): number[] {
  return Array.from({ length: logits.length }, (_, i) => i)
    .filter((i) => logits[i] !== -Infinity)
    .sort((a, b) => (logits[a]! > logits[b]! ? -1 : logits[a]! < logits[b]! ? 1 : a - b));
}

describe("argmax", () => {
  it("returns the largest logit's index, the lowest on ties", () => {
    expect(argmax(new Float32Array([1, 3, 3, 2]))).toBe(1);
    expect(argmax(new Float32Array([5]))).toBe(0);
    expect(argmax(new Float32Array([-Infinity, -1, -1]))).toBe(1);
    expect(argmax(new Float32Array([0, Infinity, Infinity]))).toBe(1);
    expect(argmax(new Float32Array([-Infinity, -Infinity]))).toBe(0);
  });

  it("throws INVALID_ARGUMENT for empty or NaN logits", () => {
    expect(() => argmax(new Float32Array(0))).toThrow(SamplerError);
    expect(() => argmax(new Float32Array([1, Number.NaN]))).toThrow(/logits\[1\] is NaN/);
    expect(() => argmax(new Float32Array([Number.NaN, 1]))).toThrow(/logits\[0\] is NaN/);
  });
});

describe("selectTopK / sortIds", () => {
  it("agree with a full sort (ties by lower id, -Infinity skipped)", () => {
    for (let seed = 1; seed <= 40; seed++) {
      const n = 1 + ((seed * 37) % 300);
      const logits = randomLogits(n, seed, -3, 3, 0.5); // few distinct values: many ties
      for (let i = 0; i < n; i += 7) logits[i] = -Infinity;
      if (seed % 5 === 0) logits[n - 1] = Infinity;
      const want = bruteSorted(logits);
      for (const k of [1, 2, 5, 40, n, n + 3]) {
        const heap = new Float32Array(k);
        const ids = new Uint32Array(k);
        const m = selectTopK(logits, k, heap, ids);
        expect(Array.from(ids.subarray(0, m))).toEqual(want.slice(0, k));
      }
      const all = new Uint32Array(n);
      const keys = new Float64Array(n);
      const m = sortIds(logits, -Infinity, all, keys);
      expect(Array.from(all.subarray(0, m))).toEqual(want);
      const m2 = sortIds(logits, 0.5, all, keys);
      expect(Array.from(all.subarray(0, m2))).toEqual(want.filter((i) => logits[i]! >= 0.5));
    }
  });

  it("sortIds orders negative, zero (either sign), subnormal and infinite logits", () => {
    const logits = new Float32Array([-0, 1e-40, -1e-40, 0, -2, 3.5, Infinity, -Infinity, -3.4e38, 3.4e38, 0]);
    const ids = new Uint32Array(logits.length);
    const m = sortIds(logits, -Infinity, ids, new Float64Array(logits.length));
    expect(Array.from(ids.subarray(0, m))).toEqual([6, 9, 5, 1, 0, 3, 10, 2, 4, 8]);
  });

  it("throws for NaN while filling and while scanning", () => {
    const heap = new Float32Array(2);
    const ids = new Uint32Array(2);
    expect(() => selectTopK(new Float32Array([1, Number.NaN, 2]), 2, heap, ids)).toThrow(/logits\[1\]/);
    expect(() => selectTopK(new Float32Array([1, 2, 0, Number.NaN]), 2, heap, ids)).toThrow(/logits\[3\]/);
  });
});
