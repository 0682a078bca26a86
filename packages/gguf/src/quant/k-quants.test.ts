import { describe, expect, it } from "vitest";
import { GgmlType } from "../ggml-types.js";
import { dequantize, f16ToF32, f32ToF16, quantize } from "./index.js";
import { scalesQ3K } from "./k-dequant.js";

/** `block` copied to byte offset 5 of a larger buffer, returned as an unaligned subarray. */
function unaligned(block: Uint8Array): Uint8Array {
  const buf = new Uint8Array(block.length + 8);
  buf.set(block, 5);
  return buf.subarray(5, 5 + block.length);
}

describe("Q2_K known answers", () => {
  // { u8 scales[16] @0; u8 qs[64] @16; f16 d @80; f16 dmin @82 }; y = d·(sc & 15)·q − dmin·(sc >> 4)
  const b = new Uint8Array(84);
  b.set([0x00, 0x3c, 0x00, 0x38], 80); // d = 1, dmin = 0.5
  b[0] = 0x21; // sub-block 0: scale 1, min 2
  b[1] = 0x13; // sub-block 1: scale 3, min 1
  b[2] = 0x4f; // sub-block 2: scale 15, min 4
  b[6] = 0x02; // sub-block 6: scale 2, min 0
  b[8] = 0xf1; // sub-block 8: scale 1, min 15
  b[15] = 0x37; // sub-block 15: scale 7, min 3
  b[16 + 0] = 0xe4; // qs[0] = 0b11_10_01_00: 2-bit fields 0, 1, 2, 3 for shifts 0, 2, 4, 6
  b[16 + 16] = 0x03; // qs[16]: 3 at shift 0
  b[16 + 32] = 0x02; // qs[32] (second half): 2 at shift 0
  b[16 + 63] = 0xc0; // qs[63]: 3 at shift 6
  it("walks halves, shifts and 16-element sub-blocks in ggml order", () => {
    const y = dequantize(GgmlType.Q2_K, unaligned(b), 256);
    expect(y[0]).toBe(-1); // sub 0, qs[0] shift 0 → 0: 1·1·0 − 0.5·2
    expect(y[16]).toBe(8.5); // sub 1, qs[16] shift 0 → 3: 1·3·3 − 0.5·1
    expect(y[32]).toBe(13); // sub 2, qs[0] shift 2 → 1: 15·1 − 0.5·4
    expect(y[96]).toBe(6); // sub 6, qs[0] shift 6 → 3: 2·3 − 0
    expect(y[128]).toBe(-5.5); // sub 8, qs[32] shift 0 → 2: 1·2 − 0.5·15
    expect(y[255]).toBe(19.5); // sub 15, qs[63] shift 6 → 3: 7·3 − 0.5·3
    expect(y[17]).toBe(-0.5); // sub 1, qs[17] = 0: 0 − 0.5·1
  });
});

