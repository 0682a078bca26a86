// Round-trip quality on seeded N(0, 1) data, idempotence of the reference legacy quantizers, and
// the error table of QUANTIZATION.md. Print the table with:
//   QUANT_ERROR_TABLE=1 vitest run src/quant/roundtrip.test.ts
import { describe, expect, it } from "vitest";
import { GgufError } from "../errors.js";
import { GgmlType, type GgmlTypeName, ggmlTypeInfo } from "../ggml-types.js";
import {
  DEQUANTIZE_TYPES,
  dequantize,
  IMPORTANCE_REQUIRED_TYPES,
  QUANTIZE_TYPES,
  quantize,
} from "./index.js";
import { normals } from "./test-data.js";

interface Stats {
  /** RMS of the error over RMS of the input. */
  relRms: number;
  /** Largest |error| over RMS of the input. */
  relMax: number;
  bitsPerWeight: number;
}

function roundTrip(name: GgmlTypeName, x: Float32Array): Stats {
  const info = ggmlTypeInfo(GgmlType[name]);
  // The types written only from an importance get equal importance for every column.
  const imp = IMPORTANCE_REQUIRED_TYPES.includes(name) ? new Float32Array(4096).fill(1) : undefined;
  const y = dequantize(info.id, quantize(info.id, x, imp), x.length);
  let se = 0;
  let sx = 0;
  let max = 0;
  for (let i = 0; i < x.length; i++) {
    const e = y[i] - x[i];
    se += e * e;
    sx += x[i] * x[i];
    max = Math.max(max, Math.abs(e));
  }
  const rms = Math.sqrt(sx / x.length);
  return {
    relRms: Math.sqrt(se / x.length) / rms,
    relMax: max / rms,
    bitsPerWeight: (8 * info.typeSize) / info.blockSize,
  };
}

// Upper bounds on relative RMS error for N(0, 1) data (measured values are in QUANTIZATION.md;
// these leave about 10% headroom).
const RMS_BOUND: Record<string, number> = {
  F32: 0,
  F16: 2.5e-4,
  BF16: 2e-3,
  Q4_0: 0.095,
  Q4_1: 0.087,
  Q5_0: 0.048,
  Q5_1: 0.042,
  Q8_0: 0.006,
  Q2_K: 0.286,
  Q3_K: 0.157,
  Q4_K: 0.078,
  Q5_K: 0.039,
  Q6_K: 0.02,
  IQ4_NL: 0.081,
  IQ4_XS: 0.082,
  // The low-bit i-quants and TQ: their own tests (iq1/iq2/iq3/ternary-quant.test.ts) compare them
  // with llama.cpp on this data.
  IQ3_S: 0.142,
  IQ3_XXS: 0.197,
  IQ2_S: 0.27,
  IQ2_XS: 0.328,
  IQ2_XXS: 0.381,
  IQ1_M: 0.508,
  IQ1_S: 0.543,
  TQ1_0: 0.477,
  TQ2_0: 0.477,
};

const N = 65536;
const X = normals(N, 0x5eed);

