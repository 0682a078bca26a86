// The native weight quantizers against @minfer/gguf's TypeScript ones, byte for byte: every type,
// rows of many shapes, with and without an importance, from F32, F16 and BF16; and the argument
// checks of the binding.

import { convertTensor, quantize } from "@minfer/gguf";
import { DType } from "@minfer/ir";
import { describe, expect, it } from "vitest";
import { CpuBackendError } from "./errors.js";
import {
  convertWeights,
  NATIVE_QUANTIZE_TYPES,
  quantizeWeights,
  quantizeWeightsUnsupported,
} from "./quantize-weights.js";

const TYPES: readonly (keyof typeof DType)[] = [
  "Q4_0",
  "Q4_1",
  "Q5_0",
  "Q5_1",
  "Q8_0",
  "Q2_K",
  "Q3_K",
  "Q4_K",
  "Q5_K",
  "Q6_K",
  "IQ4_NL",
  "IQ4_XS",
];
/** Block sizes and bytes per block. */
const LAYOUT: Record<string, [number, number]> = {
  Q4_0: [32, 18],
  Q4_1: [32, 20],
  Q5_0: [32, 22],
  Q5_1: [32, 24],
  Q8_0: [32, 34],
  Q2_K: [256, 84],
  Q3_K: [256, 110],
  Q4_K: [256, 144],
  Q5_K: [256, 176],
  Q6_K: [256, 210],
  IQ4_NL: [32, 18],
  IQ4_XS: [256, 136],
};

/** A deterministic generator (32-bit LCG) of uniforms in [0, 1) and normals. */
function rng(seed: number) {
  let s = seed >>> 0;
  const uniform = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
  const normal = () => Math.sqrt(-2 * Math.log(uniform() + 1e-12)) * Math.cos(2 * Math.PI * uniform());
  return { uniform, normal };
}

const ROW = 512;

/** Rows that exercise the searches: scales, zeros, an outlier, tiny values, one sign, repeats. */
function rows(seed: number): Float32Array {
  const r = rng(seed);
  const kinds: ((j: number) => number)[] = [
    () => r.normal() * 0.02, // a trained weight's scale
    () => r.normal() * 3,
    () => r.normal() * 1e-4,
    (j) => (j % 3 === 0 ? 0 : r.normal()), // many zeros
    () => 0, // all zeros
    (j) => (j === 77 ? 500 : r.normal() * 0.01), // one huge outlier
    () => r.normal() * 1e-30, // tiny: scales underflow f16
    () => r.normal() * 1e-7, // tiny: f16 subnormal scales
    () => -Math.abs(r.normal()), // negative only
    () => Math.abs(r.normal()) + 1, // positive only, away from zero
    (j) => (j % 32 < 16 ? r.normal() * 1e-5 : r.normal()), // half of each block tiny
    () => Math.round(r.normal() * 4) / 4, // few distinct values (ties in the searches)
    (j) => (j % 7) - 3, // small integers
    () => r.normal() * 2000, // large, f16 scales still finite
    () => (r.uniform() < 0.5 ? -1 : 1) * 0.5, // ±constant
    () => r.normal() * 10 ** (r.uniform() * 8 - 6), // magnitudes spread over 8 decades
  ];
  const x = new Float32Array(kinds.length * ROW);
  kinds.forEach((f, k) => {
    for (let j = 0; j < ROW; j++) x[k * ROW + j] = f(j);
  });
  return x;
}

function importance(seed: number, n = ROW): Float32Array {
  const r = rng(seed);
  const imp = new Float32Array(n);
  for (let j = 0; j < n; j++) {
    const u = r.uniform();
    imp[j] = u < 0.1 ? 0 : u < 0.2 ? 1e-8 : r.uniform() * 10;
  }
  imp.fill(0, 0, 40); // a whole group without weight
  return imp;
}

