// Reference (scalar) conversion between f32 values and ggml's stored tensor types: dispatch by
// type id, argument checks, and the lists of supported types.
import { GgufError } from "../errors.js";
import { GGML_TYPES, GgmlType, type GgmlTypeName, ggmlTypeInfo } from "../ggml-types.js";
import { dequantizeIQ1_M, dequantizeIQ1_S } from "./iq1.js";
import { quantizeIQ1_M, quantizeIQ1_S } from "./iq1-quant.js";
import { dequantizeIQ2_S, dequantizeIQ2_XS, dequantizeIQ2_XXS } from "./iq2.js";
import { quantizeIQ2_S, quantizeIQ2_XS, quantizeIQ2_XXS } from "./iq2-quant.js";
import { dequantizeIQ3_S, dequantizeIQ3_XXS } from "./iq3.js";
import { quantizeIQ3_S, quantizeIQ3_XXS } from "./iq3-quant.js";
import { dequantizeIQ4_NL, dequantizeIQ4_XS } from "./iq4.js";
import { quantizeIQ4NL, quantizeIQ4XS } from "./iq4-quant.js";
import { dequantizeQ2K, dequantizeQ3K, dequantizeQ4K, dequantizeQ5K, dequantizeQ6K } from "./k-dequant.js";
import { quantizeQ4K, quantizeQ5K, quantizeQ6K } from "./k-quant.js";
import { quantizeQ2K, quantizeQ3K } from "./k-quant-low.js";
import {
  dequantizeQ4_0,
  dequantizeQ4_1,
  dequantizeQ5_0,
  dequantizeQ5_1,
  dequantizeQ8_0,
  quantizeQ4_0,
  quantizeQ4_1,
  quantizeQ5_0,
  quantizeQ5_1,
  quantizeQ8_0,
} from "./legacy.js";
import { dequantizeMXFP4 } from "./mxfp4.js";
import {
  dequantizeBF16,
  dequantizeF16,
  dequantizeF32,
  quantizeBF16,
  quantizeF16,
  quantizeF32,
} from "./plain.js";
import { dequantizeTQ1_0, dequantizeTQ2_0 } from "./ternary.js";
import { quantizeTQ1_0, quantizeTQ2_0 } from "./ternary-quant.js";

export { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16 } from "./f16.js";

type DequantizeKernel = (src: Uint8Array, out: Float32Array) => void;
/** `imp`, for the kernels that take one: each element's importance, indexed like `values`. */
type QuantizeKernel = (values: Float32Array, dst: Uint8Array, imp?: Float32Array) => void;

const DEQUANTIZERS: ReadonlyMap<number, DequantizeKernel> = new Map<number, DequantizeKernel>([
  [GgmlType.F32, dequantizeF32],
  [GgmlType.F16, dequantizeF16],
  [GgmlType.BF16, dequantizeBF16],
  [GgmlType.Q4_0, dequantizeQ4_0],
  [GgmlType.Q4_1, dequantizeQ4_1],
  [GgmlType.Q5_0, dequantizeQ5_0],
  [GgmlType.Q5_1, dequantizeQ5_1],
  [GgmlType.Q8_0, dequantizeQ8_0],
  [GgmlType.Q2_K, dequantizeQ2K],
  [GgmlType.Q3_K, dequantizeQ3K],
  [GgmlType.Q4_K, dequantizeQ4K],
  [GgmlType.Q5_K, dequantizeQ5K],
  [GgmlType.Q6_K, dequantizeQ6K],
  [GgmlType.IQ2_XXS, dequantizeIQ2_XXS],
  [GgmlType.IQ2_XS, dequantizeIQ2_XS],
  [GgmlType.IQ2_S, dequantizeIQ2_S],
  [GgmlType.IQ3_XXS, dequantizeIQ3_XXS],
  [GgmlType.IQ3_S, dequantizeIQ3_S],
  [GgmlType.IQ1_S, dequantizeIQ1_S],
  [GgmlType.IQ1_M, dequantizeIQ1_M],
  [GgmlType.IQ4_NL, dequantizeIQ4_NL],
  [GgmlType.IQ4_XS, dequantizeIQ4_XS],
  [GgmlType.TQ1_0, dequantizeTQ1_0],
  [GgmlType.TQ2_0, dequantizeTQ2_0],
  [GgmlType.MXFP4, dequantizeMXFP4],
]);

