// Scalar conversions between JS numbers and the 16-bit float formats ggml stores: IEEE 754
// binary16 ("F16", 1 sign, 5 exponent, 10 mantissa bits) and bfloat16 ("BF16", the top half of
// an f32: 1 sign, 8 exponent, 7 mantissa bits). Bit patterns are plain numbers in 0..0xffff.

// Exact powers of two 2^-30 .. 2^30, built by repeated doubling/halving (no Math.pow rounding).
const POW2 = new Float64Array(61);
POW2[30] = 1;
for (let i = 1; i <= 30; i++) {
  POW2[30 + i] = POW2[29 + i] * 2;
  POW2[30 - i] = POW2[31 - i] / 2;
}
function pow2(e: number): number {
  return POW2[e + 30];
}

/** Round a non-negative number to the nearest integer, ties to even. */
function roundHalfEven(v: number): number {
  const f = Math.floor(v);
  const r = v - f; // exact: v < 2^25 wherever this is used
  if (r > 0.5) return f + 1;
  if (r < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/**
 * IEEE binary16 bits of `x`, rounded to nearest, ties to even, directly from the double value
 * (no intermediate f32 rounding). Subnormals are produced exactly; |x| ≥ 65520 (the tie between
 * 65504 and 2^16) becomes ±Inf; NaN becomes the quiet NaN 0x7e00.
 */
export function f32ToF16(x: number): number {
  if (Number.isNaN(x)) return 0x7e00;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a >= 65520) return sign | 0x7c00;
  if (a < pow2(-14)) {
    // Subnormal range: units of 2^-24. A result of 0x400 is the smallest normal, correctly encoded.
    return sign | roundHalfEven(a * pow2(24));
  }
  let e = Math.floor(Math.log2(a)); // may be off by one near powers of two; fixed below
  if (pow2(e) > a) e--;
  else if (pow2(e + 1) <= a) e++;
  const m = roundHalfEven(a * pow2(10 - e)); // 1024..2048; 2048 carries into the exponent below
  return sign | (((e + 15) << 10) + (m - 1024));
}

/** The value of IEEE binary16 bits `h` (low 16 bits used). */
export function f16ToF32(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 31;
  const m = h & 1023;
  if (e === 0) return s * m * pow2(-24);
  if (e === 31) return m ? Number.NaN : s * Number.POSITIVE_INFINITY;
  return s * (1024 + m) * pow2(e - 25);
}

let F16_TABLE: Float32Array | undefined;
/** All 65536 binary16 values as f32, built on first use (256 KiB); index with the raw bits. */
export function f16Table(): Float32Array {
  if (!F16_TABLE) {
    F16_TABLE = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) F16_TABLE[h] = f16ToF32(h);
  }
  return F16_TABLE;
}

const F32_SCRATCH = new Float32Array(1);
const U32_SCRATCH = new Uint32Array(F32_SCRATCH.buffer);

/**
 * bfloat16 bits of `x`: `x` is first rounded to f32 (as storing it in a Float32Array does), then
 * the f32 bits are rounded to their top 16 bits, to nearest, ties to even (overflow gives ±Inf).
 * NaN gives a quiet NaN (quiet bit 0x40 forced on), as ggml does.
 */
export function f32ToBf16(x: number): number {
  F32_SCRATCH[0] = x;
  const u = U32_SCRATCH[0];
  if ((u & 0x7fffffff) > 0x7f800000) return ((u >>> 16) | 0x40) & 0xffff;
  return Math.floor((u + 0x7fff + ((u >>> 16) & 1)) / 65536) & 0xffff;
}

/** The value of bfloat16 bits `h` (low 16 bits used): exactly the f32 with those top bits. */
export function bf16ToF32(h: number): number {
  U32_SCRATCH[0] = (h & 0xffff) << 16;
  return F32_SCRATCH[0];
}

/** Reads the little-endian u16 at `o` of `b` (any alignment). */
export function readU16(b: Uint8Array, o: number): number {
  return b[o] | (b[o + 1] << 8);
}

/** Writes `v` as a little-endian u16 at `o` of `b`. */
export function writeU16(b: Uint8Array, o: number, v: number): void {
  b[o] = v & 0xff;
  b[o + 1] = (v >> 8) & 0xff;
}

/** The f16 value nearest to `x` (what storing `x` as f16 and reading it back gives). */
export function roundToF16(x: number): number {
  return f16ToF32(f32ToF16(x));
}
