// Quantizers for IQ2_XXS, IQ2_XS and IQ2_S (layouts: see iq2.ts): the search of iq-grid-fit.ts over
// their grids, then the packing. A row is 8 values (one grid entry) with its 8 signs; IQ2_XXS and
// IQ2_XS store 7 of them (even parity), IQ2_S all 8. IQ2_XXS has one scale per 32 elements, the
// others one per 16.
import { writeU16 } from "./f16.js";
import { lazyGrid } from "./iq-common.js";
import { FIT, fitBlock, type GridFormat } from "./iq-grid-fit.js";
import { IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID } from "./iq-grids.js";
import { buildLattice } from "./iq-lattice.js";

const iq2xxsGrid = lazyGrid(IQ2XXS_GRID, 8, 256);
const iq2xsGrid = lazyGrid(IQ2XS_GRID, 8, 512);
const iq2sGrid = lazyGrid(IQ2S_GRID, 8, 1024);

/**
 * Each type's format, built at first use: y = d·(c + ½)/4 · grid = d·(2c + 1)/8 · grid. IQ2_XS
 * weighs by importance·√(2·mean x² + x²), the others by the importance alone: on the built-in
 * model, llama-quantize's files with minfer's tensors of the type had mean KLD (importance alone /
 * with the magnitude term; llama-quantize's own) IQ2_XXS 0.245 / 0.259 (0.244; the term with
 * 1·mean x²), IQ2_XS 0.147 / 0.140 (0.138, the IQ2_S mix), IQ2_S 0.097 / 0.098 (0.104, the IQ2_M
 * mix).
 */
const formats = new Map<string, GridFormat>();
function format(
  name: string,
  grid: () => Uint8Array,
  group: number,
  paritySigns: boolean,
  spread?: number,
): GridFormat {
  let f = formats.get(name);
  if (!f) {
    f = { lattice: buildLattice(grid(), 8, 3), group, paritySigns, mult: 1 / 8, spread };
    formats.set(name, f);
  }
  return f;
}

/**
 * Values → IQ2_XXS blocks (66 bytes per 256 values). `imp` holds each element's importance
 * (indexed like x): the search minimizes the importance-weighted error. Required by quantize().
 */
export function quantizeIQ2_XXS(x: Float32Array, dst: Uint8Array, imp?: Float32Array): void {
  const f = format("IQ2_XXS", iq2xxsGrid, 32, true);
  for (let i = 0; i < x.length / 256; i++) {
    const o = 66 * i;
    fitBlock(f, x, 256 * i, imp);
    writeU16(dst, o, FIT.d);
    for (let g = 0; g < 8; g++) {
      const q = o + 2 + 8 * g;
      let aux = FIT.code[g]! << 28;
      for (let l = 0; l < 4; l++) {
        dst[q + l] = FIT.entry[4 * g + l]!;
        aux |= (FIT.sign[4 * g + l]! & 127) << (7 * l);
      }
      for (let b = 0; b < 4; b++) dst[q + 4 + b] = (aux >>> (8 * b)) & 255;
    }
  }
}

/** The 4-bit scales of the groups of 16: group 2g in the low nibble of byte g, 2g + 1 high. */
function writeScales(dst: Uint8Array, at: number): void {
  for (let g = 0; g < 8; g++) dst[at + g] = FIT.code[2 * g]! | (FIT.code[2 * g + 1]! << 4);
}

/** Values → IQ2_XS blocks (74 bytes per 256 values); `imp` as in quantizeIQ2_XXS (required). */
export function quantizeIQ2_XS(x: Float32Array, dst: Uint8Array, imp?: Float32Array): void {
  const f = format("IQ2_XS", iq2xsGrid, 16, true, 2);
  for (let i = 0; i < x.length / 256; i++) {
    const o = 74 * i;
    fitBlock(f, x, 256 * i, imp);
    writeU16(dst, o, FIT.d);
    for (let r = 0; r < 32; r++) writeU16(dst, o + 2 + 2 * r, FIT.entry[r]! | ((FIT.sign[r]! & 127) << 9));
    writeScales(dst, o + 66);
  }
}

/** Values → IQ2_S blocks (82 bytes per 256 values); `imp` as in quantizeIQ2_XXS (optional). */
export function quantizeIQ2_S(x: Float32Array, dst: Uint8Array, imp?: Float32Array): void {
  const f = format("IQ2_S", iq2sGrid, 16, false);
  for (let i = 0; i < x.length / 256; i++) {
    const o = 82 * i;
    fitBlock(f, x, 256 * i, imp);
    writeU16(dst, o, FIT.d);
    for (let g = 0; g < 8; g++) {
      let qh = 0;
      for (let l = 0; l < 4; l++) {
        const e = FIT.entry[4 * g + l]!;
        dst[o + 2 + 4 * g + l] = e & 255;
        qh |= (e >> 8) << (2 * l);
      }
      dst[o + 66 + g] = qh;
    }
    for (let r = 0; r < 32; r++) dst[o + 34 + r] = FIT.sign[r]!;
    writeScales(dst, o + 74);
  }
}
