import {
  bf16ToF32,
  dequantize,
  f16ToF32,
  f32ToBf16,
  f32ToF16,
  IMPORTANCE_REQUIRED_TYPES,
  QUANTIZE_TYPES,
  quantize,
} from "@minfer/gguf";
import { blockOf, DType, dtypeName, isQuantized, rowBytes, type Shape } from "@minfer/ir";
import { SchedulerError } from "../errors.js";
import { type Dense, dense, forRows } from "./dense.js";

/** Where a tensor's bytes are in a buffer and how they are laid out (a program tensor). */
export interface Layout {
  readonly dtype: DType;
  readonly offset: number;
  readonly ne: Shape;
  readonly nb: Shape;
}

function dataView(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function checkBlockRows(t: Layout): void {
  const { typeSize } = blockOf(t.dtype);
  if (t.ne[0] > blockOf(t.dtype).blockSize && t.nb[0] !== typeSize) {
    throw new SchedulerError(
      "BAD_PROGRAM",
      `a ${dtypeName(t.dtype)} tensor must have contiguous blocks along dim 0 (nb[0] = ${typeSize}), got nb[0] = ${t.nb[0]}`,
    );
  }
}

/**
 * Whether values of this dtype can be written (quantized types need a reference quantizer that
 * works without an importance matrix: IQ1_S/M and IQ2_XXS/XS are written only from one).
 */
export function canWrite(d: DType): boolean {
  const name = dtypeName(d) as never;
  return !isQuantized(d) || (QUANTIZE_TYPES.includes(name) && !IMPORTANCE_REQUIRED_TYPES.includes(name));
}

/** Reads a tensor (any dtype, any strides) into float64, dequantizing quantized rows. */
export function readTensor(bytes: Uint8Array, t: Layout): Dense {
  const out = dense(t.ne);
  const o = out.data;
  const [nb0, nb1, nb2, nb3] = t.nb;
  if (isQuantized(t.dtype)) {
    checkBlockRows(t);
    const rb = rowBytes(t.dtype, t.ne[0]);
    forRows(t.ne, (i1, i2, i3, start) => {
      const p = t.offset + i1 * nb1 + i2 * nb2 + i3 * nb3;
      o.set(dequantize(t.dtype, bytes.subarray(p, p + rb), t.ne[0]), start);
    });
    return out;
  }
  const dv = dataView(bytes);
  const get = elementReader(t.dtype, dv);
  forRows(t.ne, (i1, i2, i3, start) => {
    const p = t.offset + i1 * nb1 + i2 * nb2 + i3 * nb3;
    for (let i0 = 0; i0 < t.ne[0]; i0++) o[start + i0] = get(p + i0 * nb0);
  });
  return out;
}

function elementReader(d: DType, dv: DataView): (p: number) => number {
  switch (d) {
    case DType.F32:
      return (p) => dv.getFloat32(p, true);
    case DType.F16:
      return (p) => f16ToF32(dv.getUint16(p, true));
    case DType.BF16:
      return (p) => bf16ToF32(dv.getUint16(p, true));
    case DType.I32:
      return (p) => dv.getInt32(p, true);
    default:
      throw new SchedulerError("BAD_PROGRAM", `cannot read elements of dtype ${dtypeName(d)}`);
  }
}

function elementWriter(d: DType, dv: DataView): (p: number, v: number) => void {
  switch (d) {
    case DType.F32:
      return (p, v) => dv.setFloat32(p, v, true);
    case DType.F16:
      return (p, v) => dv.setUint16(p, f32ToF16(v), true);
    case DType.BF16:
      return (p, v) => dv.setUint16(p, f32ToBf16(Math.fround(v)), true);
    case DType.I32:
      return (p, v) => dv.setInt32(p, Math.round(v), true);
    default:
      throw new SchedulerError("BAD_PROGRAM", `cannot write elements of dtype ${dtypeName(d)}`);
  }
}

/** Writes one row (dim-0 run) [·, i1, i2, i3] of a tensor from float64 values (quantizing if needed). */
export function writeRow(
  bytes: Uint8Array,
  t: Layout,
  i1: number,
  i2: number,
  i3: number,
  values: Float64Array,
): void {
  const p = t.offset + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
  if (isQuantized(t.dtype)) {
    checkBlockRows(t);
    bytes.set(quantize(t.dtype, Float32Array.from(values)), p);
    return;
  }
  const put = elementWriter(t.dtype, dataView(bytes));
  for (let i0 = 0; i0 < t.ne[0]; i0++) put(p + i0 * t.nb[0], values[i0]!);
}

/** Writes a whole tensor from float64 values in ggml element order (rounding to the tensor's dtype). */
export function writeTensor(bytes: Uint8Array, t: Layout, src: Dense | Float64Array): void {
  const data = src instanceof Float64Array ? src : src.data;
  forRows(t.ne, (i1, i2, i3, start) => writeRow(bytes, t, i1, i2, i3, data.subarray(start, start + t.ne[0])));
}

/**
 * The bytes of a contiguous tensor of `dtype` and shape `ne` holding `values` (ggml element
 * order), quantized or rounded as the dtype needs. Handy to make run inputs and weights.
 */
export function encodeValues(dtype: DType, ne: Shape, values: ArrayLike<number>): Uint8Array {
  const n = ne[0] * ne[1] * ne[2] * ne[3];
  if (values.length !== n)
    throw new SchedulerError(
      "INVALID_ARGUMENT",
      `${values.length} values given for a tensor of ${n} elements`,
    );
  const rb = rowBytes(dtype, ne[0]);
  const nb: Shape = [blockOf(dtype).typeSize, rb, rb * ne[1], rb * ne[1] * ne[2]];
  const bytes = new Uint8Array(rb * ne[1] * ne[2] * ne[3]);
  writeTensor(bytes, { dtype, offset: 0, ne, nb }, Float64Array.from(values));
  return bytes;
}

/** Float64 values of a tensor read back by the executor (`bytes` starts at the tensor's element 0). */
export function decodeValues(t: { dtype: DType; ne: Shape; nb: Shape }, bytes: Uint8Array): Float64Array {
  return readTensor(bytes, { dtype: t.dtype, ne: t.ne, nb: t.nb, offset: 0 }).data;
}
