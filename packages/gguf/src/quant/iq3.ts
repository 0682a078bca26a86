// Dequantizers for the 3-bit i-quants IQ3_XXS and IQ3_S (ggml-common.h block_iq3_xxs,
// block_iq3_s; 256 elements per block). As for the 2-bit i-quants (iq2.ts) a block is eight
// groups of 32 elements, each four rows of 8, but a row is two grid entries of 4 magnitudes each,
// sharing one sign byte (bits 0..3 sign the first entry, bits 4..7 the second). Little-endian;
// d is IEEE half. Results are rounded to f32 where ggml computes in float, so they match it bit
// for bit.
import { f16ToF32, readU16 } from "./f16.js";
import { lazyGrid, putSignedRow, readU32 } from "./iq-common.js";
import { IQ3S_GRID, IQ3XXS_GRID, KSIGNS_IQ2XS } from "./iq-grids.js";

const fr = Math.fround;

const iq3xxsGrid = lazyGrid(IQ3XXS_GRID, 4, 256);
const iq3sGrid = lazyGrid(IQ3S_GRID, 4, 512);

/**
 * IQ3_XXS — 256 elements, 98 bytes: { f16 d @0; u8 qs[64] @2; u32 scales_and_signs[8] @66 }
 * (ggml declares one u8 qs[96] and reads its last 32 bytes as the eight u32). Group g's row l
 * is iq3xxs_grid entries qs[8g + 2l] and qs[8g + 2l + 1]; the u32 at 66 + 4g holds row l's 7-bit
 * sign index (into ksigns_iq2xs) in bits 7l..7l+6 and the group's scale s in bits 28..31.
 * y = d·(s + ½)/2 · grid · sign.
 */
export function dequantizeIQ3_XXS(src: Uint8Array, out: Float32Array): void {
  const grid = iq3xxsGrid();
  const nb = out.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 98;
    const d = f16ToF32(readU16(src, o));
    for (let g = 0; g < 8; g++) {
      const aux = readU32(src, o + 66 + 4 * g);
      const db = fr(fr(d * (0.5 + (aux >>> 28))) * 0.5);
      for (let l = 0; l < 4; l++) {
        const signs = KSIGNS_IQ2XS[(aux >>> (7 * l)) & 127];
        const q = o + 2 + 8 * g + 2 * l;
        const y = i * 256 + 32 * g + 8 * l;
        putSignedRow(out, y, db, grid, 4 * src[q], 4, signs, 0);
        putSignedRow(out, y + 4, db, grid, 4 * src[q + 1], 4, signs, 4);
      }
    }
  }
}

/**
 * IQ3_S — 256 elements, 110 bytes: { f16 d @0; u8 qs[64] @2; u8 qh[8] @66; u8 signs[32] @74;
 * u8 scales[4] @106 }. Group g's k-th grid entry (k = 0..7, two per row) is iq3s_grid index
 * qs[8g + k] with bit k of qh[g] as bit 8. Row l's signs are the plain byte signs[4g + l]. The
 * group's 4-bit scale s is nibble (g mod 2) of scales[⌊g/2⌋]. y = d·(2s + 1) · grid · sign.
 */
export function dequantizeIQ3_S(src: Uint8Array, out: Float32Array): void {
  const grid = iq3sGrid();
  const nb = out.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 110;
    const d = f16ToF32(readU16(src, o));
    for (let g = 0; g < 8; g++) {
      const s = (src[o + 106 + (g >> 1)] >> (4 * (g & 1))) & 15;
      const db = fr(d * (2 * s + 1));
      const qh = src[o + 66 + g];
      for (let l = 0; l < 4; l++) {
        const k = 2 * l;
        const q = o + 2 + 8 * g + k;
        const first = src[q] | (((qh >> k) & 1) << 8);
        const second = src[q + 1] | (((qh >> (k + 1)) & 1) << 8);
        const signs = src[o + 74 + 4 * g + l];
        const y = i * 256 + 32 * g + 8 * l;
        putSignedRow(out, y, db, grid, 4 * first, 4, signs, 0);
        putSignedRow(out, y + 4, db, grid, 4 * second, 4, signs, 4);
      }
    }
  }
}
