/**
 * The CUDA backend: device discovery, memory accounting, device buffers, and an executor that
 * runs programs on a stream with CUDA kernels for every op of `@minfer/ir` (captured into CUDA
 * graphs when a program repeats), behind the BackendEntry contract of `@minfer/ir`. Without a
 * built addon, a driver or a device, `score()` is 0 and `diagnostics()` says why.
 * @module @minfer/backend-cuda
 */
import { BACKEND_API_VERSION, type BackendEntry } from "@minfer/ir";
import { computeCapabilityProblem } from "./compute-capability.js";
import { CudaDevice } from "./device.js";
import { loadNative, type NativeProbe, type NativeTuning } from "./native.js";

export type { CudaEnv } from "./config.js";
export { CudaDevice } from "./device.js";
export type { CudaBackendErrorCode } from "./errors.js";
export { CudaBackendError } from "./errors.js";
export type { NativeCheck, NativeDeviceInfo, NativeExecutorStats, NativeProbe } from "./native.js";
export { CudaBuffer, CudaRuntime, type CudaRuntimeOptions, type ReplayHostTimes } from "./runtime.js";

const native = loadNative();
const probe: NativeProbe | undefined = native.ok ? native.addon.probe() : undefined;
const found = probe?.devices ?? [];
/** GPUs too old for the kernels, each with the reason (diagnostics). */
const refused = found.flatMap((d) => computeCapabilityProblem(d) ?? []);
const devices: readonly CudaDevice[] = native.ok
  ? found.filter((d) => !computeCapabilityProblem(d)).map((d) => new CudaDevice(native.addon, d))
  : [];

const gib = (n: number) => `${(n / 2 ** 30).toFixed(1)} GiB`;
const version = (v: number) => `${Math.floor(v / 1000)}.${(v % 1000) / 10}`;

function diagnostics(): string[] {
  if (!native.ok) return [`cuda: unusable: ${native.reason}`];
  const origin = native.origin === "prebuilt" ? `prebuilt, ${native.from}` : native.origin;
  const lines = [`cuda: native addon ${native.path} (${origin})`];
  const p = probe!;
  lines.push(
    `cuda: runtime ${version(p.runtimeVersion)}, driver ${p.driverVersion ? version(p.driverVersion) : "none"}`,
  );
  if (p.error) lines.push(`cuda: unusable: ${p.error}`);
  for (const d of devices) {
    const i = d.info;
    lines.push(
      `cuda: ${d.name} ${i.name}, compute ${i.computeCapability}, ${i.smCount} SMs, ` +
        `${gib(i.freeBytes)} free of ${gib(i.totalBytes)}, PCI ${i.pciBus}`,
    );
  }
  for (const reason of refused) lines.push(`cuda: unusable: ${reason}`);
  if (!p.error && found.length === 0) lines.push("cuda: unusable: no CUDA device");
  const ops = native.addon.registeredOps();
  lines.push(`cuda: kernels: ${ops.join(", ") || "none"}`);
  return lines;
}

/** The registry entry. */
export const backend: BackendEntry = {
  apiVersion: BACKEND_API_VERSION,
  name: "cuda",
  // Above any CPU level when a device is present: the GPU is preferred where it can run an op.
  score: () => (devices.length > 0 ? 10 : 0),
  diagnostics,
  devices: () => devices,
  getExtension(name: string): unknown {
    if (name === "cuda.probe") return () => probe;
    if (name === "cuda.kernels") return () => (native.ok ? native.addon.registeredOps() : []);
    if (name === "cuda.checkProgram")
      return native.ok
        ? (program: Uint8Array, sizes: readonly number[]) => native.addon.checkProgram(program, sizes)
        : undefined;
    if (name === "cuda.fusedRuns")
      return native.ok
        ? (program: Uint8Array, sizes: readonly number[], tuning?: NativeTuning) =>
            native.addon.fusedRuns(program, sizes, tuning)
        : undefined;
    return undefined;
  },
};