describe("Q3_K known answers", () => {
  // { u8 hmask[32] @0; u8 qs[64] @32; u8 scales[12] @96; f16 d @108 }
  // y = d·(scale − 32)·(low2 − (hmask bit ? 0 : 4)).
  const b = new Uint8Array(110);
  b.set([0x00, 0x38], 108); // d = 0.5
  // Six-bit scales (biased by 32) chosen: s0 = 45, s5 = 20, s10 = 63, s12 = 33, all others 0.
  //   s0 = 0b10_1101: low 13 → byte 0 low nibble; top 2 → byte 8 + 0 bits 0..1.
  //   s5 = 0b01_0100: low 4 → byte 5 low nibble; top 1 → byte 8 + 1 bits 2..3.
  //   s10 = 0b11_1111: low 15 → byte 2 high nibble; top 3 → byte 8 + 2 bits 4..5.
  //   s12 = 0b10_0001: low 1 → byte 4 high nibble; top 2 → byte 8 + 0 bits 6..7.
  b.set([0x0d, 0x00, 0xf0, 0x00, 0x10, 0x04, 0x00, 0x00, 0x82, 0x04, 0x30, 0x00], 96);
  b[0] = 0x41; // hmask[0]: bit 0 (element 0) and bit 6 (element 192)
  b[16] = 0x04; // hmask[16]: bit 2 (element 80)
  b[31] = 0x00; // hmask[31]: bit 7 clear (element 255)
  b[32 + 0] = 0x22; // qs[0]: 2 at shift 0 (element 0), 2 at shift 4 (element 64)
  b[32 + 16] = 0x30; // qs[16]: 3 at shift 4 (element 80)
  b[32 + 33] = 0x04; // qs[33]: 1 at shift 2 (element 161)
  b[32 + 32] = 0x20; // qs[32]: 2 at shift 4 (element 192)
  b[32 + 63] = 0xc0; // qs[63]: 3 at shift 6 (element 255)
  it("unpacks six-bit scales and the high-bit mask", () => {
    const y = dequantize(GgmlType.Q3_K, unaligned(b), 256);
    expect(y[0]).toBe(13); // s0 − 32 = 13, q = 2 (hmask set): 0.5·13·2
    expect(y[1]).toBe(-26); // s0, q = 0 − 4 (hmask clear): 0.5·13·−4
    expect(y[64]).toBe(32); // sub 4 (s4 = 0 → −32), qs[0] shift 4 → 2, hmask[0] bit 2 clear: 0.5·−32·(2 − 4)
    expect(y[80]).toBe(-18); // sub 5 (20 − 32 = −12), qs[16] shift 4 → 3, hmask[16] bit 2 set: 0.5·−12·3
    expect(y[161]).toBe(-46.5); // sub 10 (63 − 32 = 31), qs[33] shift 2 → 1, hmask[1] bit 5 clear: 0.5·31·−3
    expect(y[192]).toBe(1); // sub 12 (33 − 32 = 1), qs[32] shift 4 → 2, hmask[0] bit 6 set: 0.5·1·2
    expect(y[255]).toBe(16); // sub 15 (0 − 32), qs[63] shift 6 → 3, hmask[31] bit 7 clear: 0.5·−32·−1
    expect(y[128]).toBe(64); // sub 8 (−32), all zero bits: 0.5·−32·−4
  });

  it("agrees with a word-wise (kmask) unpacking of the scales on random blocks", () => {
    // Independent formulation: the 12 bytes as three little-endian u32 words a0, a1, a2; the
    // four bytes of w0..w3 are scales 0..3, 4..7, 8..11, 12..15.
    let seed = 12345;
    const rnd = (): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed >>> 24;
    };
    for (let t = 0; t < 50; t++) {
      const blk = Uint8Array.from({ length: 110 }, rnd);
      blk.set([0x00, 0x3c], 108); // d = 1
      const v = new DataView(blk.buffer, 96, 12);
      const [a0, a1, a2] = [v.getUint32(0, true), v.getUint32(4, true), v.getUint32(8, true)];
      const k1 = 0x03030303;
      const k2 = 0x0f0f0f0f;
      const words = [
        (a0 & k2) | (((a2 >>> 0) & k1) << 4),
        (a1 & k2) | (((a2 >>> 2) & k1) << 4),
        ((a0 >>> 4) & k2) | (((a2 >>> 4) & k1) << 4),
        ((a1 >>> 4) & k2) | (((a2 >>> 6) & k1) << 4),
      ];
      const scale = (i: number): number => ((words[i >> 2]! >>> (8 * (i & 3))) & 0xff) - 32;
      const y = dequantize(GgmlType.Q3_K, blk, 256);
      for (let n = 0; n < 256; n++) {
        const sub = n >> 4; // sub-blocks of 16 in element order
        const h = n >> 7; // 128-half
        const step = (n >> 5) & 3; // shift step within the half
        const l = n & 31; // byte within the 32-byte window
        const low = (blk[32 + 32 * h + l]! >> (2 * step)) & 3;
        const high = (blk[l]! >> (4 * h + step)) & 1;
        expect(y[n]).toBe(scale(sub) * (low - (high ? 0 : 4)));
      }
    }
  });
});

