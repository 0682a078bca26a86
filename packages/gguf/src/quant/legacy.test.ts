import { describe, expect, it } from "vitest";
import { GgmlType } from "../ggml-types.js";
import { dequantize, quantize } from "./index.js";

/** `block` copied to byte offset 3 of a larger buffer, returned as an unaligned subarray. */
function unaligned(block: Uint8Array): Uint8Array {
  const buf = new Uint8Array(block.length + 8);
  buf.set(block, 3);
  return buf.subarray(3, 3 + block.length);
}

describe("Q4_0 known answers", () => {
  // { f16 d; u8 qs[16] }, x = (q − 8)·d
  const b = new Uint8Array(18);
  b[0] = 0x00; // d = 0x3800 = 0.5
  b[1] = 0x38;
  b[2 + 0] = 0x3a; // element 0 = low nibble 0xA, element 16 = high nibble 0x3
  b[2 + 15] = 0xf0; // element 15 = 0x0, element 31 = 0xF
  it("decodes nibbles in ggml order", () => {
    for (const data of [b, unaligned(b)]) {
      const y = dequantize(GgmlType.Q4_0, data, 32);
      expect(y[0]).toBe(1); // (10 − 8)·0.5
      expect(y[16]).toBe(-2.5); // (3 − 8)·0.5
      expect(y[15]).toBe(-4); // (0 − 8)·0.5
      expect(y[31]).toBe(3.5); // (15 − 8)·0.5
      expect(y[1]).toBe(-4); // byte 0 → (0 − 8)·0.5
    }
  });

  it("quantizes as ggml's reference", () => {
    // x_j = j − 16: signed abs-max is −16 (j = 0), d = −16/−8 = 2 (f16 0x4000), id = 0.5.
    const x = Float32Array.from({ length: 32 }, (_, j) => j - 16);
    const q = quantize(GgmlType.Q4_0, x);
    expect([q[0], q[1]]).toEqual([0x00, 0x40]);
    // j = 0: −16·0.5 + 8.5 = 0.5 → 0; j = 16: 0 + 8.5 → 8  ⇒ qs[0] = 0x80.
    expect(q[2]).toBe(0x80);
    // j = 15: −0.5 + 8.5 = 8 → 8; j = 31: 7.5 + 8.5 = 16 → min(15, 16) = 15  ⇒ qs[15] = 0xF8.
    expect(q[17]).toBe(0xf8);
    // j = 1: −7.5 + 8.5 = 1 → 1; j = 17: 0.5 + 8.5 = 9 → 9  ⇒ qs[1] = 0x91.
    expect(q[3]).toBe(0x91);
  });
});

describe("Q4_1 known answers", () => {
  // { f16 d; f16 m; u8 qs[16] }, x = q·d + m
  const b = new Uint8Array(20);
  b.set([0x00, 0x3c, 0x00, 0xbc], 0); // d = 1, m = −1
  b[4 + 0] = 0x52; // element 0 = 2, element 16 = 5
  b[4 + 15] = 0x0f; // element 15 = 15, element 31 = 0
  it("decodes d, m and nibbles", () => {
    const y = dequantize(GgmlType.Q4_1, unaligned(b), 32);
    expect(y[0]).toBe(1); // 2·1 − 1
    expect(y[16]).toBe(4); // 5·1 − 1
    expect(y[15]).toBe(14); // 15·1 − 1
    expect(y[31]).toBe(-1); // 0·1 − 1
  });

  it("quantizes as ggml's reference", () => {
    // x_j = j/2 − 1: min −1, max 14.5, d = 15.5/15, m = −1. x_j − min = j/2, q = ⌊j/2·15/15.5 + 0.5⌋.
    const x = Float32Array.from({ length: 32 }, (_, j) => j / 2 - 1);
    const q = quantize(GgmlType.Q4_1, x);
    const y = dequantize(GgmlType.Q4_1, q, 32);
    expect([q[2], q[3]]).toEqual([0x00, 0xbc]); // m = −1
    expect(q[4] & 15).toBe(0); // j = 0 → 0
    expect(q[4] >> 4).toBe(8); // j = 16: 8·0.9677 + 0.5 = 8.24 → 8
    expect(q[4 + 15] >> 4).toBe(15); // j = 31: 15.5·0.9677 + 0.5 = 15.5 → 15
    expect(Math.abs(y[31] - 14.5)).toBeLessThan(0.01);
  });
});

describe("Q5_0 known answers", () => {
  // { f16 d; u32 qh; u8 qs[16] }, q = nibble | (qh bit k) << 4, x = (q − 16)·d
  const b = new Uint8Array(22);
  b.set([0x00, 0x38], 0); // d = 0.5
  b.set([0x01, 0x00, 0x01, 0x80], 2); // qh = 0x80010001: bits 0, 16, 31 set; bit 15 clear
  b[6 + 0] = 0x21; // element 0 nibble 1, element 16 nibble 2
  b[6 + 15] = 0x7f; // element 15 nibble 15, element 31 nibble 7
  it("takes element k's fifth bit from bit k of qh", () => {
    const y = dequantize(GgmlType.Q5_0, unaligned(b), 32);
    expect(y[0]).toBe(0.5); // (1 | 16) − 16 = 1 → 0.5
    expect(y[16]).toBe(1); // (2 | 16) − 16 = 2 → 1
    expect(y[15]).toBe(-0.5); // 15 − 16 = −1 → −0.5 (bit 15 clear)
    expect(y[31]).toBe(3.5); // (7 | 16) − 16 = 7 → 3.5
    expect(y[1]).toBe(-8); // 0 − 16 → −8
  });

  it("quantizes as ggml's reference", () => {
    // x_j = j − 16: max −16, d = 1 (0x3C00), id = 1; q = ⌊x + 16.5⌋ = j, capped at 31.
    const x = Float32Array.from({ length: 32 }, (_, j) => j - 16);
    const q = quantize(GgmlType.Q5_0, x);
    expect([q[0], q[1]]).toEqual([0x00, 0x3c]);
    // High bits: element j has bit 4 iff j ≥ 16 → qh = 0xFFFF0000.
    expect([q[2], q[3], q[4], q[5]]).toEqual([0x00, 0x00, 0xff, 0xff]);
    expect(q[6 + 3]).toBe(0x33); // element 3 → 3, element 19 → 19 & 15 = 3
  });
});