describe("round trip on N(0, 1)", () => {
  const table: string[] = [];
  for (const name of QUANTIZE_TYPES) {
    it(`${name} stays within its error bound`, () => {
      const s = roundTrip(name, X);
      expect(s.relRms).toBeLessThanOrEqual(RMS_BOUND[name]!);
      table.push(
        `| ${name} | ${s.bitsPerWeight.toFixed(2)} | ${s.relRms.toExponential(3)} | ${s.relMax.toExponential(3)} |`,
      );
    });
  }

  it("Q4_K beats Q4_0, Q5_K beats Q5_0, Q6_K beats Q5_K, and Q2_K < Q3_K < Q4_K in error", () => {
    expect(roundTrip("Q3_K", X).relRms).toBeLessThan(roundTrip("Q2_K", X).relRms);
    expect(roundTrip("Q4_K", X).relRms).toBeLessThan(roundTrip("Q3_K", X).relRms);
    expect(roundTrip("Q4_K", X).relRms).toBeLessThan(roundTrip("Q4_0", X).relRms);
    expect(roundTrip("Q5_K", X).relRms).toBeLessThan(roundTrip("Q5_0", X).relRms);
    expect(roundTrip("Q6_K", X).relRms).toBeLessThan(roundTrip("Q5_K", X).relRms);
  });

  // llama.cpp's own reference quantizers (quantize_row_q*_K_ref, no importance matrix: what
  // llama-quantize runs without --imatrix) on this same X, measured once with a C driver built
  // against ggml-quants.c, in the root of the llama.cpp source that node-llama-cpp bundles (the
  // workspace's shared/device/llamacpp/llama.cpp-src.tar.xz, ggml 0.23.0):
  //   gcc -O2 -I ggml/include -I ggml/src driver.c stubs.c ggml/src/ggml-quants.c -lm && ./a.out
  // where driver.c regenerates X bit for bit (the same mulberry32 + Box–Muller in double, seed
  // 0x5eed, 65536 values rounded to f32; checked equal to X), quantizes it with each
  // quantize_row_*_ref, decodes it with ggml's dequantize_row_* and prints RMS(err)/RMS(x), and
  // stubs.c defines the four ggml symbols ggml-quants.c references but the driver never calls
  // (ggml_abort, ggml_row_size, ggml_type_name, ggml_type_size).
  const LLAMA_CPP_REL_RMS: Record<string, number> = {
    Q2_K: 2.958938e-1,
    Q3_K: 1.499629e-1,
    Q4_K: 7.126205e-2,
    Q5_K: 3.588993e-2,
    Q6_K: 1.763937e-2,
  };
  for (const [name, reference] of Object.entries(LLAMA_CPP_REL_RMS)) {
    it(`${name} is no worse than llama.cpp's reference quantizer on the same data`, () => {
      expect(roundTrip(name as GgmlTypeName, X).relRms).toBeLessThanOrEqual(reference);
    });
  }

  it("prints the table when QUANT_ERROR_TABLE=1", () => {
    if (process.env.QUANT_ERROR_TABLE !== "1") return;
    console.log(
      [
        `N(0,1), ${N} elements, seed 0x5eed`,
        "| type | bits/weight | RMS err / RMS | max abs err / RMS |",
        "| --- | --- | --- | --- |",
        ...table,
      ].join("\n"),
    );
  });
});

describe("idempotence on the quantizer's own grid", () => {
  // quantize(dequantize(quantize(x))) === quantize(x) byte for byte. Holds for the ggml reference
  // algorithms of Q4_0, Q5_0 and Q8_0 (the abs-max element maps to an exact grid end); the
  // K-quant searches refit scales from the (changed) data and are not guaranteed idempotent.
  for (const name of ["Q4_0", "Q5_0", "Q8_0"] as const) {
    it(name, () => {
      const id = GgmlType[name];
      const x = normals(4096, 7);
      const q1 = quantize(id, x);
      const q2 = quantize(id, dequantize(id, q1, x.length));
      expect(Buffer.from(q2).equals(Buffer.from(q1))).toBe(true);
    });
  }
});

