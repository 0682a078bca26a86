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
  IQ2_XXS: GgmlType.IQ2_XXS,
  IQ2_XS: GgmlType.IQ2_XS,
  IQ3_XXS: GgmlType.IQ3_XXS,
  IQ1_S: GgmlType.IQ1_S,
  IQ4_NL: GgmlType.IQ4_NL,
  IQ3_S: GgmlType.IQ3_S,
  IQ2_S: GgmlType.IQ2_S,
  IQ4_XS: GgmlType.IQ4_XS,
  IQ1_M: GgmlType.IQ1_M,
  TQ1_0: GgmlType.TQ1_0,
  TQ2_0: GgmlType.TQ2_0,
  MXFP4: GgmlType.MXFP4,
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
  DType.IQ2_XXS,
  DType.IQ2_XS,
  DType.IQ3_XXS,
  DType.IQ1_S,
  DType.IQ4_NL,
  DType.IQ3_S,
  DType.IQ2_S,
  DType.IQ4_XS,
  DType.IQ1_M,
  DType.TQ1_0,
  DType.TQ2_0,
  DType.MXFP4,
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