const QUANTIZERS: ReadonlyMap<number, QuantizeKernel> = new Map<number, QuantizeKernel>([
  [GgmlType.F32, quantizeF32],
  [GgmlType.F16, quantizeF16],
  [GgmlType.BF16, quantizeBF16],
  [GgmlType.Q4_0, quantizeQ4_0],
  [GgmlType.Q4_1, quantizeQ4_1],
  [GgmlType.Q5_0, quantizeQ5_0],
  [GgmlType.Q5_1, quantizeQ5_1],
  [GgmlType.Q8_0, quantizeQ8_0],
  [GgmlType.Q2_K, quantizeQ2K],
  [GgmlType.Q3_K, quantizeQ3K],
  [GgmlType.Q4_K, quantizeQ4K],
  [GgmlType.Q5_K, quantizeQ5K],
  [GgmlType.Q6_K, quantizeQ6K],
  [GgmlType.IQ2_XXS, quantizeIQ2_XXS],
  [GgmlType.IQ2_XS, quantizeIQ2_XS],
  [GgmlType.IQ3_XXS, quantizeIQ3_XXS],
  [GgmlType.IQ1_S, quantizeIQ1_S],
  [GgmlType.IQ3_S, quantizeIQ3_S],
  [GgmlType.IQ2_S, quantizeIQ2_S],
  [GgmlType.IQ4_NL, quantizeIQ4NL],
  [GgmlType.IQ4_XS, quantizeIQ4XS],
  [GgmlType.IQ1_M, quantizeIQ1_M],
  [GgmlType.TQ1_0, quantizeTQ1_0],
  [GgmlType.TQ2_0, quantizeTQ2_0],
]);

function namesOf(kernels: ReadonlyMap<number, unknown>): readonly GgmlTypeName[] {
  return Object.freeze(GGML_TYPES.filter((t) => kernels.has(t.id)).map((t) => t.name));
}

/** Names of the types {@link dequantize} reads, in type-id order. */
export const DEQUANTIZE_TYPES: readonly GgmlTypeName[] = namesOf(DEQUANTIZERS);
/** Names of the types {@link quantize} writes, in type-id order. */
export const QUANTIZE_TYPES: readonly GgmlTypeName[] = namesOf(QUANTIZERS);

/** The types whose quantizers weigh each element's error by an importance (the others ignore it). */
const WEIGHTED: ReadonlySet<number> = new Set<number>([
  GgmlType.Q2_K,
  GgmlType.Q3_K,
  GgmlType.Q4_K,
  GgmlType.Q5_K,
  GgmlType.Q6_K,
  GgmlType.IQ2_XXS,
  GgmlType.IQ2_XS,
  GgmlType.IQ3_XXS,
  GgmlType.IQ1_S,
  GgmlType.IQ3_S,
  GgmlType.IQ2_S,
  GgmlType.IQ4_NL,
  GgmlType.IQ4_XS,
  GgmlType.IQ1_M,
  GgmlType.TQ1_0,
  GgmlType.TQ2_0,
]);
/** Names of the types whose {@link quantize} uses an importance, in type-id order. */
export const IMPORTANCE_TYPES: readonly GgmlTypeName[] = namesOf(new Map([...WEIGHTED].map((t) => [t, t])));

/**
 * The types {@link quantize} writes only from an importance: the 1- and 2-bit i-quants, whose
 * search is poor without one (ggml's quantizers assert that they get one). A subset of WEIGHTED.
 */
const NEEDS_IMPORTANCE: ReadonlySet<number> = new Set<number>([
  GgmlType.IQ2_XXS,
  GgmlType.IQ2_XS,
  GgmlType.IQ1_S,
  GgmlType.IQ1_M,
]);
/** Names of the types whose {@link quantize} requires an importance, in type-id order. */
export const IMPORTANCE_REQUIRED_TYPES: readonly GgmlTypeName[] = namesOf(
  new Map([...NEEDS_IMPORTANCE].map((t) => [t, t])),
);

function describeType(type: number): string {
  const known = GGML_TYPES.find((t) => t.id === type);
  return known ? `${known.name} (id ${type})` : `id ${type} (not a ggml type)`;
}

