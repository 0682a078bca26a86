// The IQ4_NL / IQ4_XS quantizers: error on N(0, 1) against llama.cpp's own figure, the codes
// against the scale each element is decoded with, and edge blocks.
import { describe, expect, it } from "vitest";
import { GgufError } from "../errors.js";
import { GgmlType } from "../ggml-types.js";
import { f16ToF32, readU16 } from "./f16.js";
import { dequantize, QUANTIZE_TYPES, quantize } from "./index.js";
import { KVALUES_IQ4NL } from "./iq-grids.js";
import { fitIQ4Scale } from "./iq4-quant.js";
import { normals } from "./test-data.js";

type Iq4 = "IQ4_NL" | "IQ4_XS";
const TYPES: readonly Iq4[] = ["IQ4_NL", "IQ4_XS"];
const BLOCK = { IQ4_NL: 32, IQ4_XS: 256 } as const;
const BYTES = { IQ4_NL: 18, IQ4_XS: 136 } as const;

function roundTrip(name: Iq4, x: Float32Array): Float32Array {
  return dequantize(GgmlType[name], quantize(GgmlType[name], x), x.length);
}

function rmse(x: Float32Array, y: Float32Array): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += (y[i]! - x[i]!) ** 2;
  return Math.sqrt(s / x.length);
}

/** The scale each element of a quantized buffer is decoded with: d, or d·(scale − 32). */
function elementScales(name: Iq4, q: Uint8Array, n: number): Float64Array {
  const out = new Float64Array(n);
  for (let b = 0; b < n / BLOCK[name]; b++) {
    const o = b * BYTES[name];
    const d = f16ToF32(readU16(q, o));
    for (let j = 0; j < BLOCK[name]; j++) {
      let s = d;
      if (name === "IQ4_XS") {
        const ib = j >> 5;
        const low = (q[o + 4 + (ib >> 1)]! >> (4 * (ib & 1))) & 15;
        const high = (readU16(q, o + 2) >> (2 * ib)) & 3;
        s = d * ((low | (high << 4)) - 32);
      }
      out[b * BLOCK[name] + j] = s;
    }
  }
  return out;
}

// llama.cpp's error on this exact vector (normals(65536, 0x5eed), dumped from this generator to a
// file): a C driver built against llama.cpp's ggml/src/ggml-quants.c (gcc -O2, stubs for the four
// ggml.c symbols it links) ran quantize_iq4_nl / quantize_iq4_xs with quant_weights NULL on rows of
// 4096, dequantize_row_iq4_nl / _xs, and printed RMSE = sqrt(Σ(y − x)²/65536):
// IQ4_NL 0.076322929, IQ4_XS 0.076899720 (RMS of x: 1.002302334). llama.cpp weights each element by
// x² when given no importance weights; this search weighs it by σ² + x² (see iq4-quant.ts).
const LLAMA_RMSE = { IQ4_NL: 0.076322929, IQ4_XS: 0.07689972 } as const;
const N = 65536;
const X = normals(N, 0x5eed);