describe("Q5_1 known answers", () => {
  // { f16 d; f16 m; u32 qh; u8 qs[16] }, x = q·d + m
  const b = new Uint8Array(24);
  b.set([0x00, 0x3c, 0x00, 0x40], 0); // d = 1, m = 2
  b.set([0x00, 0x80, 0x00, 0x40], 4); // qh = 0x40008000: bits 15 and 30
  b[8 + 15] = 0x31; // element 15 nibble 1, element 31 nibble 3
  b[8 + 14] = 0x00; // element 14 nibble 0, element 30 nibble 0
  it("decodes the fifth bit at 15 and 30", () => {
    const y = dequantize(GgmlType.Q5_1, unaligned(b), 32);
    expect(y[15]).toBe(19); // (1 | 16)·1 + 2
    expect(y[31]).toBe(5); // 3 + 2
    expect(y[14]).toBe(2); // 0 + 2
    expect(y[30]).toBe(18); // (0 | 16) + 2
    expect(y[0]).toBe(2);
  });

  it("quantizes as ggml's reference", () => {
    // x_j = j + 3: min 3, max 34, d = 31/31 = 1, q = j.
    const x = Float32Array.from({ length: 32 }, (_, j) => j + 3);
    const q = quantize(GgmlType.Q5_1, x);
    expect([q[0], q[1], q[2], q[3]]).toEqual([0x00, 0x3c, 0x00, 0x42]); // d = 1, m = 3 (0x4200)
    expect([q[4], q[5], q[6], q[7]]).toEqual([0x00, 0x00, 0xff, 0xff]);
    expect(q[8]).toBe(0x00); // element 0 → 0, element 16 → 16 & 15 = 0
    expect(q[8 + 15]).toBe(0xff); // element 15 → 15, element 31 → 31 & 15 = 15
  });
});

describe("Q8_0 known answers", () => {
  // { f16 d; i8 qs[32] }, x = q·d
  const b = new Uint8Array(34);
  b.set([0x00, 0x38], 0); // d = 0.5
  b[2 + 0] = 0x7f; // 127
  b[2 + 1] = 0x81; // −127
  b[2 + 2] = 0x80; // −128
  b[2 + 31] = 0xfe; // −2
  it("decodes signed bytes", () => {
    const y = dequantize(GgmlType.Q8_0, unaligned(b), 32);
    expect(y[0]).toBe(63.5);
    expect(y[1]).toBe(-63.5);
    expect(y[2]).toBe(-64);
    expect(y[31]).toBe(-1);
    expect(y[3]).toBe(0);
  });

  it("quantizes with d = amax/127 and round-half-away", () => {
    const x = new Float32Array(32);
    x[0] = 127; // d = 1
    x[1] = 0.5; // → 1 (half away from zero)
    x[2] = -0.5; // → −1
    x[3] = 2.5; // → 3
    x[4] = -127; // → −127
    const q = quantize(GgmlType.Q8_0, x);
    expect([q[0], q[1]]).toEqual([0x00, 0x3c]);
    expect([...q.subarray(2, 7)]).toEqual([0x7f, 0x01, 0xff, 0x03, 0x81]);
  });

  it("writes an all-zero block for zeros", () => {
    expect([...quantize(GgmlType.Q8_0, new Float32Array(32))]).toEqual(new Array(34).fill(0));
  });
});

describe("plain types", () => {
  it("F32 reads little-endian floats at any offset", () => {
    const raw = new Uint8Array([0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0]); // 1, −2
    expect([...dequantize(GgmlType.F32, unaligned(raw), 2)]).toEqual([1, -2]);
    expect([...quantize(GgmlType.F32, Float32Array.of(1, -2))]).toEqual([...raw]);
  });

  it("F16 and BF16 read and write little-endian halves", () => {
    const f16 = new Uint8Array([0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b]); // 1, −2, 65504
    expect([...dequantize(GgmlType.F16, unaligned(f16), 3)]).toEqual([1, -2, 65504]);
    expect([...quantize(GgmlType.F16, Float32Array.of(1, -2, 65504))]).toEqual([...f16]);
    const bf16 = new Uint8Array([0x80, 0x3f, 0x00, 0xc0]); // 1, −2
    expect([...dequantize(GgmlType.BF16, unaligned(bf16), 2)]).toEqual([1, -2]);
    expect([...quantize(GgmlType.BF16, Float32Array.of(1, -2))]).toEqual([...bf16]);
  });
});
