import { describe, expect, it } from "vitest";
import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16 } from "./index.js";

describe("f32ToF16", () => {
  it("encodes exact values", () => {
    expect(f32ToF16(1)).toBe(0x3c00);
    expect(f32ToF16(-2)).toBe(0xc000);
    expect(f32ToF16(0.5)).toBe(0x3800);
    expect(f32ToF16(65504)).toBe(0x7bff); // largest finite half
    expect(f32ToF16(0)).toBe(0x0000);
    expect(f32ToF16(-0)).toBe(0x8000);
    expect(f32ToF16(2 ** -14)).toBe(0x0400); // smallest normal
    expect(f32ToF16(1023 * 2 ** -24)).toBe(0x03ff); // largest subnormal
  });

  it("overflows to infinity at the 65504/65536 tie", () => {
    expect(f32ToF16(65519.99)).toBe(0x7bff); // below the tie: rounds down
    expect(f32ToF16(65520)).toBe(0x7c00); // the tie rounds to even (2^16), which overflows
    expect(f32ToF16(-65520)).toBe(0xfc00);
    expect(f32ToF16(1e9)).toBe(0x7c00);
    expect(f32ToF16(Number.POSITIVE_INFINITY)).toBe(0x7c00);
    expect(f32ToF16(Number.NEGATIVE_INFINITY)).toBe(0xfc00);
  });

  it("rounds subnormals to nearest, ties to even", () => {
    expect(f32ToF16(2 ** -24)).toBe(0x0001); // smallest subnormal
    expect(f32ToF16(2 ** -25)).toBe(0x0000); // half a unit: tie → even (0)
    expect(f32ToF16(-(2 ** -25))).toBe(0x8000);
    expect(f32ToF16(2 ** -25 + 2 ** -40)).toBe(0x0001); // just above the tie
    expect(f32ToF16(3 * 2 ** -25)).toBe(0x0002); // 1.5 units: tie → even (2)
    expect(f32ToF16(1023.5 * 2 ** -24)).toBe(0x0400); // tie between 1023 and 1024 units → 1024 = 2^-14
  });

  it("rounds normals to nearest, ties to even", () => {
    expect(f32ToF16(1 + 2 ** -11)).toBe(0x3c00); // half an ulp above 1: tie → even mantissa 0
    expect(f32ToF16(1 + 3 * 2 ** -11)).toBe(0x3c02); // 1.5 ulp: tie → even mantissa 2
    expect(f32ToF16(1 + 2 ** -11 + 2 ** -20)).toBe(0x3c01); // above the tie
    expect(f32ToF16(2 - 2 ** -12)).toBe(0x4000); // rounds up across the exponent boundary
    expect(f32ToF16(0.1)).toBe(0x2e66); // 0.1 = 1.6·2^-4; 0.6·1024 = 614.4 → 614 = 0x266
  });

  it("keeps NaN a NaN", () => {
    const h = f32ToF16(Number.NaN);
    expect(h).toBe(0x7e00);
    expect((h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0).toBe(true);
    expect(f16ToF32(h)).toBeNaN();
  });
});

describe("f16ToF32", () => {
  it("decodes known patterns", () => {
    expect(f16ToF32(0x3c00)).toBe(1);
    expect(f16ToF32(0x3800)).toBe(0.5);
    expect(f16ToF32(0xc000)).toBe(-2);
    expect(f16ToF32(0x7bff)).toBe(65504);
    expect(f16ToF32(0x0001)).toBe(2 ** -24);
    expect(f16ToF32(0x03ff)).toBe(1023 * 2 ** -24);
    expect(f16ToF32(0x0400)).toBe(2 ** -14);
    expect(f16ToF32(0x7c00)).toBe(Number.POSITIVE_INFINITY);
    expect(f16ToF32(0xfc00)).toBe(Number.NEGATIVE_INFINITY);
    expect(Object.is(f16ToF32(0x8000), -0)).toBe(true);
    expect(f16ToF32(0x7c01)).toBeNaN();
  });

  it("round-trips every non-NaN pattern", () => {
    for (let h = 0; h < 0x10000; h++) {
      if ((h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0) continue;
      if (f32ToF16(f16ToF32(h)) !== h) throw new Error(`0x${h.toString(16)} does not round-trip`);
    }
  });

  it("rounds every midpoint between neighbours to the even one", () => {
    for (let h = 0; h < 0x7bff; h++) {
      const mid = (f16ToF32(h) + f16ToF32(h + 1)) / 2; // exact in double
      const even = h % 2 === 0 ? h : h + 1;
      if (f32ToF16(mid) !== even) throw new Error(`midpoint above 0x${h.toString(16)}`);
    }
  });
});

describe("bf16", () => {
  it("encodes and decodes exact values", () => {
    expect(f32ToBf16(1)).toBe(0x3f80);
    expect(f32ToBf16(-2)).toBe(0xc000);
    expect(f32ToBf16(0.5)).toBe(0x3f00);
    expect(bf16ToF32(0x3f80)).toBe(1);
    expect(bf16ToF32(0x4049)).toBe(3.140625); // 1.5703125·2
    expect(bf16ToF32(0xff80)).toBe(Number.NEGATIVE_INFINITY);
  });

  it("rounds the f32 bits to nearest, ties to even", () => {
    // f32 1 + 2^-8 is 0x3f808000: exactly between bf16 0x3f80 and 0x3f81 → even 0x3f80.
    expect(f32ToBf16(1 + 2 ** -8)).toBe(0x3f80);
    // 1 + 3·2^-8 is 0x3f818000: between 0x3f81 and 0x3f82 → even 0x3f82.
    expect(f32ToBf16(1 + 3 * 2 ** -8)).toBe(0x3f82);
    // Just above the first tie → up.
    expect(f32ToBf16(1 + 2 ** -8 + 2 ** -20)).toBe(0x3f81);
    // Largest finite f32 0x7f7fffff rounds up into infinity.
    expect(f32ToBf16(3.4028234663852886e38)).toBe(0x7f80);
  });

  it("keeps NaN a quiet NaN", () => {
    const h = f32ToBf16(Number.NaN);
    expect(h & 0x7f80).toBe(0x7f80);
    expect(h & 0x40).toBe(0x40);
    expect(bf16ToF32(h)).toBeNaN();
  });
});
