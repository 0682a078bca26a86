// Unquantized element types: F32 (4-byte IEEE single), F16 (2-byte IEEE half), BF16 (2-byte
// bfloat16), all little-endian, one element per "block". Kernels take the element count from the
// output (dequantize) or input (quantize) array; the caller has checked the byte buffer's length.
import { bf16ToF32, f16Table, f32ToBf16, f32ToF16, readU16, writeU16 } from "./f16.js";

/** F32 bytes (little-endian, any alignment) → values. */
export function dequantizeF32(src: Uint8Array, out: Float32Array): void {
  const view = new DataView(src.buffer, src.byteOffset, src.byteLength);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(4 * i, true);
}

/** F16 bytes → values (exact). */
export function dequantizeF16(src: Uint8Array, out: Float32Array): void {
  const table = f16Table();
  for (let i = 0; i < out.length; i++) out[i] = table[readU16(src, 2 * i)];
}

/** BF16 bytes → values (exact). */
export function dequantizeBF16(src: Uint8Array, out: Float32Array): void {
  for (let i = 0; i < out.length; i++) out[i] = bf16ToF32(readU16(src, 2 * i));
}

/** Values → F32 bytes (exact). */
export function quantizeF32(x: Float32Array, dst: Uint8Array): void {
  const view = new DataView(dst.buffer, dst.byteOffset, dst.byteLength);
  for (let i = 0; i < x.length; i++) view.setFloat32(4 * i, x[i], true);
}

/** Values → F16 bytes, round to nearest even (see {@link f32ToF16}). */
export function quantizeF16(x: Float32Array, dst: Uint8Array): void {
  for (let i = 0; i < x.length; i++) writeU16(dst, 2 * i, f32ToF16(x[i]));
}

/** Values → BF16 bytes, round to nearest even (see {@link f32ToBf16}). */
export function quantizeBF16(x: Float32Array, dst: Uint8Array): void {
  for (let i = 0; i < x.length; i++) writeU16(dst, 2 * i, f32ToBf16(x[i]));
}
