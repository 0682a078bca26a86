import { GgufError } from "./errors.js";

/**
 * ggml tensor type ids as stored in GGUF tensor infos (ggml.h `enum ggml_type`). Ids 4, 5 and
 * 31–33, 36–38 were removed from the format and are refused as unknown.
 */
export const GgmlType = {
  F32: 0,
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q5_0: 6,
  Q5_1: 7,
  Q8_0: 8,
  Q8_1: 9,
  Q2_K: 10,
  Q3_K: 11,
  Q4_K: 12,
  Q5_K: 13,
  Q6_K: 14,
  Q8_K: 15,
  IQ2_XXS: 16,
  IQ2_XS: 17,
  IQ3_XXS: 18,
  IQ1_S: 19,
  IQ4_NL: 20,
  IQ3_S: 21,
  IQ2_S: 22,
  IQ4_XS: 23,
  I8: 24,
  I16: 25,
  I32: 26,
  I64: 27,
  F64: 28,
  IQ1_M: 29,
  BF16: 30,
  TQ1_0: 34,
  TQ2_0: 35,
  MXFP4: 39,
  NVFP4: 40,
} as const;

/** A ggml tensor type id, e.g. `GgmlType.Q4_K`. */
export type GgmlTypeId = (typeof GgmlType)[keyof typeof GgmlType];
/** A ggml tensor type name, e.g. `"Q4_K"`. */
export type GgmlTypeName = keyof typeof GgmlType;

/** Layout facts of one ggml type. */
export interface GgmlTypeInfo {
  readonly id: GgmlTypeId;
  readonly name: GgmlTypeName;
  /** Elements per block (1 for plain types). A row's length must be a multiple of it. */
  readonly blockSize: number;
  /** Bytes per block. */
  readonly typeSize: number;
  /** Whether the type is block-quantized. */
  readonly quantized: boolean;
}

// [name, block size, bytes per block]. Sizes follow the block structs of ggml-common.h.
const LAYOUT: ReadonlyArray<readonly [GgmlTypeName, number, number]> = [
  ["F32", 1, 4],
  ["F16", 1, 2],
  ["Q4_0", 32, 18], // f16 d, 16 bytes of nibbles
  ["Q4_1", 32, 20], // f16 d, f16 m, 16 bytes of nibbles
  ["Q5_0", 32, 22], // f16 d, u32 high bits, 16 bytes of nibbles
  ["Q5_1", 32, 24], // f16 d, f16 m, u32 high bits, 16 bytes of nibbles
  ["Q8_0", 32, 34], // f16 d, 32 int8
  ["Q8_1", 32, 36], // f16 d, f16 s, 32 int8
  ["Q2_K", 256, 84], // 16 scales, 64 qs, f16 d, f16 dmin
  ["Q3_K", 256, 110], // 32 hmask, 64 qs, 12 scales, f16 d
  ["Q4_K", 256, 144], // f16 d, f16 dmin, 12 scales, 128 qs
  ["Q5_K", 256, 176], // f16 d, f16 dmin, 12 scales, 32 qh, 128 qs
  ["Q6_K", 256, 210], // 128 ql, 64 qh, 16 int8 scales, f16 d
  ["Q8_K", 256, 292], // f32 d, 256 int8, 16 int16 bsums
  ["IQ2_XXS", 256, 66],
  ["IQ2_XS", 256, 74],
  ["IQ3_XXS", 256, 98],
  ["IQ1_S", 256, 50],
  ["IQ4_NL", 32, 18],
  ["IQ3_S", 256, 110],
  ["IQ2_S", 256, 82],
  ["IQ4_XS", 256, 136],
  ["I8", 1, 1],
  ["I16", 1, 2],
  ["I32", 1, 4],
  ["I64", 1, 8],
  ["F64", 1, 8],
  ["IQ1_M", 256, 56],
  ["BF16", 1, 2],
  ["TQ1_0", 256, 54],
  ["TQ2_0", 256, 66],
  ["MXFP4", 32, 17], // e8m0 scale, 16 bytes of e2m1 nibbles
  ["NVFP4", 64, 36], // 4 ue4m3 scales, 32 bytes of e2m1 nibbles
];

const PLAIN = new Set<GgmlTypeName>(["F32", "F16", "BF16", "I8", "I16", "I32", "I64", "F64"]);

const BY_ID = new Map<number, GgmlTypeInfo>();
const BY_NAME = new Map<string, GgmlTypeInfo>();
for (const [name, blockSize, typeSize] of LAYOUT) {
  const info: GgmlTypeInfo = Object.freeze({
    id: GgmlType[name],
    name,
    blockSize,
    typeSize,
    quantized: !PLAIN.has(name),
  });
  BY_ID.set(info.id, info);
  BY_NAME.set(name.toLowerCase(), info);
}

/** Every type this package knows, in id order. */
export const GGML_TYPES: readonly GgmlTypeInfo[] = Object.freeze(
  [...BY_ID.values()].sort((a, b) => a.id - b.id),
);

/** The layout of a type id; throws `UNKNOWN_TENSOR_TYPE` naming the id for an id not in the table. */
export function ggmlTypeInfo(id: number): GgmlTypeInfo {
  const info = BY_ID.get(id);
  if (!info) {
    throw new GgufError(
      "UNKNOWN_TENSOR_TYPE",
      `unknown ggml type id ${id}; known ids: ${GGML_TYPES.map((t) => `${t.id}=${t.name}`).join(", ")}`,
    );
  }
  return info;
}

/** Looks a type up by name, case-insensitively (`"q4_k"`, `"Q4_K"`); throws naming the valid names. */
export function ggmlTypeByName(name: string): GgmlTypeInfo {
  const info = BY_NAME.get(name.toLowerCase());
  if (!info) {
    throw new GgufError(
      "UNKNOWN_TENSOR_TYPE",
      `unknown ggml type "${name}"; known: ${GGML_TYPES.map((t) => t.name).join(", ")}`,
    );
  }
  return info;
}

/**
 * Bytes taken by `nElements` elements laid out as rows of `rowLength` (= dims[0]) of the given
 * type. Throws `BAD_SHAPE` when a row is not a whole number of blocks.
 */
export function ggmlByteSize(id: number, dims: readonly number[]): number {
  const info = ggmlTypeInfo(id);
  const rowLength = dims.length > 0 ? dims[0]! : 1;
  if (rowLength % info.blockSize !== 0) {
    throw new GgufError(
      "BAD_SHAPE",
      `row length ${rowLength} is not a multiple of the ${info.name} block size ${info.blockSize}`,
    );
  }
  let rows = 1;
  for (let i = 1; i < dims.length; i++) rows *= dims[i]!;
  return (rowLength / info.blockSize) * info.typeSize * rows;
}