// Q4_K and Q5_K share the 12-byte scale/min packing. Values chosen to cover j < 4 and j ≥ 4
// and six-bit values above 15 and above 31:
//   sc = [1, 17, 40, 63, 5, 33, 18, 60], mn = [2, 0, 50, 1, 47, 16, 3, 63]
// bytes 0..3 = sc[j] | (sc[j+4] >> 4) << 6: 1|0, 17|2<<6, 40|1<<6, 63|3<<6 = 01 91 68 FF
// bytes 4..7 = mn[j] | (mn[j+4] >> 4) << 6: 2|2<<6, 0|1<<6, 50|0, 1|3<<6     = 82 40 32 C1
// bytes 8..11 = (sc[j+4] & 15) | (mn[j+4] & 15) << 4: 5|15<<4, 1|0, 2|3<<4, 12|15<<4 = F5 01 32 FC
const K4_SCALES = [0x01, 0x91, 0x68, 0xff, 0x82, 0x40, 0x32, 0xc1, 0xf5, 0x01, 0x32, 0xfc];

describe("Q4_K known answers", () => {
  // { f16 d @0; f16 dmin @2; u8 scales[12] @4; u8 qs[128] @16 }; y = d·sc·q − dmin·m
  const b = new Uint8Array(144);
  b.set([0x00, 0x3c, 0x00, 0x38], 0); // d = 1, dmin = 0.5
  b.set(K4_SCALES, 4);
  b[16 + 0] = 0x37; // element 0 → 7 (low), element 32 → 3 (high)
  b[16 + 37] = 0x01; // element 69 → 1 (chunk 1 low, l = 5)
  b[16 + 63] = 0xf0; // element 127 → 15 (chunk 1 high, l = 31)
  b[16 + 64] = 0x42; // element 128 → 2, element 160 → 4
  b[16 + 127] = 0x90; // element 255 → 9 (chunk 3 high, l = 31); element 223 → 0
  it("unpacks scales/mins and nibble halves", () => {
    const y = dequantize(GgmlType.Q4_K, unaligned(b), 256);
    expect(y[0]).toBe(6); // sub 0 (sc 1, m 2): 1·7 − 0.5·2
    expect(y[32]).toBe(51); // sub 1 (17, 0): 17·3
    expect(y[69]).toBe(15); // sub 2 (40, 50): 40·1 − 25
    expect(y[127]).toBe(944.5); // sub 3 (63, 1): 63·15 − 0.5
    expect(y[128]).toBe(-13.5); // sub 4 (5, 47): 5·2 − 23.5
    expect(y[160]).toBe(124); // sub 5 (33, 16): 33·4 − 8
    expect(y[192]).toBe(-1.5); // sub 6 (18, 3): 0 − 1.5
    expect(y[255]).toBe(508.5); // sub 7 (60, 63): 60·9 − 31.5
  });
});

describe("Q5_K known answers", () => {
  // { f16 d @0; f16 dmin @2; u8 scales[12] @4; u8 qh[32] @16; u8 qs[128] @48 }
  const b = new Uint8Array(176);
  b.set([0x00, 0x38, 0x00, 0x3c], 0); // d = 0.5, dmin = 1
  b.set(K4_SCALES, 4);
  b[16 + 0] = 0x01; // qh[0]: bit 0 (element 0); bit 1 (element 32) and bit 7 (element 224) clear
  b[16 + 2] = 0x10; // qh[2]: bit 4 (element 130, chunk 2 low)
  b[16 + 31] = 0x82; // qh[31]: bit 1 (element 63) and bit 7 (element 255)
  b[48 + 0] = 0x37; // element 0 → 7, element 32 → 3
  b[48 + 31] = 0xf0; // element 63 → 15 (high), element 31 → 0
  b[48 + 127] = 0x10; // element 255 → 1 (high nibble)
  it("adds the fifth bit from qh per chunk and half", () => {
    const y = dequantize(GgmlType.Q5_K, unaligned(b), 256);
    expect(y[0]).toBe(9.5); // sub 0: (7 | 16) = 23: 0.5·1·23 − 2
    expect(y[32]).toBe(25.5); // sub 1: 3: 0.5·17·3
    expect(y[63]).toBe(263.5); // sub 1: (15 | 16) = 31: 0.5·17·31
    expect(y[130]).toBe(-7); // sub 4: (0 | 16) = 16: 0.5·5·16 − 47
    expect(y[224]).toBe(-63); // sub 7: 0: 0 − 63
    expect(y[255]).toBe(447); // sub 7: (1 | 16) = 17: 0.5·60·17 − 63
  });
});

