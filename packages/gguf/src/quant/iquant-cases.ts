// Test cases shared by the tests of the low-bit quantizers (iq3-quant.test.ts, iq2-quant.test.ts,
// iq1-quant.test.ts); test-only, index.ts does not re-export this file. Each type's error on the
// data below is bounded by llama.cpp's own error on the same data, measured once and passed in.
//
// How llama.cpp's figures were measured: a C driver (gcc -O2, ggml.h only) linked against the
// libggml-base.so of llama.cpp built from the workspace's shared/device/llamacpp/llama.cpp-src.tar.xz
// reads the rows below, dumped to files as f32 (bit for bit these generators: the same mulberry32
// and Box–Muller, rounded to f32), quantizes them with ggml_quantize_chunk(type, x, q, 0, rows,
// 4096, imp) — imp = IMP, or NULL where llama.cpp allows it — decodes with
// ggml_get_type_traits(type)->to_float and prints √(Σ(y − x)²/n) ("plain", the NULL run) and
// √(Σ IMP·(y − x)²/Σ IMP) ("weighted", the IMP run), IMP[j mod 4096] weighing element j.
import { describe, expect, it } from "vitest";
import { GgufError } from "../errors.js";
import { GgmlType, type GgmlTypeName } from "../ggml-types.js";
import {
  dequantize,
  IMPORTANCE_REQUIRED_TYPES,
  IMPORTANCE_TYPES,
  QUANTIZE_TYPES,
  quantize,
} from "./index.js";
import { importances, normals, weightedRmse } from "./test-data.js";

/** llama.cpp's errors on one data set: plain (no importance; absent where it needs one) and weighted. */
export interface LlamaError {
  readonly plain?: number;
  readonly weighted: number;
}

export interface IquantCase {
  readonly name: GgmlTypeName;
  /** Bytes per block of 256. */
  readonly bytes: number;
  /** llama.cpp on N(0, 1) ({@link X}), on spike rows ({@link SPIKES}) and outlier rows ({@link OUTLIERS}). */
  readonly llama: { readonly normal: LlamaError; readonly spikes: LlamaError; readonly outliers: LlamaError };
  /**
   * What this quantizer must reach on N(0, 1), as a fraction of llama.cpp's error: a little above
   * what it measured, low enough that a broken search fails.
   */
  readonly bound: { readonly plain?: number; readonly weighted: number };
  /** Largest relative error on a constant row. */
  readonly constantTol: number;
  /** Whether the grid holds the negation of every entry (not IQ1's): then quantize(−x) = −quantize(x). */
  readonly symmetric: boolean;
}

/** N(0, 1), rows of 4096 (the data of llama.cpp's `normal` figures). */
export const X = normals(65536, 0x5eed);
/** The importance of the columns of a row of 4096. */
export const IMP = importances(4096, 0x1a7b);
/** One row of zeros with a spike of 3 at element 37 of every block. */
export const SPIKES = Float32Array.from({ length: 4096 }, (_, i) => (i % 256 === 37 ? 3 : 0));
/** One row of N(0, 1) (X's first) with 100 at element 40 of every block. */
export const OUTLIERS = Float32Array.from(X.subarray(0, 4096), (v, i) => (i % 256 === 40 ? 100 : v));

function roundTrip(c: IquantCase, x: Float32Array, imp?: Float32Array): Float32Array {
  return dequantize(GgmlType[c.name], quantize(GgmlType[c.name], x, imp), x.length);
}

/** Whether the type is written without an importance. */
const plainOk = (c: IquantCase) => !IMPORTANCE_REQUIRED_TYPES.includes(c.name);

