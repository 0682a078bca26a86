// Dequantizers for the ternary formats TQ1_0 and TQ2_0 (ggml-common.h block_tq1_0, block_tq2_0;
// 256 elements per block): every element is −d, 0 or +d, stored as a digit t ∈ {0, 1, 2} with
// y = (t − 1)·d. Little-endian; d is IEEE half.

import { f16ToF32, readU16 } from "./f16.js";

/**
 * Digit n (0 = most significant) of the base-3 number a TQ1_0 byte packs. The byte stores
 * ⌈v·256/243⌉ for the packed number v, i.e. v as a fraction of 3^5 in units of 1/256: multiplying
 * by 3^n modulo 256 (u8 arithmetic, as ggml does) drops the n leading digits, and the next digit
 * is then the integer part of 3·(byte/256). Any byte decodes, including the unused 243..255.
 */
function trit(byte: number, n: number): number {
  const shifted = (byte * 3 ** n) & 255;
  return (shifted * 3) >> 8;
}

/**
 * TQ1_0 — 256 elements, 54 bytes: { u8 qs[48] @0; u8 qh[4] @48; f16 d @52 }. qs[0..31] hold five
 * digits each: digit n of byte m is element 32n + m (elements 0..159). qs[32..47] likewise,
 * 16 at a time: element 160 + 16n + m. qh holds four digits each: digit n of qh[m] is element
 * 240 + 4n + m.
 */
export function dequantizeTQ1_0(src: Uint8Array, out: Float32Array): void {
  const nb = out.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 54;
    const d = f16ToF32(readU16(src, o + 52));
    let y = i * 256;
    // Three runs of bytes: [start, count, digits per byte].
    for (const [start, count, digits] of [
      [0, 32, 5],
      [32, 16, 5],
      [48, 4, 4],
    ]) {
      for (let n = 0; n < digits; n++) {
        for (let m = 0; m < count; m++) out[y++] = (trit(src[o + start + m], n) - 1) * d;
      }
    }
  }
}

/**
 * TQ2_0 — 256 elements, 66 bytes: { u8 qs[64] @0; f16 d @64 }. 2-bit digits, Q2_K's order: for
 * each half h (qs bytes 32h..32h+31), for shift 0, 2, 4, 6, 32 elements from bits
 * [shift, shift+2) of those bytes. The digit value 3 is not produced by ggml's quantizer; it
 * decodes to 2·d.
 */
export function dequantizeTQ2_0(src: Uint8Array, out: Float32Array): void {
  const nb = out.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 66;
    const d = f16ToF32(readU16(src, o + 64));
    let y = i * 256;
    for (let h = 0; h < 2; h++) {
      for (let shift = 0; shift < 8; shift += 2) {
        for (let m = 0; m < 32; m++) out[y++] = (((src[o + 32 * h + m] >> shift) & 3) - 1) * d;
      }
    }
  }
}