describe("round trip on N(0, 1)", () => {
  it("the vector is the one llama.cpp's figures were measured on", () => {
    expect(X[0]).toBe(Math.fround(-0.35613763332366943));
    expect(X[1]).toBe(Math.fround(1.5326889753341675));
    expect(X[N - 1]).toBe(Math.fround(-0.8622458577156067));
  });

  for (const name of TYPES) {
    it(`${name}: RMSE ≤ 1.05 × llama.cpp's on the same data`, () => {
      expect(rmse(X, roundTrip(name, X))).toBeLessThanOrEqual(1.05 * LLAMA_RMSE[name]);
    });

    it(`${name}: every element has the level nearest it for the scale it is decoded with`, () => {
      // Coding against the fitted scale instead of the stored f16 one differs only for elements
      // within ~2⁻¹² of a midpoint between levels (1 of these 131 072 for IQ4_NL): use them all.
      for (const x of [X, X.map((v) => v * 3.3)]) {
        const q = quantize(GgmlType[name], x);
        const y = dequantize(GgmlType[name], q, x.length);
        const s = elementScales(name, q, x.length);
        for (let i = 0; i < x.length; i++) {
          const e = Math.abs(x[i]! - y[i]!);
          let best = Number.POSITIVE_INFINITY;
          for (const k of KVALUES_IQ4NL) best = Math.min(best, Math.abs(x[i]! - s[i]! * k));
          if (e > best + 1e-6 * Math.abs(x[i]!)) expect.fail(`element ${i}: |error| ${e}, nearest ${best}`);
        }
      }
    });

    it(`${name}: quantize(−x) decodes to −decode(quantize(x))`, () => {
      const x = X.subarray(0, 4096);
      const y = roundTrip(name, x);
      const yn = roundTrip(
        name,
        x.map((v) => -v),
      );
      for (let i = 0; i < x.length; i++) expect(yn[i]).toBe(-y[i]!);
    });

    it(`${name}: scaled data (×1e3, ×1e-3) keeps the same relative error`, () => {
      const x = X.subarray(0, 8192);
      const base = rmse(x, roundTrip(name, x));
      for (const f of [1e3, 1e-3]) {
        const xf = x.map((v) => v * f);
        expect(rmse(xf, roundTrip(name, xf)) / f).toBeCloseTo(base, 3);
      }
    });
  }

  it("IQ4_NL without an importance: the scale is close to the best σ² + x²-weighted one on the −127 side", () => {
    // Σ over 256 blocks of Σ (σ² + x²)·(x − y)² (σ² twice the block's mean square) for the stored
    // scale, against the best of 2000 scales that put the abs-max element at −80 .. −160.
    const id = GgmlType.IQ4_NL;
    const nb = 256;
    const x = X.subarray(0, 32 * nb);
    const q = quantize(id, x);
    let fit = 0;
    let scan = 0;
    for (let b = 0; b < nb; b++) {
      const o = 32 * b;
      let s2 = 0;
      let max = 0;
      for (let j = 0; j < 32; j++) {
        s2 += x[o + j]! ** 2;
        if (Math.abs(x[o + j]!) > Math.abs(max)) max = x[o + j]!;
      }
      s2 *= 2 / 32;
      const werr = (d: number): number => {
        let e = 0;
        for (let j = 0; j < 32; j++) {
          let best = Number.POSITIVE_INFINITY;
          for (const k of KVALUES_IQ4NL) best = Math.min(best, (x[o + j]! - d * k) ** 2);
          e += (s2 + x[o + j]! ** 2) * best;
        }
        return e;
      };
      fit += werr(f16ToF32(readU16(q, 18 * b)));
      let best = Number.POSITIVE_INFINITY;
      for (let k = 0; k < 2000; k++) best = Math.min(best, werr((-max / 160) * (1 + k / 2000)));
      scan += best;
    }
    // Measured 1.019 (the stored scale is f16 and the search tries ±8 levels around −127, then
    // refits); the plain squared error's fit gives 1.050 on this measure.
    expect(fit).toBeLessThanOrEqual(1.03 * scan);
  });

  for (const name of TYPES) {
    it(`${name}: the abs-max element of every group decodes on the −127 side without an importance, not always with one`, () => {
      // (x / its decode scale < 0: the element sits on the table's −127 end, the other sign's
      // values on the +113 end.) Importance all ones: the wide search, which tries both ends.
      const sides = (q: Uint8Array): { neg: number; groups: number } => {
        const s = elementScales(name, q, N);
        let neg = 0;
        let groups = 0;
        for (let o = 0; o < N; o += 32) {
          let j = o;
          for (let i = o; i < o + 32; i++) if (Math.abs(X[i]!) > Math.abs(X[j]!)) j = i;
          if (s[j] === 0) continue;
          groups++;
          if (X[j]! / s[j]! < 0) neg++;
        }
        return { neg, groups };
      };
      const plain = sides(quantize(GgmlType[name], X));
      expect(plain.groups).toBeGreaterThan(N / 32 - 8);
      expect(plain.neg).toBe(plain.groups);
      const wide = sides(quantize(GgmlType[name], X, new Float32Array(N).fill(1)));
      expect(wide.neg).toBeLessThan(wide.groups);
    });
  }

  it("the block fit is close to a dense scan of scales", () => {
    // Called alone, the fit minimizes the plain squared error with the abs-max element on the
    // −127 side of the table. Σ over 64 blocks of the best squared error over 2000 scales of that
    // sign: amax/160 .. amax/80 (the abs-max element lands between levels 80 and 160 in
    // magnitude), steps of 0.05%.
    let fit = 0;
    let scan = 0;
    const err = (x: Float32Array, o: number, d: number): number => {
      let s = 0;
      for (let j = 0; j < 32; j++) {
        let best = Number.POSITIVE_INFINITY;
        for (const k of KVALUES_IQ4NL) best = Math.min(best, (x[o + j]! - d * k) ** 2);
        s += best;
      }
      return s;
    };
    for (let b = 0; b < 64; b++) {
      const o = 32 * b;
      fit += err(X, o, fitIQ4Scale(X, o));
      let max = 0;
      for (let j = 0; j < 32; j++) if (Math.abs(X[o + j]!) > Math.abs(max)) max = X[o + j]!;
      let best = Number.POSITIVE_INFINITY;
      for (let k = 0; k < 2000; k++) best = Math.min(best, err(X, o, (-max / 160) * (1 + k / 2000)));
      scan += best;
    }
    expect(fit).toBeLessThanOrEqual(1.01 * scan);
  });
});

