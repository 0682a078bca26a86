// Dequantizers for the 1-bit i-quants IQ1_S and IQ1_M (ggml-common.h block_iq1_s, block_iq1_m;
// 256 elements per block). A block is eight groups of 32 elements, each four rows of 8; a row is
// one entry of iq1s_grid (8 values from {−1, 0, 1}, selected by an 11-bit index) shifted by
// ±IQ1S_DELTA and scaled: y = dl·(grid + delta) with dl = d·(2s + 1) for a 3-bit scale s. There
// are no per-element signs. Little-endian; d is IEEE half. Results are rounded to f32 where ggml
// computes in float, so they match it bit for bit.
import { f16ToF32, readU16 } from "./f16.js";
import { lazyGrid } from "./iq-common.js";
import { IQ1M_DELTA, IQ1S_DELTA, IQ1S_GRID } from "./iq-grids.js";

const fr = Math.fround;

const iq1sGrid = lazyGrid(IQ1S_GRID, 8, 2048);

/** The grid's bytes read as signed values (0xff is −1). */
let signedGrid: Int8Array | undefined;
function iq1Grid(): Int8Array {
  if (!signedGrid) {
    const bytes = iq1sGrid();
    signedGrid = new Int8Array(bytes.buffer, bytes.byteOffset, bytes.length);
  }
  return signedGrid;
}

/** out[y..y+8) = dl·(grid entry `index` + delta); grid + delta is exact, the product rounds once. */
function putRow(out: Float32Array, y: number, dl: number, index: number, delta: number): void {
  const grid = iq1Grid();
  for (let j = 0; j < 8; j++) out[y + j] = dl * (grid[8 * index + j] + delta);
}

/**
 * IQ1_S — 256 elements, 50 bytes: { f16 d @0; u8 qs[32] @2; u16 qh[8] @34 }. Group g: row l's grid
 * index is qs[4g + l] with bits 3l..3l+2 of qh[g] as bits 8..10; bits 12..14 of qh[g] are the
 * group's scale s and bit 15 the sign of its delta (set: −IQ1S_DELTA).
 */
export function dequantizeIQ1_S(src: Uint8Array, out: Float32Array): void {
  const nb = out.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 50;
    const d = f16ToF32(readU16(src, o));
    for (let g = 0; g < 8; g++) {
      const qh = readU16(src, o + 34 + 2 * g);
      const dl = fr(d * (2 * ((qh >> 12) & 7) + 1));
      const delta = qh & 0x8000 ? -IQ1S_DELTA : IQ1S_DELTA;
      for (let l = 0; l < 4; l++) {
        const index = src[o + 2 + 4 * g + l] | (((qh >> (3 * l)) & 7) << 8);
        putRow(out, i * 256 + 32 * g + 8 * l, dl, index, delta);
      }
    }
  }
}

/**
 * IQ1_M's block scale d: an f16 with no field of its own, whose four nibbles (lowest first) are
 * the top nibbles (bits 12..15) of the four u16 words of `scales` at `o`.
 */
function iq1mScale(src: Uint8Array, o: number): number {
  let bits = 0;
  for (let k = 0; k < 4; k++) bits |= (readU16(src, o + 2 * k) >> 12) << (4 * k);
  return f16ToF32(bits);
}

/**
 * IQ1_M — 256 elements, 56 bytes: { u8 qs[32] @0; u8 qh[16] @32; u16 scales[4] @48 }. Rows are
 * finer-grained than IQ1_S: row l of group g takes nibble (l mod 2) of qh[2g + ⌊l/2⌋], whose bits
 * 0..2 are bits 8..10 of its grid index (low bits qs[4g + l]) and bit 3 the sign of its delta. The
 * 3-bit row scales, two per row pair, sit in the low 12 bits of scales[⌊g/2⌋]: for group g, at
 * bit 6·(g mod 2) for rows 0 and 1, 3 bits higher for rows 2 and 3. The top nibbles are d
 * ({@link iq1mScale}).
 */
export function dequantizeIQ1_M(src: Uint8Array, out: Float32Array): void {
  const nb = out.length / 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 56;
    const d = iq1mScale(src, o + 48);
    for (let g = 0; g < 8; g++) {
      const sc = readU16(src, o + 48 + 2 * (g >> 1));
      const shift = 6 * (g & 1);
      const dl01 = fr(d * (2 * ((sc >> shift) & 7) + 1));
      const dl23 = fr(d * (2 * ((sc >> (shift + 3)) & 7) + 1));
      for (let l = 0; l < 4; l++) {
        const nibble = (src[o + 32 + 2 * g + (l >> 1)] >> (4 * (l & 1))) & 15;
        const index = src[o + 4 * g + l] | ((nibble & 7) << 8);
        const delta = nibble & 8 ? -IQ1M_DELTA : IQ1M_DELTA;
        putRow(out, i * 256 + 32 * g + 8 * l, l < 2 ? dl01 : dl23, index, delta);
      }
    }
  }
}
