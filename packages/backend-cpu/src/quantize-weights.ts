/**
 * Weight quantization in native code: the algorithms of @minfer/gguf's TypeScript quantizers,
 * ported to C++ (native/cpu/quantize_weights*.cpp) so that they write the same bytes, several
 * times faster. `minfer gguf quantize` runs them in its worker threads.
 */
import { DType, dtypeName } from "@minfer/ir";
import { CpuBackendError, callNative } from "./errors.js";
import { loadNative } from "./native.js";

/** The types {@link quantizeWeights} writes. */
export const NATIVE_QUANTIZE_TYPES: readonly number[] = Object.freeze([
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
  DType.IQ4_NL,
  DType.IQ4_XS,
]);

/** The source types {@link convertWeights} reads. */
export const NATIVE_QUANTIZE_SOURCES: readonly number[] = Object.freeze([DType.F32, DType.F16, DType.BF16]);

const name = (t: number): string => {
  try {
    return dtypeName(t);
  } catch {
    return `dtype ${t}`;
  }
};

/**
 * Why {@link convertWeights} cannot convert `from` to `to` in this process (no addon, an addon
 * built before it, or a pair it lacks), or undefined when it can.
 */
export function quantizeWeightsUnsupported(from: number, to: number): string | undefined {
  const native = loadNative();
  if (!native.ok) return native.reason;
  if (typeof native.addon.quantizeWeights !== "function") {
    return `the native addon ${native.path} (${native.origin}) predates quantizeWeights; rebuild it with \`npm run build:native\` in @minfer/backend-cpu`;
  }
  if (!NATIVE_QUANTIZE_TYPES.includes(to)) {
    return `no native quantizer for ${name(to)} (native: ${NATIVE_QUANTIZE_TYPES.map(name).join(", ")})`;
  }
  if (!NATIVE_QUANTIZE_SOURCES.includes(from)) {
    return `the native quantizer reads ${NATIVE_QUANTIZE_SOURCES.map(name).join(", ")}, not ${name(from)}`;
  }
  return undefined;
}

/**
 * `data` (whole rows of `rowLength` values of dtype `from`: F32, F16 or BF16, little-endian)
 * quantized to `to`: the bytes `quantize(to, dequantize(from, data, n), importance)` of
 * @minfer/gguf gives. `importance`: `rowLength` finite values ≥ 0, entry j weighing column j.
 * Throws NATIVE_UNAVAILABLE where {@link quantizeWeightsUnsupported} gives a reason about the
 * addon, INVALID_ARGUMENT for a type it lacks or a bad length.
 */
export function convertWeights(
  from: number,
  to: number,
  data: ArrayBufferView,
  rowLength: number,
  importance?: Float32Array,
): Uint8Array {
  const native = loadNative();
  if (!native.ok) throw new CpuBackendError("NATIVE_UNAVAILABLE", native.reason);
  const addon = native.addon;
  if (typeof addon.quantizeWeights !== "function") {
    throw new CpuBackendError("NATIVE_UNAVAILABLE", quantizeWeightsUnsupported(from, to)!);
  }
  return callNative(() => addon.quantizeWeights!(to, data, from, rowLength, importance));
}

/** `src` (whole rows of `rowLength` values) quantized to `type`, as `quantize` of @minfer/gguf does. */
export function quantizeWeights(
  type: number,
  src: Float32Array,
  rowLength: number,
  importance?: Float32Array,
): Uint8Array {
  return convertWeights(DType.F32, type, src, rowLength, importance);
}
