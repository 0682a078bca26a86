/**
 * The CUDA backend (in progress): device discovery, memory accounting and device buffers behind
 * the BackendEntry contract of `@minfer/ir`. It has no kernels yet, so `score()` is 0 and every
 * device's `supportsOp` is false; `diagnostics()` says so and lists the GPUs found.
 * @module @minfer/backend-cuda
 */
import { BACKEND_API_VERSION, type BackendEntry } from "@minfer/ir";
import { CudaDevice } from "./device.js";
import { loadNative, type NativeProbe } from "./native.js";

export { CudaDevice } from "./device.js";
export type { CudaBackendErrorCode } from "./errors.js";
export { CudaBackendError } from "./errors.js";
export type { NativeDeviceInfo, NativeProbe } from "./native.js";
export { CudaBuffer, CudaRuntime } from "./runtime.js";

const native = loadNative();
const probe: NativeProbe | undefined = native.ok ? native.addon.probe() : undefined;
const devices: readonly CudaDevice[] =
  native.ok && probe ? probe.devices.map((d) => new CudaDevice(native.addon, d)) : [];

const gib = (n: number) => `${(n / 2 ** 30).toFixed(1)} GiB`;
const version = (v: number) => `${Math.floor(v / 1000)}.${(v % 1000) / 10}`;

function diagnostics(): string[] {
  if (!native.ok) return [`cuda: unusable: ${native.reason}`];
  const lines = [`cuda: native addon ${native.path}`];
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
  if (!p.error && devices.length === 0) lines.push("cuda: unusable: no CUDA device");
  lines.push("cuda: unusable for now: this build has no kernels (device discovery and buffers only)");
  return lines;
}

/** The registry entry. */
export const backend: BackendEntry = {
  apiVersion: BACKEND_API_VERSION,
  name: "cuda",
  // No kernels yet: never chosen, whatever the machine has.
  score: () => 0,
  diagnostics,
  devices: () => devices,
  getExtension(name: string): unknown {
    if (name === "cuda.probe") return () => probe;
    return undefined;
  },
};