describe("edge blocks", () => {
  for (const name of TYPES) {
    const id = GgmlType[name];
    const n = 512;

    it(`${name}: zeros give a zero scale and decode to +0`, () => {
      const q = quantize(id, new Float32Array(n));
      for (let b = 0; b < n / BLOCK[name]; b++) expect(readU16(q, b * BYTES[name])).toBe(0);
      for (const v of dequantize(id, q, n)) expect(Object.is(v, 0)).toBe(true);
    });

    it(`${name}: a constant block decodes to the constant within f16 rounding`, () => {
      for (const c of [-0.75, 0.75, 3e-3, -1234.5]) {
        // IQ4_XS's super-block scale is about |c|/(127·32): below 0.25 it is an f16 subnormal,
        // with fewer significant bits (3e-3: d ≈ 7e-7 ≈ 12·2⁻²⁴).
        const tol = name === "IQ4_XS" && Math.abs(c) < 0.25 ? 0.02 : 2 ** -10;
        for (const v of roundTrip(name, new Float32Array(n).fill(c))) {
          expect(Math.abs(v - c)).toBeLessThanOrEqual(Math.abs(c) * tol);
        }
      }
    });

    it(`${name}: one spike in zeros decodes exactly enough, its neighbours near zero`, () => {
      const x = new Float32Array(n);
      x[37] = 3;
      const y = roundTrip(name, x);
      expect(Math.abs(y[37]! - 3)).toBeLessThan(0.01);
      // The level nearest zero is 1/127 of the largest: the spike's group decodes its zeros to
      // ±3/127 at best; the other groups are exact.
      for (let i = 0; i < n; i++) {
        if (i === 37) continue;
        const group = i >> 5 === 37 >> 5;
        expect(Math.abs(y[i]!)).toBeLessThanOrEqual(group ? 0.03 : 0);
      }
    });

    it(`${name}: huge values saturate at the largest f16 scale, tiny ones underflow to 0`, () => {
      const big = X.subarray(0, n).map((v) => v * 1e9);
      const yb = roundTrip(name, big);
      for (const v of yb) expect(Number.isFinite(v)).toBe(true);
      const amax = Math.max(...yb.map(Math.abs));
      expect(amax).toBeGreaterThan(65504 * 100);
      expect(amax).toBeLessThanOrEqual(65504 * 127 * (name === "IQ4_XS" ? 32 : 1));
      const tiny = X.subarray(0, n).map((v) => v * 1e-12);
      for (const v of roundTrip(name, tiny)) expect(Math.abs(v)).toBe(0);
    });

    it(`${name}: a non-finite value does not spoil the rest of its group`, () => {
      const x = X.slice(0, n);
      x[5] = Number.POSITIVE_INFINITY;
      x[6] = Number.NaN;
      x[7] = Number.NEGATIVE_INFINITY;
      const y = roundTrip(name, x);
      const clean = roundTrip(name, X.slice(0, n).fill(0, 5, 8));
      for (let i = 0; i < n; i++) {
        expect(Number.isFinite(y[i])).toBe(true);
        if (i < 5 || i > 7) expect(y[i]).toBe(clean[i]);
      }
      expect(y[5]).toBeGreaterThan(0); // +Inf → the largest level on its side
      expect(y[7]).toBeLessThan(0);
      expect(Math.abs(y[6]!)).toBeLessThan(0.1); // NaN → the level nearest zero
    });

    it(`${name}: an outlier costs only its own group (IQ4_XS: most of all its own block)`, () => {
      const x = X.slice(0, n);
      x[40] = 100;
      const y = roundTrip(name, x);
      expect(Math.abs(y[40]! - 100)).toBeLessThan(1);
      const part = (keep: (i: number) => boolean): number => {
        const idx = [...x.keys()].filter(keep);
        return rmse(
          Float32Array.from(idx, (i) => x[i]!),
          Float32Array.from(idx, (i) => y[i]!),
        );
      };
      const group = 40 >> 5;
      if (name === "IQ4_NL") {
        expect(part((i) => i >> 5 !== group)).toBeLessThanOrEqual(1.1 * LLAMA_RMSE[name]);
      } else {
        // The other super-block is untouched; the outlier's block shares one f16 scale, so its
        // other groups get 6-bit scales of only 1 or 2 (measured: 1.25× the N(0, 1) error).
        expect(part((i) => i >= 256)).toBeLessThanOrEqual(1.1 * LLAMA_RMSE[name]);
        expect(part((i) => i < 256 && i >> 5 !== group)).toBeLessThanOrEqual(1.5 * LLAMA_RMSE[name]);
      }
    });
  }

  it("IQ4_XS: groups of very different sizes keep their own scales", () => {
    // Group ib of each block holds N(0, 1)·m[ib], signs alternating, magnitudes 1/16 .. 1.
    const m = [1, -0.5, 0.25, -0.125, 0.0625, -0.75, 0.375, -1];
    const x = X.slice(0, 4096);
    for (let i = 0; i < x.length; i++) x[i]! *= m[(i >> 5) & 7]!;
    const id = GgmlType.IQ4_XS;
    const plain = dequantize(id, quantize(id, x), x.length);
    // Importance all ones: the wide search (each group also tries the integers beside its nearest).
    const wide = dequantize(id, quantize(id, x, new Float32Array(x.length).fill(1)), x.length);
    for (let ib = 0; ib < 8; ib++) {
      const idx = [...x.keys()].filter((i) => ((i >> 5) & 7) === ib);
      const xs = Float32Array.from(idx, (i) => x[i]!);
      const rel = (y: Float32Array): number =>
        rmse(
          xs,
          Float32Array.from(idx, (i) => y[i]!),
        ) / Math.abs(m[ib]!);
      // Relative error within 1.25× the N(0, 1) figure even where the 6-bit scale is 2; without an
      // importance matrix each group takes its nearest 6-bit integer, up to 25% off at 2: 1.5×.
      expect(rel(wide)).toBeLessThanOrEqual(1.25 * LLAMA_RMSE.IQ4_XS);
      expect(rel(plain)).toBeLessThanOrEqual(1.5 * LLAMA_RMSE.IQ4_XS);
    }
  });
});

describe("registration", () => {
  it("quantize writes IQ4_NL and IQ4_XS, and refuses partial blocks", () => {
    expect(QUANTIZE_TYPES).toContain("IQ4_NL");
    expect(QUANTIZE_TYPES).toContain("IQ4_XS");
    expect(quantize(GgmlType.IQ4_NL, new Float32Array(64)).length).toBe(36);
    expect(quantize(GgmlType.IQ4_XS, new Float32Array(512)).length).toBe(272);
    expect(() => quantize(GgmlType.IQ4_XS, new Float32Array(32))).toThrow(GgufError);
    expect(() => quantize(GgmlType.IQ4_NL, new Float32Array(48))).toThrow(/IQ4_NL.*32/);
  });
});