// The grid i-quants and TQ have edge tests of their own (iquant-cases.ts, ternary-quant.test.ts):
// their grids have no zero level, so a spike's group-mates do not decode near zero.
const OWN_EDGE_TESTS = ["IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "TQ1_0", "TQ2_0"];

describe("edge blocks", () => {
  for (const name of QUANTIZE_TYPES.filter((t) => !OWN_EDGE_TESTS.includes(t))) {
    it(`${name}: zeros, a constant block and a single spike decode sensibly`, () => {
      const id = GgmlType[name];
      const n = 256;
      const zeros = new Float32Array(n);
      expect([...dequantize(id, quantize(id, zeros), n)].every((v) => v === 0)).toBe(true);
      const neg = new Float32Array(n).fill(-0.75);
      const yn = dequantize(id, quantize(id, neg), n);
      for (const v of yn) expect(Math.abs(v + 0.75)).toBeLessThan(0.01);
      const spike = new Float32Array(n);
      spike[37] = 3;
      const ys = dequantize(id, quantize(id, spike), n);
      expect(Math.abs(ys[37] - 3)).toBeLessThan(0.01);
      // The i-quants' level nearest zero is 1/127 of the largest (kvalues_iq4nl: 1 of −127…113), so
      // the spike's block-mates decode to ±3/127 ≈ 0.024 (llama.cpp's quantizer as well).
      const nearZero = name.startsWith("IQ4") ? 0.03 : 0.01;
      for (let i = 0; i < n; i++) if (i !== 37) expect(Math.abs(ys[i])).toBeLessThan(nearZero);
    });
  }
});

describe("errors", () => {
  const code = (f: () => unknown): string | undefined => {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(GgufError);
      return (e as GgufError).code;
    }
    return undefined;
  };

  it("refuses types without a kernel, listing the supported ones", () => {
    expect(code(() => dequantize(GgmlType.Q8_1, new Uint8Array(36), 32))).toBe("UNSUPPORTED_DTYPE");
    expect(code(() => dequantize(GgmlType.NVFP4, new Uint8Array(36), 64))).toBe("UNSUPPORTED_DTYPE");
    expect(code(() => dequantize(999, new Uint8Array(4), 1))).toBe("UNSUPPORTED_DTYPE");
    expect(code(() => quantize(GgmlType.MXFP4, new Float32Array(256)))).toBe("UNSUPPORTED_DTYPE");
    expect(code(() => quantize(4, new Float32Array(32)))).toBe("UNSUPPORTED_DTYPE"); // removed id
    expect(() => quantize(GgmlType.Q8_K, new Float32Array(256))).toThrow(/Q8_K.*Q4_0, Q4_1/);
    expect(() => dequantize(GgmlType.Q8_K, new Uint8Array(292), 256)).toThrow(/Q8_K.*Q6_K/);
  });

  it("refuses lengths that are not whole blocks, and short buffers", () => {
    expect(code(() => quantize(GgmlType.Q4_K, new Float32Array(100)))).toBe("INVALID_ARGUMENT");
    expect(() => quantize(GgmlType.Q4_K, new Float32Array(100))).toThrow(/Q4_K.*256/);
    expect(code(() => quantize(GgmlType.Q8_0, new Float32Array(33)))).toBe("INVALID_ARGUMENT");
    expect(code(() => dequantize(GgmlType.Q4_0, new Uint8Array(18), 31))).toBe("INVALID_ARGUMENT");
    expect(code(() => dequantize(GgmlType.Q4_0, new Uint8Array(35), 64))).toBe("INVALID_ARGUMENT");
    expect(code(() => dequantize(GgmlType.F32, new Uint8Array(7), 2))).toBe("INVALID_ARGUMENT");
    expect(code(() => dequantize(GgmlType.F16, new Uint8Array(8), -1))).toBe("INVALID_ARGUMENT");
  });

  it("lists the supported types", () => {
    expect(DEQUANTIZE_TYPES).toEqual([
      "F32",
      "F16",
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
      "IQ2_XXS",
      "IQ2_XS",
      "IQ3_XXS",
      "IQ1_S",
      "IQ4_NL",
      "IQ3_S",
      "IQ2_S",
      "IQ4_XS",
      "IQ1_M",
      "BF16",
      "TQ1_0",
      "TQ2_0",
      "MXFP4",
    ]);
    expect(QUANTIZE_TYPES).toEqual([
      "F32",
      "F16",
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
      "IQ2_XXS",
      "IQ2_XS",
      "IQ3_XXS",
      "IQ1_S",
      "IQ4_NL",
      "IQ3_S",
      "IQ2_S",
      "IQ4_XS",
      "IQ1_M",
      "BF16",
      "TQ1_0",
      "TQ2_0",
    ]);
    expect(Object.isFrozen(QUANTIZE_TYPES)).toBe(true);
  });

  it("reads only the blocks asked for, and zero elements from an empty buffer", () => {
    expect(dequantize(GgmlType.Q8_0, new Uint8Array(0), 0).length).toBe(0);
    const two = quantize(GgmlType.Q8_0, normals(64, 3));
    expect([...dequantize(GgmlType.Q8_0, two, 32)]).toEqual([
      ...dequantize(GgmlType.Q8_0, two, 64).subarray(0, 32),
    ]);
  });
});
