// Dequantizers for the K-quant super-block formats Q2_K .. Q6_K (ggml-common.h block_q2_K ..
// block_q6_K, QK_K = 256 elements per super-block). Little-endian; d/dmin are IEEE half.
// Each kernel reads `out.length / 256` blocks from `src` (any byte alignment) and mirrors the
// element order of ggml's reference `dequantize_row_*`. Arithmetic is rounded to f32 where the C
// code computes in float, so results match it bit for bit (absent FMA contraction in the C build).
import { f16ToF32, readU16 } from "./f16.js";

const fr = Math.fround;

/**
 * Q4_K/Q5_K 6-bit scale and min number `j` (0..7) from the 12 packed bytes at `q[o..o+12)`
 * (ggml's get_scale_min_k4). Bytes 0..3: scale j (j<4) in bits 0..5, top 2 bits of scale j+4 in
 * bits 6..7. Bytes 4..7: min j (j<4) in bits 0..5, top 2 bits of min j+4 in bits 6..7.
 * Bytes 8..11: low 4 bits of scale j+4 (low nibble) and of min j+4 (high nibble).
 */
export function scaleMinK4(j: number, q: Uint8Array, o: number): [scale: number, min: number] {
  if (j < 4) return [q[o + j] & 63, q[o + j + 4] & 63];
  return [(q[o + j + 4] & 15) | ((q[o + j - 4] >> 6) << 4), (q[o + j + 4] >> 4) | ((q[o + j] >> 6) << 4)];
}

/**
 * Q3_K's sixteen 6-bit scales (stored with a +32 bias) from the 12 packed bytes at `q[o..o+12)`.
 * Scale i's low 4 bits: low nibble of byte i for i < 8, high nibble of byte i − 8 for i ≥ 8.
 * Its top 2 bits: bits 2·⌊i/4⌋ .. 2·⌊i/4⌋+1 of byte 8 + (i mod 4). (This is what ggml's
 * kmask1/kmask2 shuffle of the three u32 words computes, and what quantize_row_q3_K_ref writes.)
 */
export function scalesQ3K(q: Uint8Array, o: number): Int32Array {
  const s = new Int32Array(16);
  for (let i = 0; i < 16; i++) {
    const low = i < 8 ? q[o + i] & 15 : q[o + i - 8] >> 4;
    const high = (q[o + 8 + (i % 4)] >> (2 * Math.floor(i / 4))) & 3;
    s[i] = (low | (high << 4)) - 32;
  }
  return s;
}

/**
 * Q2_K — 256 elements, 84 bytes: { u8 scales[16] @0; u8 qs[64] @16; f16 d @80; f16 dmin @82 }.
 * Sub-block k (16 elements) has scale byte scales[k]: low nibble = scale, high nibble = min.
 * Element order: for each 128-half h (qs bytes 32h..32h+31), for shift 0,2,4,6: 16 elements from
 * bits [shift, shift+2) of qs[32h + l] (l < 16), then 16 from qs[32h + 16 + l].
 * y = d·scale·q − dmin·min.
 */
export function dequantizeQ2K(src: Uint8Array, out: Float32Array): void {
  const nb = out.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 84;
    const d = f16ToF32(readU16(src, o + 80));
    const dmin = f16ToF32(readU16(src, o + 82));
    let y = i * 256;
    let k = 0;
    for (let h = 0; h < 2; h++) {
      const q = o + 16 + 32 * h;
      for (let shift = 0; shift < 8; shift += 2) {
        for (let half = 0; half < 2; half++, k++) {
          const sc = src[o + k];
          const dl = fr(d * (sc & 15));
          const ml = fr(dmin * (sc >> 4));
          for (let l = 0; l < 16; l++) out[y++] = fr(dl * ((src[q + 16 * half + l] >> shift) & 3)) - ml;
        }
      }
    }
  }
}

/**
 * Q3_K — 256 elements, 110 bytes: { u8 hmask[32] @0; u8 qs[64] @32; u8 scales[12] @96; f16 d @108 }.
 * Same traversal as Q2_K; the third bit of the element read from byte l (0..31) of the current
 * 32-byte qs window is bit b of hmask[l], where b counts the shift steps over the whole block
 * (0..3 in the first half, 4..7 in the second). q = low2 − (hmask bit ? 0 : 4) ∈ −4..3.
 * y = d·(scale − 32)·q.
 */
export function dequantizeQ3K(src: Uint8Array, out: Float32Array): void {
  const nb = out.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 110;
    const d = f16ToF32(readU16(src, o + 108));
    const scales = scalesQ3K(src, o + 96);
    let y = i * 256;
    let k = 0;
    let bit = 0;
    for (let h = 0; h < 2; h++) {
      const q = o + 32 + 32 * h;
      for (let shift = 0; shift < 8; shift += 2, bit++) {
        for (let half = 0; half < 2; half++, k++) {
          const dl = fr(d * scales[k]);
          for (let l = 16 * half; l < 16 * half + 16; l++) {
            const hi = (src[o + l] >> bit) & 1;
            out[y++] = dl * (((src[q + l] >> shift) & 3) - (hi ? 0 : 4));
          }
        }
      }
    }
  }
}

