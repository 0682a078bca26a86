// Quantizers for IQ3_XXS and IQ3_S (layouts: see iq3.ts): the search of iq-grid-fit.ts over their
// grids, then the packing. Rows there are 4 values (one grid entry); a row of 8 signs covers two.
import { writeU16 } from "./f16.js";
import { lazyGrid } from "./iq-common.js";
import { FIT, fitBlock, type GridFormat } from "./iq-grid-fit.js";
import { IQ3S_GRID, IQ3XXS_GRID } from "./iq-grids.js";
import { buildLattice } from "./iq-lattice.js";

const iq3xxsGrid = lazyGrid(IQ3XXS_GRID, 4, 256);
const iq3sGrid = lazyGrid(IQ3S_GRID, 4, 512);

let xxs: GridFormat | undefined;
let s: GridFormat | undefined;

/** IQ3_XXS: y = d·(c + ½)/2 · grid; 7 sign bits per 8 (even parity). */
function xxsFormat(): GridFormat {
  xxs ??= { lattice: buildLattice(iq3xxsGrid(), 4, 3), group: 32, paritySigns: true, mult: 0.25 };
  return xxs;
}

/** IQ3_S: y = d·(2c + 1) · grid; all 8 sign bits. */
function sFormat(): GridFormat {
  s ??= { lattice: buildLattice(iq3sGrid(), 4, 3), group: 32, paritySigns: false, mult: 1 };
  return s;
}

/**
 * Values → IQ3_XXS blocks (98 bytes per 256 values). `imp`, when given, holds each element's
 * importance (indexed like x) and the search minimizes the importance-weighted error.
 */
export function quantizeIQ3_XXS(x: Float32Array, dst: Uint8Array, imp?: Float32Array): void {
  const f = xxsFormat();
  for (let i = 0; i < x.length / 256; i++) {
    const o = 98 * i;
    fitBlock(f, x, 256 * i, imp);
    writeU16(dst, o, FIT.d);
    for (let k = 0; k < 64; k++) dst[o + 2 + k] = FIT.entry[k]!;
    for (let g = 0; g < 8; g++) {
      let aux = FIT.code[g]! << 28;
      for (let l = 0; l < 4; l++) aux |= (FIT.sign[4 * g + l]! & 127) << (7 * l);
      const q = o + 66 + 4 * g;
      for (let b = 0; b < 4; b++) dst[q + b] = (aux >>> (8 * b)) & 255;
    }
  }
}

/** Values → IQ3_S blocks (110 bytes per 256 values); `imp` as in quantizeIQ3_XXS. */
export function quantizeIQ3_S(x: Float32Array, dst: Uint8Array, imp?: Float32Array): void {
  const f = sFormat();
  for (let i = 0; i < x.length / 256; i++) {
    const o = 110 * i;
    fitBlock(f, x, 256 * i, imp);
    writeU16(dst, o, FIT.d);
    for (let g = 0; g < 8; g++) {
      let qh = 0;
      for (let k = 0; k < 8; k++) {
        const e = FIT.entry[8 * g + k]!;
        dst[o + 2 + 8 * g + k] = e & 255;
        qh |= (e >> 8) << k;
      }
      dst[o + 66 + g] = qh;
    }
    for (let r = 0; r < 32; r++) dst[o + 74 + r] = FIT.sign[r]!;
    for (let g = 0; g < 4; g++) dst[o + 106 + g] = FIT.code[2 * g]! | (FIT.code[2 * g + 1]! << 4);
  }
}