function kernelFor<K>(
  kernels: ReadonlyMap<number, K>,
  type: number,
  verb: string,
  names: readonly string[],
): K {
  const kernel = kernels.get(type);
  if (!kernel) {
    throw new GgufError(
      "UNSUPPORTED_DTYPE",
      `cannot ${verb} ggml type ${describeType(type)}; supported: ${names.join(", ")}`,
    );
  }
  return kernel;
}

/**
 * Decodes `nElements` values of ggml type `type` from `data` (any byte offset; only the first
 * nElements / blockSize blocks are read). Throws `UNSUPPORTED_DTYPE` for a type without a
 * dequantizer and `INVALID_ARGUMENT` when `nElements` is not a whole number of blocks or `data`
 * is too short.
 */
export function dequantize(type: number, data: Uint8Array, nElements: number): Float32Array {
  const kernel = kernelFor(DEQUANTIZERS, type, "dequantize", DEQUANTIZE_TYPES);
  const { name, blockSize, typeSize } = ggmlTypeInfo(type);
  if (!Number.isSafeInteger(nElements) || nElements < 0 || nElements % blockSize !== 0) {
    throw new GgufError(
      "INVALID_ARGUMENT",
      `element count ${nElements} is not a whole number of ${name} blocks of ${blockSize}`,
    );
  }
  const bytes = (nElements / blockSize) * typeSize;
  if (data.length < bytes) {
    throw new GgufError(
      "INVALID_ARGUMENT",
      `${nElements} ${name} elements need ${bytes} bytes, but the buffer holds ${data.length}`,
    );
  }
  const out = new Float32Array(nElements);
  kernel(data, out);
  return out;
}

/**
 * Encodes `values` as ggml type `type`, returning the packed blocks. Throws `UNSUPPORTED_DTYPE`
 * for a type without a quantizer and `INVALID_ARGUMENT` when `values.length` is not a multiple of
 * the type's block size.
 *
 * `importance`, optional, weighs each element's squared error in the quantizer's search (an
 * importance matrix's row for this weight, see {@link parseImatrix}): its length is the row
 * length, `values` holds whole rows, and entry j applies to column j of every row. It must be
 * finite and ≥ 0 (`INVALID_ARGUMENT` otherwise). Only the types in {@link IMPORTANCE_TYPES} use
 * it; without it the output is the same as before importances existed. The types in
 * {@link IMPORTANCE_REQUIRED_TYPES} throw `INVALID_ARGUMENT` without one.
 */
export function quantize(type: number, values: Float32Array, importance?: Float32Array): Uint8Array {
  const kernel = kernelFor(QUANTIZERS, type, "quantize", QUANTIZE_TYPES);
  const { name, blockSize, typeSize } = ggmlTypeInfo(type);
  if (values.length % blockSize !== 0) {
    throw new GgufError(
      "INVALID_ARGUMENT",
      `${values.length} values are not a whole number of ${name} blocks: the ${name} block size is ${blockSize}`,
    );
  }
  if (importance === undefined && NEEDS_IMPORTANCE.has(type)) {
    throw new GgufError(
      "INVALID_ARGUMENT",
      `${name} is written only from an importance (an importance matrix's row for the weight): ` +
        "its search is poor without one, and llama.cpp refuses too",
    );
  }
  const out = new Uint8Array((values.length / blockSize) * typeSize);
  if (importance === undefined || !WEIGHTED.has(type)) {
    kernel(values, out);
    return out;
  }
  const n = importance.length;
  if (n === 0 || values.length % n !== 0) {
    throw new GgufError(
      "INVALID_ARGUMENT",
      `an importance of ${n} values does not fit ${values.length} values: it needs one entry per column of whole rows`,
    );
  }
  if (n % blockSize !== 0) {
    throw new GgufError(
      "INVALID_ARGUMENT",
      `rows of ${n} values are not a whole number of ${name} blocks of ${blockSize}`,
    );
  }
  for (let j = 0; j < n; j++) {
    const v = importance[j]!;
    if (!(v >= 0 && v < Number.POSITIVE_INFINITY)) {
      throw new GgufError("INVALID_ARGUMENT", `importance[${j}] is ${v}: it must be finite and ≥ 0`);
    }
  }
  const full = new Float32Array(values.length);
  for (let o = 0; o < values.length; o += n) full.set(importance, o);
  kernel(values, out, full);
  return out;
}
