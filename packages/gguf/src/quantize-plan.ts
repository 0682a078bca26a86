import { GgufError } from "./errors.js";
import { GgmlType, type GgmlTypeInfo, ggmlTypeInfo } from "./ggml-types.js";
import { DEQUANTIZE_TYPES, dequantize, QUANTIZE_TYPES, quantize } from "./quant/index.js";

/** What happens to one tensor when a file is quantized. */
export interface TensorPlan {
  readonly name: string;
  readonly from: GgmlTypeInfo;
  readonly to: GgmlTypeInfo;
  /** Why the tensor does not get the requested type, when it does not. */
  readonly note?: string;
}

/**
 * The type a weight of `dims` gets when `target` is asked for: vectors (norms, biases) stay F32;
 * a matrix whose rows are not whole blocks of `target` falls back to Q8_0 (rows of 32s) or F16,
 * as llama.cpp does, and the fallback is reported in `note`.
 */
export function chooseType(
  dims: readonly number[],
  target: GgmlTypeInfo,
): { to: GgmlTypeInfo; note?: string } {
  if (dims.length < 2) return { to: ggmlTypeInfo(GgmlType.F32) };
  const row = dims[0]!;
  if (row % target.blockSize === 0) return { to: target };
  const fallback = ggmlTypeInfo(row % 32 === 0 && target.blockSize > 32 ? GgmlType.Q8_0 : GgmlType.F16);
  return {
    to: fallback,
    note: `rows of ${row} are not a multiple of the ${target.name} block size ${target.blockSize}; using ${fallback.name}`,
  };
}

/**
 * Plans the quantization of a model's tensors to `target` (a type {@link quantize} writes).
 * Tensors already quantized are refused unless `allowRequantize`, as in llama.cpp.
 */
export function planQuantization(
  tensors: readonly { name: string; type: number; dims: readonly number[] }[],
  target: GgmlTypeInfo,
  allowRequantize = false,
): TensorPlan[] {
  if (!QUANTIZE_TYPES.includes(target.name)) {
    throw new GgufError(
      "UNSUPPORTED_TYPE",
      `cannot quantize to ${target.name}; supported: ${QUANTIZE_TYPES.join(", ")}`,
    );
  }
  return tensors.map((t) => {
    const from = ggmlTypeInfo(t.type);
    if (!DEQUANTIZE_TYPES.includes(from.name)) {
      throw new GgufError(
        "UNSUPPORTED_TYPE",
        `tensor "${t.name}" is ${from.name}, which cannot be read back to f32`,
      );
    }
    const { to, note } = chooseType(t.dims, target);
    if (from.quantized && from.id !== to.id && !allowRequantize) {
      throw new GgufError(
        "UNSUPPORTED_TYPE",
        `tensor "${t.name}" is already quantized (${from.name}); requantizing loses quality — allow it explicitly (--allow-requantize)`,
        { key: t.name },
      );
    }
    return note ? { name: t.name, from, to, note } : { name: t.name, from, to };
  });
}

/** Converts one tensor's bytes from one type to another through f32. */
export function convertTensor(data: Uint8Array, from: number, to: number, nElements: number): Uint8Array {
  if (from === to) return data;
  return quantize(to, dequantize(from, data, nElements));
}