/**
 * Q4_K — 256 elements, 144 bytes: { f16 d @0; f16 dmin @2; u8 scales[12] @4; u8 qs[128] @16 }.
 * Eight sub-blocks of 32 with 6-bit scale/min (see {@link scaleMinK4}). Chunk c (0..3) of 64
 * elements uses qs[32c..32c+31]: its first 32 elements are the low nibbles (sub-block 2c), the
 * next 32 the high nibbles (sub-block 2c+1). y = d·scale·q − dmin·min.
 */
export function dequantizeQ4K(src: Uint8Array, out: Float32Array): void {
  const nb = out.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 144;
    const d = f16ToF32(readU16(src, o));
    const dmin = f16ToF32(readU16(src, o + 2));
    let y = i * 256;
    for (let c = 0; c < 4; c++) {
      const [s1, m1] = scaleMinK4(2 * c, src, o + 4);
      const [s2, m2] = scaleMinK4(2 * c + 1, src, o + 4);
      const d1 = fr(d * s1);
      const n1 = fr(dmin * m1);
      const d2 = fr(d * s2);
      const n2 = fr(dmin * m2);
      const q = o + 16 + 32 * c;
      for (let l = 0; l < 32; l++) out[y++] = fr(d1 * (src[q + l] & 15)) - n1;
      for (let l = 0; l < 32; l++) out[y++] = fr(d2 * (src[q + l] >> 4)) - n2;
    }
  }
}

/**
 * Q5_K — 256 elements, 176 bytes: { f16 d @0; f16 dmin @2; u8 scales[12] @4; u8 qh[32] @16;
 * u8 qs[128] @48 }. As Q4_K, plus a fifth bit: element l (0..31) of the low-nibble half of chunk c
 * takes bit 2c of qh[l], of the high-nibble half bit 2c+1. y = d·scale·q − dmin·min, q ∈ 0..31.
 */
export function dequantizeQ5K(src: Uint8Array, out: Float32Array): void {
  const nb = out.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 176;
    const d = f16ToF32(readU16(src, o));
    const dmin = f16ToF32(readU16(src, o + 2));
    let y = i * 256;
    for (let c = 0; c < 4; c++) {
      const [s1, m1] = scaleMinK4(2 * c, src, o + 4);
      const [s2, m2] = scaleMinK4(2 * c + 1, src, o + 4);
      const d1 = fr(d * s1);
      const n1 = fr(dmin * m1);
      const d2 = fr(d * s2);
      const n2 = fr(dmin * m2);
      const q = o + 48 + 32 * c;
      for (let l = 0; l < 32; l++) {
        const hi = ((src[o + 16 + l] >> (2 * c)) & 1) << 4;
        out[y++] = fr(d1 * ((src[q + l] & 15) | hi)) - n1;
      }
      for (let l = 0; l < 32; l++) {
        const hi = ((src[o + 16 + l] >> (2 * c + 1)) & 1) << 4;
        out[y++] = fr(d2 * ((src[q + l] >> 4) | hi)) - n2;
      }
    }
  }
}

/**
 * Q6_K — 256 elements, 210 bytes: { u8 ql[128] @0; u8 qh[64] @128; i8 scales[16] @192; f16 d @208 }.
 * Sixteen sub-blocks of 16, scale k for elements 16k..16k+15. For 128-half h and l < 32, with
 * a = ql[64h + l], b = ql[64h + l + 32], c = qh[32h + l], the elements 128h + l + 32·t are
 * t=0: (a & 15) | (c & 3) << 4;  t=1: (b & 15) | (c >> 2 & 3) << 4;
 * t=2: (a >> 4) | (c >> 4 & 3) << 4;  t=3: (b >> 4) | (c >> 6 & 3) << 4;  each minus 32.
 * y = d·scale·q.
 */
export function dequantizeQ6K(src: Uint8Array, out: Float32Array): void {
  const nb = out.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 210;
    const d = f16ToF32(readU16(src, o + 208));
    for (let h = 0; h < 2; h++) {
      const y = i * 256 + 128 * h;
      for (let l = 0; l < 32; l++) {
        const a = src[o + 64 * h + l];
        const b = src[o + 64 * h + l + 32];
        const c = src[o + 128 + 32 * h + l];
        const q1 = ((a & 15) | ((c & 3) << 4)) - 32;
        const q2 = ((b & 15) | (((c >> 2) & 3) << 4)) - 32;
        const q3 = ((a >> 4) | (((c >> 4) & 3) << 4)) - 32;
        const q4 = ((b >> 4) | (((c >> 6) & 3) << 4)) - 32;
        const sc = o + 192 + 8 * h + (l >> 4);
        out[y + l] = fr(d * ((src[sc] << 24) >> 24)) * q1;
        out[y + l + 32] = fr(d * ((src[sc + 2] << 24) >> 24)) * q2;
        out[y + l + 64] = fr(d * ((src[sc + 4] << 24) >> 24)) * q3;
        out[y + l + 96] = fr(d * ((src[sc + 6] << 24) >> 24)) * q4;
      }
    }
  }
}
