import { describe, expect, it } from "vitest";
import { GgufError } from "../errors.js";
import { GgmlType } from "../ggml-types.js";
import {
  dequantize,
  IMPORTANCE_REQUIRED_TYPES,
  IMPORTANCE_TYPES,
  QUANTIZE_TYPES,
  quantize,
} from "./index.js";
import { mulberry32, normals } from "./test-data.js";

const ROW = 512;
const ROWS = 16;

/** Σ over the heavy columns of the squared error, and Σ over the others. */
function errors(x: Float32Array, y: Float32Array, heavy: Set<number>): { heavy: number; light: number } {
  let h = 0;
  let l = 0;
  for (let i = 0; i < x.length; i++) {
    const e = (x[i]! - y[i]!) ** 2;
    if (heavy.has(i % ROW)) h += e;
    else l += e;
  }
  return { heavy: h, light: l };
}

describe("quantize with an importance", () => {
  const x = normals(ROW * ROWS, 7);
  // One column in eight weighs 1000 times the rest (a one-hot-heavy importance).
  const rnd = mulberry32(11);
  const heavy = new Set<number>();
  for (let j = 0; j < ROW; j++) if (rnd() < 0.125) heavy.add(j);
  const imp = Float32Array.from({ length: ROW }, (_, j) => (heavy.has(j) ? 1000 : 1));

  it("lists the types that use one", () => {
    expect(IMPORTANCE_TYPES).toEqual([
      "Q2_K",
      "Q3_K",
      "Q4_K",
      "Q5_K",
      "Q6_K",
      "IQ2_XXS",
      "IQ2_XS",
      "IQ3_XXS",
      "IQ1_S",
      "IQ4_NL",
      "IQ3_S",
      "IQ2_S",
      "IQ4_XS",
      "IQ1_M",
      "TQ1_0",
      "TQ2_0",
    ]);
    expect(IMPORTANCE_REQUIRED_TYPES).toEqual(["IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M"]);
  });

  // The types written only from an importance: "plain" is every column weighing the same.
  const ones = new Float32Array(ROW).fill(1);
  const plainOf = (name: string) => (IMPORTANCE_REQUIRED_TYPES.includes(name as never) ? ones : undefined);

  for (const name of IMPORTANCE_TYPES) {
    it(`${name}: the heavy columns' error shrinks, and the weighted error with it`, () => {
      const type = GgmlType[name as keyof typeof GgmlType];
      const plain = dequantize(type, quantize(type, x, plainOf(name)), x.length);
      const weighted = dequantize(type, quantize(type, x, imp), x.length);
      const a = errors(x, plain, heavy);
      const b = errors(x, weighted, heavy);
      // (TQ's code is the nearest of −d, 0, d for every element: the importance moves only d.)
      if (!name.startsWith("TQ")) expect(b.heavy).toBeLessThan(0.8 * a.heavy);
      expect(1000 * b.heavy + b.light).toBeLessThan(1000 * a.heavy + a.light);
    });
  }

  it("leaves the output unchanged without one, and ignores it for the types that use none", () => {
    for (const name of QUANTIZE_TYPES.filter((t) => !IMPORTANCE_REQUIRED_TYPES.includes(t))) {
      const type = GgmlType[name as keyof typeof GgmlType];
      const again = quantize(type, x, undefined);
      expect(again).toEqual(quantize(type, x));
      if (!IMPORTANCE_TYPES.includes(name)) expect(quantize(type, x, imp)).toEqual(again);
    }
  });

  it("treats every row alike and gives the same bytes row by row", () => {
    const whole = quantize(GgmlType.Q4_K, x, imp);
    const rowBytes = whole.length / ROWS;
    for (const r of [0, 5, ROWS - 1]) {
      const one = quantize(GgmlType.Q4_K, x.subarray(r * ROW, (r + 1) * ROW), imp);
      expect(one).toEqual(whole.subarray(r * rowBytes, (r + 1) * rowBytes));
    }
  });

  it("rejects an importance that does not fit the rows or holds bad values", () => {
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return e instanceof GgufError ? e.code : String(e);
      }
      return undefined;
    };
    expect(code(() => quantize(GgmlType.Q4_K, x, new Float32Array(300)))).toBe("INVALID_ARGUMENT");
    expect(code(() => quantize(GgmlType.Q4_K, x, new Float32Array(128)))).toBe("INVALID_ARGUMENT");
    expect(code(() => quantize(GgmlType.Q4_K, x, new Float32Array(0)))).toBe("INVALID_ARGUMENT");
    const neg = imp.slice();
    neg[3] = -1;
    expect(code(() => quantize(GgmlType.Q4_K, x, neg))).toBe("INVALID_ARGUMENT");
    const nan = imp.slice();
    nan[3] = Number.NaN;
    expect(code(() => quantize(GgmlType.Q3_K, x, nan))).toBe("INVALID_ARGUMENT");
  });

  it("copes with zero importance and non-finite values", () => {
    const zero = new Float32Array(ROW);
    const y = x.slice();
    y[10] = Number.POSITIVE_INFINITY;
    y[300] = Number.NaN;
    for (const name of IMPORTANCE_TYPES) {
      const type = GgmlType[name as keyof typeof GgmlType];
      const d = dequantize(type, quantize(type, x, zero), x.length);
      for (const v of d) expect(Number.isFinite(v)).toBe(true);
      expect(() => quantize(type, y, imp)).not.toThrow();
    }
  });
});
