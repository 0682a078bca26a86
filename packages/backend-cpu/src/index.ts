/**
 * The CPU backend: C++ kernels with runtime SIMD dispatch on a persistent thread pool, behind
 * the BackendEntry contract of `@minfer/ir`.
 * @module @minfer/backend-cpu
 */
import {
  BACKEND_API_VERSION,
  type BackendEntry,
  type Device,
  WEIGHT_QUANTIZER,
  type WeightQuantizer,
} from "@minfer/ir";
import { CpuDevice } from "./device.js";
import { loadNative, type NativeFeatures } from "./native.js";
import { convertWeights, quantizeWeightsUnsupported } from "./quantize-weights.js";

export type { CpuEnv } from "./config.js";
export { CpuDevice } from "./device.js";
export type { CpuBackendErrorCode } from "./errors.js";
export { CpuBackendError } from "./errors.js";
export type { NativeFeatures, SimdLevelName } from "./native.js";
export {
  convertWeights,
  NATIVE_QUANTIZE_SOURCES,
  NATIVE_QUANTIZE_TYPES,
  quantizeWeights,
  quantizeWeightsUnsupported,
} from "./quantize-weights.js";
export { CpuBuffer, CpuRuntime } from "./runtime.js";

const native = loadNative();
const device = new CpuDevice(native.ok ? native.addon : undefined, native.ok ? undefined : native.reason);
const devices: readonly Device[] = [device];

const LEVEL_SCORE = { scalar: 1, neon: 2, avx2: 2, avx512: 3 } as const;

/** The native weight quantizer, as the registry hands it out (`getExtension(WEIGHT_QUANTIZER)`). */
const weightQuantizer: WeightQuantizer = { unsupported: quantizeWeightsUnsupported, convert: convertWeights };

/** SIMD features of this machine; undefined when the addon is missing. */
export function cpuFeatures(): NativeFeatures | undefined {
  return native.ok ? native.addon.features() : undefined;
}

/** Names of the ops that have a CPU kernel in this build (empty when the addon is missing). */
export function cpuKernels(): string[] {
  return native.ok ? native.addon.registeredOps() : [];
}

function diagnostics(): string[] {
  if (!native.ok) return [`cpu: unusable: ${native.reason}`];
  const f = native.addon.features();
  const lines = [
    `cpu: native addon ${native.path} (${native.origin === "prebuilt" ? `prebuilt, ${native.from}` : native.origin})`,
    `cpu: SIMD ${f.detected} (usable: ${f.usableLevels.join(", ")}); features: ${f.features.join(" ")}`,
    `cpu: ${f.physicalCores} physical cores, ${f.logicalCpus} logical CPUs (default threads: ${f.physicalCores})`,
    `cpu: kernels: ${native.addon.registeredOps().join(", ") || "none"}`,
  ];
  if (f.amx.present) lines.push(`cpu: ${f.amx.note}`);
  return lines;
}

/** The registry entry: found by `@minfer/scheduler` through `import("@minfer/backend-cpu")`. */
export const backend: BackendEntry = {
  apiVersion: BACKEND_API_VERSION,
  name: "cpu",
  score: () => (native.ok ? LEVEL_SCORE[native.addon.features().detected] : 0),
  diagnostics,
  devices: () => devices,
  getExtension(name: string): unknown {
    if (name === "cpu.features") return cpuFeatures;
    if (name === "cpu.kernels") return cpuKernels;
    if (name === WEIGHT_QUANTIZER) return weightQuantizer;
    return undefined;
  },
};