/** The first byte where a and b differ, or −1. */
function firstDiff(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

describe("quantizeWeights: the TypeScript quantizers' bytes", () => {
  for (const name of TYPES) {
    const type = DType[name];
    it(`${name}, without and with an importance`, () => {
      for (const seed of [1, 2]) {
        const x = rows(seed);
        expect(firstDiff(quantizeWeights(type, x, ROW), quantize(type, x)), `seed ${seed}`).toBe(-1);
        const imp = importance(seed + 100);
        const native = quantizeWeights(type, x, ROW, imp);
        expect(firstDiff(native, quantize(type, x, imp)), `seed ${seed}, importance`).toBe(-1);
      }
    });
  }

  it("reads F16 and BF16 sources as convertTensor does", () => {
    const x = rows(3);
    const f16 = quantize(DType.F16, x);
    const bf16 = quantize(DType.BF16, x);
    const imp = importance(7);
    for (const name of TYPES) {
      const type = DType[name];
      for (const [from, data] of [
        [DType.F16, f16],
        [DType.BF16, bf16],
      ] as const) {
        const native = convertWeights(from, type, data, ROW, imp);
        expect(
          firstDiff(native, convertTensor(data, from, type, x.length, imp)),
          `${name} from ${from}`,
        ).toBe(-1);
      }
    }
    // Any byte offset: a view starting at an odd address.
    const odd = new Uint8Array(f16.length + 1).subarray(1);
    odd.set(f16);
    expect(
      firstDiff(
        convertWeights(DType.F16, DType.Q4_K, odd, ROW),
        convertTensor(f16, DType.F16, DType.Q4_K, x.length),
      ),
    ).toBe(-1);
  });

  it("matches on NaN and ±Infinity too", () => {
    const x = rows(4);
    const r = rng(5);
    for (let i = 0; i < x.length; i++) {
      const u = r.uniform();
      if (u < 0.004) x[i] = Number.NaN;
      else if (u < 0.006) x[i] = Number.POSITIVE_INFINITY;
      else if (u < 0.008) x[i] = Number.NEGATIVE_INFINITY;
    }
    const imp = importance(6);
    for (const name of TYPES) {
      const type = DType[name];
      for (const w of [undefined, imp]) {
        const native = quantizeWeights(type, x, ROW, w);
        expect(firstDiff(native, quantize(type, x, w)), `${name}${w ? " with importance" : ""}`).toBe(-1);
      }
    }
  });

  it("the TypeScript writes a non-finite Q2_K/Q3_K block the same after any other block", () => {
    // (its searches once kept the previous block's codes when no round had a finite error)
    const x = rows(2);
    x.fill(Number.NaN, 256, 512);
    for (const name of ["Q2_K", "Q3_K"] as const) {
      const [, ts] = LAYOUT[name]!;
      const after = quantize(DType[name], x).subarray(ts, 2 * ts);
      const alone = quantize(DType[name], x.slice(256, 512));
      expect(firstDiff(after, alone), name).toBe(-1);
      expect(firstDiff(quantizeWeights(DType[name], x, ROW).subarray(ts, 2 * ts), alone), name).toBe(-1);
    }
  });

  it("quantizes a block the same alone as after others (no state between blocks)", () => {
    const x = rows(8);
    x[3 * 256 + 5] = Number.NaN;
    for (const name of TYPES) {
      const type = DType[name];
      const [bs, ts] = LAYOUT[name]!;
      const all = quantizeWeights(type, x, ROW);
      for (const b of [0, 3, 9]) {
        const alone = quantizeWeights(type, x.slice(b * 256, (b + 1) * 256), 256);
        expect(firstDiff(alone, all.subarray(((b * 256) / bs) * ts, (((b + 1) * 256) / bs) * ts)), name).toBe(
          -1,
        );
      }
    }
  });

  it("handles empty input and large rows", () => {
    expect(quantizeWeights(DType.Q4_K, new Float32Array(0), 256)).toHaveLength(0);
    const x = rows(9).subarray(0, 8192);
    for (const name of ["Q4_K", "Q8_0", "IQ4_XS"] as const) {
      expect(firstDiff(quantizeWeights(DType[name], x, 8192), quantize(DType[name], x))).toBe(-1);
    }
  });
});

describe("quantizeWeights: arguments", () => {
  const x = new Float32Array(512);
  const codeOf = (f: () => unknown): string | undefined => {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(CpuBackendError);
      return (e as CpuBackendError).code;
    }
    return undefined;
  };

  it("refuses each bad argument with INVALID_ARGUMENT and a message", () => {
    expect(codeOf(() => quantizeWeights(DType.IQ2_XS, x, 256))).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => quantizeWeights(DType.F16, x, 256))).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => quantizeWeights(1000, x, 256))).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => quantizeWeights(2.5, x, 256))).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => quantizeWeights(DType.Q4_K, x, 128))).toBe("INVALID_ARGUMENT"); // not whole blocks
    expect(codeOf(() => quantizeWeights(DType.Q4_0, x, 96))).toBe("INVALID_ARGUMENT"); // 512 not whole rows
    expect(codeOf(() => quantizeWeights(DType.Q4_0, x, 0))).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => quantizeWeights(DType.Q4_0, x, -32))).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => quantizeWeights(DType.Q4_0, x, Number.NaN))).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => quantizeWeights(DType.Q4_K, x, 256, new Float32Array(255)))).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => quantizeWeights(DType.Q4_K, x, 256, new Float32Array(256).fill(-1)))).toBe(
      "INVALID_ARGUMENT",
    );
    expect(codeOf(() => quantizeWeights(DType.Q4_K, x, 256, new Float32Array(256).fill(Number.NaN)))).toBe(
      "INVALID_ARGUMENT",
    );
    const inf = new Float32Array(256);
    inf[255] = Number.POSITIVE_INFINITY;
    expect(codeOf(() => quantizeWeights(DType.Q4_K, x, 256, inf))).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => convertWeights(DType.Q8_0, DType.Q4_0, new Uint8Array(34), 32))).toBe(
      "INVALID_ARGUMENT",
    );
    expect(codeOf(() => convertWeights(DType.F16, DType.Q4_0, new Uint8Array(63), 32))).toBe(
      "INVALID_ARGUMENT",
    );
    const untyped = [1, 2, 3] as unknown as Float32Array;
    expect(codeOf(() => quantizeWeights(DType.Q4_0, untyped, 32))).toBe("INVALID_ARGUMENT");
    const f64 = new Float64Array(256) as unknown as Float32Array;
    expect(codeOf(() => quantizeWeights(DType.Q4_K, x, 256, f64))).toBe("INVALID_ARGUMENT");
    expect(() => quantizeWeights(DType.Q4_0, x, 96)).toThrow(/whole rows/);
    expect(() => quantizeWeights(DType.IQ2_XS, x, 256)).toThrow(/supported: .*Q4_K/);
  });

  it("says which pairs it converts", () => {
    expect(quantizeWeightsUnsupported(DType.F16, DType.Q4_K)).toBeUndefined();
    expect(quantizeWeightsUnsupported(DType.BF16, DType.IQ4_XS)).toBeUndefined();
    expect(quantizeWeightsUnsupported(DType.F16, DType.IQ2_XS)).toMatch(/no native quantizer for IQ2_XS/);
    expect(quantizeWeightsUnsupported(DType.Q8_0, DType.Q4_0)).toMatch(/reads F32, F16, BF16, not Q8_0/);
    expect(NATIVE_QUANTIZE_TYPES.map((t) => TYPES.find((n) => DType[n] === t))).toEqual(TYPES);
  });
});
