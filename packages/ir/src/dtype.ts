import { GgmlType, ggmlTypeInfo } from "@minfer/gguf";
import { IrError } from "./errors.js";

/**
 * Tensor element types. Ids are ggml's, so a GGUF tensor's type is its dtype. Q8_1 and Q8_K are
 * activation formats (what quantized dot products quantize activations to), not weight types.
 */
export const DType = {
  F32: GgmlType.F32,
  F16: GgmlType.F16,
  BF16: GgmlType.BF16,
  I32: GgmlType.I32,
  Q4_0: GgmlType.Q4_0,
  Q4_1: GgmlType.Q4_1,
  Q5_0: GgmlType.Q5_0,
  Q5_1: GgmlType.Q5_1,
  Q8_0: GgmlType.Q8_0,
  Q8_1: GgmlType.Q8_1,
  Q2_K: GgmlType.Q2_K,
  Q3_K: GgmlType.Q3_K,
  Q4_K: GgmlType.Q4_K,
  Q5_K: GgmlType.Q5_K,
  Q6_K: GgmlType.Q6_K,
  Q8_K: GgmlType.Q8_K,
} as const;
export type DType = (typeof DType)[keyof typeof DType];
export type DTypeName = keyof typeof DType;

const NAMES = new Map<number, DTypeName>(Object.entries(DType).map(([k, v]) => [v, k as DTypeName]));

/** Weight types a matrix multiplication may take as its first operand. */
export const WEIGHT_DTYPES: readonly DType[] = [
  DType.F32,
  DType.F16,
  DType.BF16,
  DType.Q4_0,
  DType.Q4_1,
  DType.Q5_0,
  DType.Q5_1,
  DType.Q8_0,
  DType.Q2_K,
  DType.Q3_K,
  DType.Q4_K,
  DType.Q5_K,
  DType.Q6_K,
];

/** Float types activations and KV caches may have. */
export const FLOAT_DTYPES: readonly DType[] = [DType.F32, DType.F16, DType.BF16];

export function dtypeName(d: number): DTypeName {
  const n = NAMES.get(d);
  if (!n) throw new IrError("BAD_DTYPE", `unknown dtype id ${d}; known: ${[...NAMES.values()].join(", ")}`);
  return n;
}

export function isDType(d: number): d is DType {
  return NAMES.has(d);
}

/** Elements per block and bytes per block. */
export function blockOf(d: DType): { blockSize: number; typeSize: number } {
  const info = ggmlTypeInfo(d);
  return { blockSize: info.blockSize, typeSize: info.typeSize };
}

export function isQuantized(d: DType): boolean {
  return blockOf(d).blockSize > 1;
}

/** Bytes of one row of `n` elements; `n` must be a whole number of blocks. */
export function rowBytes(d: DType, n: number): number {
  const { blockSize, typeSize } = blockOf(d);
  if (n % blockSize !== 0) {
    throw new IrError(
      "SHAPE_MISMATCH",
      `a ${dtypeName(d)} row of ${n} elements is not a whole number of ${blockSize}-element blocks`,
    );
  }
  return (n / blockSize) * typeSize;
}
