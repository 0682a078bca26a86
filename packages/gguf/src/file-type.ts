import { GgmlType } from "./ggml-types.js";

/**
 * llama.cpp's `general.file_type` values (`enum llama_ftype`) for files whose weights are all of
 * one type. A file of one K-quant type is written with the `_S` id (Q4_K → 14, LLAMA_FTYPE_MOSTLY_Q4_K_S);
 * the mixes have their own ids ({@link MIX_FILE_TYPE}).
 */
const FILE_TYPE: ReadonlyMap<number, number> = new Map([
  [GgmlType.F32, 0],
  [GgmlType.F16, 1],
  [GgmlType.Q4_0, 2],
  [GgmlType.Q4_1, 3],
  [GgmlType.Q8_0, 7],
  [GgmlType.Q5_0, 8],
  [GgmlType.Q5_1, 9],
  [GgmlType.Q2_K, 10],
  [GgmlType.Q3_K, 11],
  [GgmlType.Q4_K, 14],
  [GgmlType.Q5_K, 16],
  [GgmlType.Q6_K, 18],
  [GgmlType.IQ2_XXS, 19],
  [GgmlType.IQ2_XS, 20],
  [GgmlType.IQ3_XXS, 23],
  [GgmlType.IQ1_S, 24],
  [GgmlType.IQ4_NL, 25],
  [GgmlType.IQ3_S, 26],
  [GgmlType.IQ2_S, 28],
  [GgmlType.IQ4_XS, 30],
  [GgmlType.IQ1_M, 31],
  [GgmlType.BF16, 32],
  [GgmlType.TQ1_0, 36],
  [GgmlType.TQ2_0, 37],
]);

/** The `general.file_type` for a file whose weights are of `type`, or `undefined` if it has none. */
export function fileTypeOf(type: number): number | undefined {
  return FILE_TYPE.get(type);
}

/**
 * The `general.file_type` of each of llama.cpp's quantization mixes (LLAMA_FTYPE_MOSTLY_*, from
 * `enum llama_ftype` in llama.h), by the name llama-quantize takes.
 */
export const MIX_FILE_TYPE: Readonly<Record<string, number>> = Object.freeze({
  Q4_0: 2,
  Q4_1: 3,
  Q8_0: 7,
  Q5_0: 8,
  Q5_1: 9,
  Q2_K: 10,
  Q3_K_S: 11,
  Q3_K_M: 12,
  Q3_K_L: 13,
  Q4_K_S: 14,
  Q4_K_M: 15,
  Q5_K_S: 16,
  Q5_K_M: 17,
  Q6_K: 18,
  IQ4_NL: 25,
  IQ4_XS: 30,
  IQ2_XXS: 19,
  IQ2_XS: 20,
  IQ3_XS: 22,
  IQ3_XXS: 23,
  IQ1_S: 24,
  IQ3_S: 26,
  IQ3_M: 27,
  IQ2_S: 28,
  IQ2_M: 29,
  IQ1_M: 31,
  TQ1_0: 36,
  TQ2_0: 37,
});

/** `general.file_type` of a Q4_K_M file (LLAMA_FTYPE_MOSTLY_Q4_K_M). */
export const FILE_TYPE_Q4_K_M = 15;
