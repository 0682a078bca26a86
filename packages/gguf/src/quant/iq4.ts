// Dequantizers for the non-linear 4-bit formats IQ4_NL and IQ4_XS (ggml-common.h block_iq4_nl,
// block_iq4_xs). A 4-bit code selects one of 16 unevenly spaced levels (kvalues_iq4nl, denser
// near zero) instead of an evenly spaced integer. Little-endian; d is IEEE half.
// Results are rounded to f32 where ggml computes in float, so they match it bit for bit.
import { f16ToF32, readU16 } from "./f16.js";
import { KVALUES_IQ4NL } from "./iq-grids.js";

const fr = Math.fround;

/**
 * IQ4_NL — 32 elements, 18 bytes: { f16 d @0; u8 qs[16] @2 }. Nibble order as Q4_0: byte j holds
 * element j in its low nibble and element j + 16 in its high nibble. y = d·kvalues[q].
 */
export function dequantizeIQ4_NL(src: Uint8Array, out: Float32Array): void {
  const nb = out.length / 32;
  for (let i = 0; i < nb; i++) {
    const o = i * 18;
    const y = i * 32;
    const d = f16ToF32(readU16(src, o));
    for (let j = 0; j < 16; j++) {
      const b = src[o + 2 + j];
      out[y + j] = d * KVALUES_IQ4NL[b & 15];
      out[y + j + 16] = d * KVALUES_IQ4NL[b >> 4];
    }
  }
}

/**
 * IQ4_XS — 256 elements, 136 bytes: { f16 d @0; u16 scales_h @2; u8 scales_l[4] @4; u8 qs[128] @8 }.
 * Eight sub-blocks of 32, each with a 6-bit scale stored with a +32 bias: its low 4 bits are
 * nibble (ib mod 2) of scales_l[⌊ib/2⌋], its top 2 bits are bits 2ib..2ib+1 of scales_h.
 * Sub-block ib's 16 bytes qs[16ib..16ib+15] are laid out as one IQ4_NL block's.
 * y = d·(scale − 32)·kvalues[q].
 */
export function dequantizeIQ4_XS(src: Uint8Array, out: Float32Array): void {
  const nb = out.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 136;
    const d = f16ToF32(readU16(src, o));
    const scalesH = readU16(src, o + 2);
    for (let ib = 0; ib < 8; ib++) {
      const low = (src[o + 4 + (ib >> 1)] >> (4 * (ib & 1))) & 15;
      const high = (scalesH >> (2 * ib)) & 3;
      const dl = fr(d * ((low | (high << 4)) - 32));
      const q = o + 8 + 16 * ib;
      const y = i * 256 + 32 * ib;
      for (let j = 0; j < 16; j++) {
        out[y + j] = dl * KVALUES_IQ4NL[src[q + j] & 15];
        out[y + j + 16] = dl * KVALUES_IQ4NL[src[q + j] >> 4];
      }
    }
  }
}
