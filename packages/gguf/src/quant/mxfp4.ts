// Dequantizer for MXFP4 (ggml-common.h block_mxfp4): the OCP Microscaling block format with 32
// E2M1 (4-bit float) elements sharing one E8M0 (power-of-two) scale.

import { KVALUES_MXFP4 } from "./iq-grids.js";

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/**
 * Half the E8M0 scale 2^(e − 127), i.e. 2^(e − 128), as ggml computes it: its table of E2M1 values
 * is doubled (KVALUES_MXFP4), so ggml's decoder multiplies by this half scale (ggml-impl.h
 * ggml_e8m0_to_fp32_half, "equal to ggml_e8m0_to_fp32/2"). It builds the f32 from its bits:
 * e ≥ 2 gives exponent field e − 1; e = 0 and e = 1 give the subnormals 2^−128 and 2^−127. The
 * OCP spec's NaN code e = 255 is not special-cased there: it gives 2^127.
 */
function e8m0Half(e: number): number {
  U32[0] = e < 2 ? 0x00200000 << e : (e - 1) << 23;
  return F32[0];
}

/**
 * MXFP4 — 32 elements, 17 bytes: { u8 e @0; u8 qs[16] @1 }. Nibble order as Q4_0: byte j holds
 * element j in its low nibble and element j + 16 in its high nibble; a nibble's bit 3 is the sign
 * (the code for −0, 8, is +0 in ggml's table).
 * y = KVALUES_MXFP4[q]·2^(e − 128). A large e makes large values overflow to ±Infinity, as in ggml.
 */
export function dequantizeMXFP4(src: Uint8Array, out: Float32Array): void {
  const nb = out.length / 32;
  for (let i = 0; i < nb; i++) {
    const o = i * 17;
    const y = i * 32;
    const d = e8m0Half(src[o]);
    for (let j = 0; j < 16; j++) {
      const b = src[o + 1 + j];
      out[y + j] = KVALUES_MXFP4[b & 15] * d;
      out[y + j + 16] = KVALUES_MXFP4[b >> 4] * d;
    }
  }
}