describe("Q6_K known answers", () => {
  // { u8 ql[128] @0; u8 qh[64] @128; i8 scales[16] @192; f16 d @208 }
  const b = new Uint8Array(210);
  b.set([0x00, 0x38], 208); // d = 0.5
  b[192 + 0] = 2;
  b[192 + 1] = 0xfd; // −3
  b[192 + 2] = 1;
  b[192 + 4] = 0x80; // −128
  b[192 + 6] = 127;
  b[192 + 9] = 4;
  b[192 + 15] = 0xff; // −1
  b[0] = 0x5a; // ql[0]: a & 15 = 10, a >> 4 = 5
  b[32] = 0xc3; // ql[32]: b & 15 = 3, b >> 4 = 12
  b[128 + 0] = 0x9c; // qh[0] = 0b10_01_11_00: fields 0, 3, 1, 2
  b[16] = 0x0f; // ql[16] → element 16 low 15
  b[128 + 16] = 0x03; // qh[16] field 0 = 3
  b[127] = 0xf0; // ql[127] high nibble 15 → element 255
  b[128 + 32 + 31] = 0xc0; // qh[95] field 3 = 3 → element 255
  it("decodes the four interleaved quarters with signed scales", () => {
    const y = dequantize(GgmlType.Q6_K, unaligned(b), 256);
    expect(y[0]).toBe(-22); // (10 | 0<<4) − 32 = −22; 0.5·2·−22
    expect(y[32]).toBe(9.5); // (3 | 3<<4) − 32 = 19; 0.5·1·19
    expect(y[64]).toBe(704); // (5 | 1<<4) − 32 = −11; 0.5·−128·−11
    expect(y[96]).toBe(762); // (12 | 2<<4) − 32 = 12; 0.5·127·12
    expect(y[16]).toBe(-46.5); // (15 | 3<<4) − 32 = 31; 0.5·−3·31
    expect(y[255]).toBe(-15.5); // (15 | 3<<4) − 32 = 31; 0.5·−1·31
    expect(y[159]).toBe(-64); // ql[95] = 0, qh[95] field 0 = 0 → −32; 0.5·4·−32
    expect(y[1]).toBe(-32); // all-zero bits → −32; 0.5·2·−32
  });
});

// ---- Q2_K and Q3_K quantizers (k-quant-low.ts) --------------------------------------------------

/** `n` N(0, 1)·scale samples from a seeded LCG (Box–Muller). */
function gaussian(n: number, seed: number, scale = 1): Float32Array {
  let s = seed >>> 0;
  const rnd = (): number => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
  return Float32Array.from(
    { length: n },
    () => scale * Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd()),
  );
}

/** RMS(decode(encode(x)) − x) / RMS(x). */
function relRms(id: number, x: Float32Array): number {
  const y = dequantize(id, quantize(id, x), x.length);
  let se = 0;
  let sx = 0;
  for (let i = 0; i < x.length; i++) {
    se += (y[i]! - x[i]!) ** 2;
    sx += x[i]! ** 2;
  }
  return Math.sqrt(se / sx);
}

/**
 * The levels sub-block `sub` of block `b` (at byte `o`) can decode to, computed from the block's
 * fields as ggml's dequantize_row does (f32 products), independently of the quantizer.
 */
