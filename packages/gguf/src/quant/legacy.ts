// The "legacy" 32-element block formats Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 (ggml-common.h
// block_q4_0 .. block_q8_0). All multi-byte fields are little-endian; f16 fields are IEEE half.
// The quantizers follow ggml's reference (`quantize_row_*_ref`) step by step, with each float
// operation rounded to f32 (Math.fround) as the C code does, so they produce the same bytes.
//
// Nibble order, shared by all 4- and 5-bit legacy types: byte qs[j] (j < 16) holds element j in
// its low nibble and element j + 16 in its high nibble. The 5-bit types keep the fifth bit of
// element k (0 ≤ k < 32) in bit k of the u32 qh.
import { f16ToF32, f32ToF16, readU16, writeU16 } from "./f16.js";

const fr = Math.fround;

function readU32(b: Uint8Array, o: number): number {
  return (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)) >>> 0;
}

function writeU32(b: Uint8Array, o: number, v: number): void {
  b[o] = v & 0xff;
  b[o + 1] = (v >>> 8) & 0xff;
  b[o + 2] = (v >>> 16) & 0xff;
  b[o + 3] = (v >>> 24) & 0xff;
}

/** C's roundf: nearest integer, halves away from zero. */
function roundAway(v: number): number {
  return v < 0 ? -Math.floor(-v + 0.5) : Math.floor(v + 0.5);
}

/** Index of the first element of x[o..o+n) with the largest |x|, and that element (keeping its sign). */
function signedAbsMax(x: Float32Array, o: number, n: number): number {
  let amax = 0;
  let max = 0;
  for (let j = 0; j < n; j++) {
    const v = x[o + j];
    if (amax < Math.abs(v)) {
      amax = Math.abs(v);
      max = v;
    }
  }
  return max;
}

// ---------------------------------------------------------------------------------------------
// Q4_0 — 32 elements, 18 bytes: { f16 d @0; u8 qs[16] @2 }. x = (q − 8)·d, q ∈ 0..15.

/** Q4_0 blocks → values; `out.length / 32` blocks are read. */
export function dequantizeQ4_0(src: Uint8Array, out: Float32Array): void {
  const nb = out.length / 32;
  for (let i = 0; i < nb; i++) {
    const o = i * 18;
    const y = i * 32;
    const d = f16ToF32(readU16(src, o));
    for (let j = 0; j < 16; j++) {
      const b = src[o + 2 + j];
      out[y + j] = ((b & 15) - 8) * d;
      out[y + j + 16] = ((b >> 4) - 8) * d;
    }
  }
}

