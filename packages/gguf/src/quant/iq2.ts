// Dequantizers for the 2-bit i-quants IQ2_XXS, IQ2_XS and IQ2_S (ggml-common.h block_iq2_xxs,
// block_iq2_xs, block_iq2_s; 256 elements per block). All three cut a block into eight groups of
// 32 elements and each group into four rows of 8: a row is one entry of a lattice grid (8
// magnitudes from {8, 25, 43}) plus 8 signs, times the group's scale. They differ in how large
// the grid is and in how the row's grid index, signs and scale are packed. Little-endian; d is
// IEEE half. Results are rounded to f32 where ggml computes in float, so they match it bit for bit.
//
// Where the signs come as a 7-bit index into ksigns_iq2xs (IQ2_XXS, IQ2_XS), the eighth sign is
// implied: the table gives every row an even number of negated elements.
import { f16ToF32, readU16 } from "./f16.js";
import { lazyGrid, putSignedRow, readU32 } from "./iq-common.js";
import { IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, KSIGNS_IQ2XS } from "./iq-grids.js";

const fr = Math.fround;

const iq2xxsGrid = lazyGrid(IQ2XXS_GRID, 8, 256);
const iq2xsGrid = lazyGrid(IQ2XS_GRID, 8, 512);
const iq2sGrid = lazyGrid(IQ2S_GRID, 8, 1024);

/** A group's row scale from its 4-bit scale field s: d·(s + ½)/4, rounded as ggml does it. */
function groupScale(d: number, s: number): number {
  return fr(fr(d * (0.5 + s)) * 0.25);
}

/**
 * IQ2_XXS — 256 elements, 66 bytes: { f16 d @0; u8 q[64] @2 }. Group g (32 elements) is the 8
 * bytes at 2 + 8g: bytes 0..3 are the iq2xxs_grid indices of rows 0..3; the u32 at byte 4 holds
 * row l's 7-bit sign index in bits 7l..7l+6 and the group's scale s in bits 28..31.
 */
export function dequantizeIQ2_XXS(src: Uint8Array, out: Float32Array): void {
  const grid = iq2xxsGrid();
  const nb = out.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 66;
    const d = f16ToF32(readU16(src, o));
    for (let g = 0; g < 8; g++) {
      const q = o + 2 + 8 * g;
      const aux = readU32(src, q + 4);
      const db = groupScale(d, aux >>> 28);
      for (let l = 0; l < 4; l++) {
        const signs = KSIGNS_IQ2XS[(aux >>> (7 * l)) & 127];
        putSignedRow(out, i * 256 + 32 * g + 8 * l, db, grid, 8 * src[q + l], 8, signs, 0);
      }
    }
  }
}

/**
 * IQ2_XS — 256 elements, 74 bytes: { f16 d @0; u16 qs[32] @2; u8 scales[8] @66 }. Row r (= 4g + l)
 * is qs[r]: bits 0..8 index iq2xs_grid, bits 9..15 are the sign index. Group g's scales[g] holds
 * two scales: the low nibble for rows 0 and 1, the high nibble for rows 2 and 3.
 */
export function dequantizeIQ2_XS(src: Uint8Array, out: Float32Array): void {
  const grid = iq2xsGrid();
  const nb = out.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 74;
    const d = f16ToF32(readU16(src, o));
    for (let g = 0; g < 8; g++) {
      const sc = src[o + 66 + g];
      const db01 = groupScale(d, sc & 15);
      const db23 = groupScale(d, sc >> 4);
      for (let l = 0; l < 4; l++) {
        const qs = readU16(src, o + 2 + 2 * (4 * g + l));
        const signs = KSIGNS_IQ2XS[qs >> 9];
        putSignedRow(out, i * 256 + 32 * g + 8 * l, l < 2 ? db01 : db23, grid, 8 * (qs & 511), 8, signs, 0);
      }
    }
  }
}

/**
 * IQ2_S — 256 elements, 82 bytes: { f16 d @0; u8 qs[32] @2; u8 signs[32] @34; u8 qh[8] @66;
 * u8 scales[8] @74 } (ggml declares qs[64] and reads its second half as the signs). Row r (= 4g + l)
 * indexes iq2s_grid with qs[r] plus bits 2l..2l+1 of qh[g] as bits 8..9; its signs are the plain
 * byte signs[r] (all 8 explicit). Scales as IQ2_XS.
 */
export function dequantizeIQ2_S(src: Uint8Array, out: Float32Array): void {
  const grid = iq2sGrid();
  const nb = out.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 82;
    const d = f16ToF32(readU16(src, o));
    for (let g = 0; g < 8; g++) {
      const sc = src[o + 74 + g];
      const db01 = groupScale(d, sc & 15);
      const db23 = groupScale(d, sc >> 4);
      const qh = src[o + 66 + g];
      for (let l = 0; l < 4; l++) {
        const r = 4 * g + l;
        const index = src[o + 2 + r] | (((qh >> (2 * l)) & 3) << 8);
        putSignedRow(out, i * 256 + 8 * r, l < 2 ? db01 : db23, grid, 8 * index, 8, src[o + 34 + r], 0);
      }
    }
  }
}