/** The cases every low-bit quantizer passes. */
export function iquantCases(c: IquantCase): void {
  const { name } = c;
  const id = GgmlType[name];
  /** The importance to quantize with: IMP, or its first n columns. */
  const imp = (n = 4096) => IMP.subarray(0, n);

  describe(`${name}: error against llama.cpp's on the same data`, () => {
    it(`N(0, 1), weighted by an importance: ≤ ${c.bound.weighted} × llama.cpp's`, () => {
      const e = weightedRmse(X, roundTrip(c, X, IMP), IMP);
      expect(e).toBeLessThanOrEqual(c.bound.weighted * c.llama.normal.weighted);
    });
    if (plainOk(c)) {
      it(`N(0, 1), no importance: ≤ ${c.bound.plain} × llama.cpp's`, () => {
        expect(weightedRmse(X, roundTrip(c, X))).toBeLessThanOrEqual(c.bound.plain! * c.llama.normal.plain!);
      });
      it("an importance lowers the error it weighs", () => {
        const x = X.subarray(0, 16384);
        expect(weightedRmse(x, roundTrip(c, x, IMP), IMP)).toBeLessThan(
          weightedRmse(x, roundTrip(c, x), IMP),
        );
      });
    }
    for (const [label, x, ref] of [
      ["spike rows", SPIKES, c.llama.spikes],
      ["outlier rows", OUTLIERS, c.llama.outliers],
    ] as const) {
      // (The unit-gain block scale of the grid types costs error here — the decoded spike keeps its
      // size, so its block-mates grow too — measured up to 1.41× llama.cpp's, IQ2_XXS spikes.)
      it(`${label}: within 1.5 × llama.cpp's error`, () => {
        expect(weightedRmse(x, roundTrip(c, x, IMP), IMP)).toBeLessThanOrEqual(1.5 * ref.weighted);
        if (plainOk(c) && ref.plain !== undefined) {
          expect(weightedRmse(x, roundTrip(c, x))).toBeLessThanOrEqual(1.5 * ref.plain);
        }
      });
    }
  });

  describe(`${name}: edge rows`, () => {
    const n = 512;
    it("zeros decode to +0", () => {
      for (const v of roundTrip(c, new Float32Array(n), imp(n))) expect(Object.is(v, 0)).toBe(true);
    });

    it("a constant row decodes to the constant", () => {
      for (const k of [-0.75, 0.75, 3e-3, -1234.5]) {
        for (const v of roundTrip(c, new Float32Array(n).fill(k), imp(n))) {
          expect(Math.abs(v - k)).toBeLessThanOrEqual(Math.abs(k) * c.constantTol);
        }
      }
    });

    it("an outlier costs only its own block", () => {
      const x = X.slice(0, n);
      const clean = roundTrip(c, x, imp(n));
      x[40] = 100;
      const y = roundTrip(c, x, imp(n));
      expect(y.subarray(256)).toEqual(clean.subarray(256));
      expect(Math.abs(y[40]! - 100)).toBeLessThan(20);
    });

    it("every block decodes to finite values, from 1e-30 to 1e30 and with ±Inf and NaN", () => {
      for (const f of [1e-30, 1e-8, 1, 1e8, 1e30]) {
        for (const v of roundTrip(
          c,
          X.subarray(0, n).map((v) => v * f),
          imp(n),
        ))
          expect(Number.isFinite(v)).toBe(true);
      }
      const x = X.slice(0, n);
      x[5] = Number.POSITIVE_INFINITY;
      x[6] = Number.NaN;
      x[7] = Number.NEGATIVE_INFINITY;
      const y = roundTrip(c, x, imp(n));
      for (const v of y) expect(Number.isFinite(v)).toBe(true);
      expect(y[5]).toBeGreaterThan(0);
      expect(y[7]).toBeLessThan(0);
    });

    it("scaled data (×1e3, ×1e-3) keeps the same relative error", () => {
      const x = X.subarray(0, 8192);
      const base = weightedRmse(x, roundTrip(c, x, IMP), IMP);
      for (const f of [1e3, 1e-3]) {
        const xf = x.map((v) => v * f);
        expect(weightedRmse(xf, roundTrip(c, xf, IMP), IMP) / f).toBeCloseTo(base, 3);
      }
    });

    // (Only for grids symmetric under negation: IQ1_S / IQ1_M's are not, so they have no such case.)
    if (c.symmetric) {
      it("quantize(−x) decodes to −decode(quantize(x))", () => {
        const x = X.subarray(0, 4096);
        const y = roundTrip(c, x, IMP);
        const yn = roundTrip(
          c,
          x.map((v) => -v),
          IMP,
        );
        for (let i = 0; i < x.length; i++) expect(yn[i]).toBe(-y[i]!);
      });
    }
  });

  describe(`${name}: registration`, () => {
    it("is written, weighed by an importance, in blocks of 256", () => {
      expect(QUANTIZE_TYPES).toContain(name);
      expect(IMPORTANCE_TYPES).toContain(name);
      expect(quantize(id, new Float32Array(512), imp(512)).length).toBe(2 * c.bytes);
      expect(() => quantize(id, new Float32Array(128), imp(128))).toThrow(new RegExp(`${name}.*256`));
    });
    if (!plainOk(c)) {
      it("refuses to quantize without an importance, naming the type", () => {
        let err: unknown;
        try {
          quantize(id, new Float32Array(256));
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(GgufError);
        expect((err as GgufError).code).toBe("INVALID_ARGUMENT");
        expect((err as GgufError).message).toMatch(new RegExp(`^${name} .*importance`));
      });
    }
  });
}