/** Values → Q4_0 blocks, as ggml's reference: d = (signed abs-max)/−8, q = min(15, ⌊x/d + 8.5⌋). */
export function quantizeQ4_0(x: Float32Array, dst: Uint8Array): void {
  const nb = x.length / 32;
  for (let i = 0; i < nb; i++) {
    const xo = i * 32;
    const o = i * 18;
    const d = fr(signedAbsMax(x, xo, 32) / -8);
    const id = d !== 0 ? fr(1 / d) : 0;
    writeU16(dst, o, f32ToF16(d));
    for (let j = 0; j < 16; j++) {
      const q0 = Math.min(15, Math.trunc(fr(fr(x[xo + j] * id) + 8.5)));
      const q1 = Math.min(15, Math.trunc(fr(fr(x[xo + j + 16] * id) + 8.5)));
      dst[o + 2 + j] = q0 | (q1 << 4);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Q4_1 — 32 elements, 20 bytes: { f16 d @0; f16 m @2; u8 qs[16] @4 }. x = q·d + m, q ∈ 0..15.

/** Q4_1 blocks → values. */
export function dequantizeQ4_1(src: Uint8Array, out: Float32Array): void {
  const nb = out.length / 32;
  for (let i = 0; i < nb; i++) {
    const o = i * 20;
    const y = i * 32;
    const d = f16ToF32(readU16(src, o));
    const m = f16ToF32(readU16(src, o + 2));
    for (let j = 0; j < 16; j++) {
      const b = src[o + 4 + j];
      out[y + j] = fr((b & 15) * d) + m;
      out[y + j + 16] = fr((b >> 4) * d) + m;
    }
  }
}

/** Values → Q4_1 blocks, as ggml's reference: d = (max − min)/15, m = min, q = min(15, ⌊(x − min)/d + 0.5⌋). */
export function quantizeQ4_1(x: Float32Array, dst: Uint8Array): void {
  const nb = x.length / 32;
  for (let i = 0; i < nb; i++) {
    const xo = i * 32;
    const o = i * 20;
    let min = Number.POSITIVE_INFINITY;
    let max = Number.NEGATIVE_INFINITY;
    for (let j = 0; j < 32; j++) {
      const v = x[xo + j];
      if (v < min) min = v;
      if (v > max) max = v;
    }
    const d = fr(fr(max - min) / 15);
    const id = d !== 0 ? fr(1 / d) : 0;
    writeU16(dst, o, f32ToF16(d));
    writeU16(dst, o + 2, f32ToF16(min));
    for (let j = 0; j < 16; j++) {
      const q0 = Math.min(15, Math.trunc(fr(fr(fr(x[xo + j] - min) * id) + 0.5)));
      const q1 = Math.min(15, Math.trunc(fr(fr(fr(x[xo + j + 16] - min) * id) + 0.5)));
      dst[o + 4 + j] = q0 | (q1 << 4);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Q5_0 — 32 elements, 22 bytes: { f16 d @0; u32 qh @2; u8 qs[16] @6 }. x = (q − 16)·d, q ∈ 0..31,
// q = nibble | (bit k of qh) << 4.

/** Q5_0 blocks → values. */
export function dequantizeQ5_0(src: Uint8Array, out: Float32Array): void {
  const nb = out.length / 32;
  for (let i = 0; i < nb; i++) {
    const o = i * 22;
    const y = i * 32;
    const d = f16ToF32(readU16(src, o));
    const qh = readU32(src, o + 2);
    for (let j = 0; j < 16; j++) {
      const b = src[o + 6 + j];
      const h0 = ((qh >>> j) & 1) << 4;
      const h1 = ((qh >>> (j + 16)) & 1) << 4;
      out[y + j] = ((b & 15) + h0 - 16) * d;
      out[y + j + 16] = ((b >> 4) + h1 - 16) * d;
    }
  }
}

/** Values → Q5_0 blocks, as ggml's reference: d = (signed abs-max)/−16, q = min(31, ⌊x/d + 16.5⌋). */
export function quantizeQ5_0(x: Float32Array, dst: Uint8Array): void {
  const nb = x.length / 32;
  for (let i = 0; i < nb; i++) {
    const xo = i * 32;
    const o = i * 22;
    const d = fr(signedAbsMax(x, xo, 32) / -16);
    const id = d !== 0 ? fr(1 / d) : 0;
    writeU16(dst, o, f32ToF16(d));
    let qh = 0;
    for (let j = 0; j < 16; j++) {
      const q0 = Math.min(31, Math.trunc(fr(fr(x[xo + j] * id) + 16.5)));
      const q1 = Math.min(31, Math.trunc(fr(fr(x[xo + j + 16] * id) + 16.5)));
      dst[o + 6 + j] = (q0 & 15) | ((q1 & 15) << 4);
      qh |= ((q0 >> 4) << j) | ((q1 >> 4) << (j + 16));
    }
    writeU32(dst, o + 2, qh);
  }
}

// ---------------------------------------------------------------------------------------------
// Q5_1 — 32 elements, 24 bytes: { f16 d @0; f16 m @2; u32 qh @4; u8 qs[16] @8 }. x = q·d + m.

/** Q5_1 blocks → values. */
export function dequantizeQ5_1(src: Uint8Array, out: Float32Array): void {
  const nb = out.length / 32;
  for (let i = 0; i < nb; i++) {
    const o = i * 24;
    const y = i * 32;
    const d = f16ToF32(readU16(src, o));
    const m = f16ToF32(readU16(src, o + 2));
    const qh = readU32(src, o + 4);
    for (let j = 0; j < 16; j++) {
      const b = src[o + 8 + j];
      const h0 = ((qh >>> j) & 1) << 4;
      const h1 = ((qh >>> (j + 16)) & 1) << 4;
      out[y + j] = fr(((b & 15) + h0) * d) + m;
      out[y + j + 16] = fr(((b >> 4) + h1) * d) + m;
    }
  }
}

/** Values → Q5_1 blocks, as ggml's reference: d = (max − min)/31, m = min, q = min(31, ⌊(x − min)/d + 0.5⌋). */
export function quantizeQ5_1(x: Float32Array, dst: Uint8Array): void {
  const nb = x.length / 32;
  for (let i = 0; i < nb; i++) {
    const xo = i * 32;
    const o = i * 24;
    let min = Number.POSITIVE_INFINITY;
    let max = Number.NEGATIVE_INFINITY;
    for (let j = 0; j < 32; j++) {
      const v = x[xo + j];
      if (v < min) min = v;
      if (v > max) max = v;
    }
    const d = fr(fr(max - min) / 31);
    const id = d !== 0 ? fr(1 / d) : 0;
    writeU16(dst, o, f32ToF16(d));
    writeU16(dst, o + 2, f32ToF16(min));
    let qh = 0;
    for (let j = 0; j < 16; j++) {
      const q0 = Math.min(31, Math.trunc(fr(fr(fr(x[xo + j] - min) * id) + 0.5)));
      const q1 = Math.min(31, Math.trunc(fr(fr(fr(x[xo + j + 16] - min) * id) + 0.5)));
      dst[o + 8 + j] = (q0 & 15) | ((q1 & 15) << 4);
      qh |= ((q0 >> 4) << j) | ((q1 >> 4) << (j + 16));
    }
    writeU32(dst, o + 4, qh);
  }
}

// ---------------------------------------------------------------------------------------------
// Q8_0 — 32 elements, 34 bytes: { f16 d @0; i8 qs[32] @2 }. x = q·d, q ∈ −127..127.

/** Q8_0 blocks → values. */
export function dequantizeQ8_0(src: Uint8Array, out: Float32Array): void {
  const nb = out.length / 32;
  for (let i = 0; i < nb; i++) {
    const o = i * 34;
    const y = i * 32;
    const d = f16ToF32(readU16(src, o));
    for (let j = 0; j < 32; j++) out[y + j] = ((src[o + 2 + j] << 24) >> 24) * d;
  }
}

/** Values → Q8_0 blocks, as ggml's reference: d = abs-max/127, q = round(x/d) (halves away from zero). */
export function quantizeQ8_0(x: Float32Array, dst: Uint8Array): void {
  const nb = x.length / 32;
  for (let i = 0; i < nb; i++) {
    const xo = i * 32;
    const o = i * 34;
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[xo + j]));
    const d = fr(amax / 127);
    const id = d !== 0 ? fr(1 / d) : 0;
    writeU16(dst, o, f32ToF16(d));
    for (let j = 0; j < 32; j++) dst[o + 2 + j] = roundAway(fr(x[xo + j] * id)) & 0xff;
  }
}