function levels(type: "Q2_K" | "Q3_K", b: Uint8Array, o: number, sub: number): number[] {
  const fr = Math.fround;
  if (type === "Q2_K") {
    const d = f16ToF32(b[o + 80]! | (b[o + 81]! << 8));
    const dmin = f16ToF32(b[o + 82]! | (b[o + 83]! << 8));
    const dl = fr(d * (b[o + sub]! & 15));
    const ml = fr(dmin * (b[o + sub]! >> 4));
    return [0, 1, 2, 3].map((q) => fr(fr(dl * q) - ml));
  }
  const d = f16ToF32(b[o + 108]! | (b[o + 109]! << 8));
  const dl = fr(d * scalesQ3K(b, o + 96)[sub]!);
  return [-4, -3, -2, -1, 0, 1, 2, 3].map((q) => fr(dl * q));
}

describe.each([
  ["Q2_K", 84, 0.286],
  ["Q3_K", 110, 0.157],
] as const)("%s quantizer", (name, typeSize, bound) => {
  const id = GgmlType[name];

  it("decodes every element to the nearest level its sub-block's stored scales offer", () => {
    const x = gaussian(256 * 16, 11);
    const b = quantize(id, x);
    const y = dequantize(id, b, x.length);
    for (let n = 0; n < x.length; n++) {
      const ls = levels(name, b, typeSize * (n >> 8), (n >> 4) & 15);
      expect(ls).toContain(y[n]);
      const nearest = Math.min(...ls.map((l) => Math.abs(l - x[n]!)));
      expect(Math.abs(y[n]! - x[n]!)).toBeLessThanOrEqual(nearest + 1e-6);
    }
  });

  it("comes back close on data a block represents exactly (decoded random valid blocks)", () => {
    // Random bits are valid blocks once the f16 scales are sane. The search need not find the
    // exact codes (it does for 48 of these 100 Q2_K blocks and 19 Q3_K ones), but it must get
    // near them: the worst measured 0.033 (Q2_K) and 0.036 (Q3_K), against 0.26 and 0.14 on N(0, 1).
    let s = 7;
    const rnd = (): number => {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      return s >>> 24;
    };
    const blocks = Uint8Array.from({ length: 100 * typeSize }, rnd);
    const dv = new DataView(blocks.buffer);
    for (let o = 0; o < blocks.length; o += typeSize) {
      if (name === "Q2_K") {
        dv.setUint16(o + 80, f32ToF16(0.05 + rnd() / 2560), true); // d
        dv.setUint16(o + 82, f32ToF16(rnd() / 2560), true); // dmin
      } else {
        dv.setUint16(o + 108, f32ToF16(0.01 + rnd() / 5120), true); // d
      }
    }
    const x = dequantize(id, blocks, 100 * 256);
    for (let i = 0; i < 100; i++) expect(relRms(id, x.subarray(256 * i, 256 * i + 256))).toBeLessThan(0.06);
  });

  it("keeps its error bound from tiny to large magnitudes", () => {
    for (const scale of [1e-3, 1, 1e4]) {
      expect(relRms(id, gaussian(256 * 8, 5, scale))).toBeLessThanOrEqual(bound);
    }
  });

  it("fits a sub-block 1000× larger than its neighbours, and decodes the rest finite", () => {
    const x = gaussian(256, 9);
    for (let j = 48; j < 64; j++) x[j]! *= 1000; // sub-block 3
    const y = dequantize(id, quantize(id, x), 256);
    expect(y.every(Number.isFinite)).toBe(true);
    let se = 0;
    let sx = 0;
    for (let j = 48; j < 64; j++) {
      se += (y[j]! - x[j]!) ** 2;
      sx += x[j]! ** 2;
    }
    expect(Math.sqrt(se / sx)).toBeLessThanOrEqual(bound);
  });

  it("reproduces zeros exactly and constant blocks of either sign within f16 precision", () => {
    expect([...dequantize(id, quantize(id, new Float32Array(256)), 256)].every((v) => v === 0)).toBe(true);
    for (const c of [0.75, -0.75, 0.01, -40]) {
      const y = dequantize(id, quantize(id, new Float32Array(256).fill(c)), 256);
      for (const v of y) expect(Math.abs(v - c)).toBeLessThanOrEqual(Math.abs(c) * 1e-3);
    }
  });
});
