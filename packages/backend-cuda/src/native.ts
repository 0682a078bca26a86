/** The native binding (build/minfer_cuda.node), typed in one place, and how it was loaded. */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

declare const brand: unique symbol;

/** A device allocation owned by the addon (freed by `free`, or when collected). */
export interface NativeBuffer {
  readonly [brand]: "CudaNativeBuffer";
}

export interface NativeDeviceInfo {
  readonly index: number;
  readonly name: string;
  /** "9.0" for an H100/H200. */
  readonly computeCapability: string;
  readonly smCount: number;
  readonly totalBytes: number;
  readonly freeBytes: number;
  readonly pciBus: string;
}

export interface NativeProbe {
  readonly runtimeVersion: number;
  /** 0 when no driver is installed. */
  readonly driverVersion: number;
  /** Why the devices could not be listed (no driver, no device, …). */
  readonly error?: string;
  readonly devices: readonly NativeDeviceInfo[];
}

export interface NativeAddon {
  probe(): NativeProbe;
  memInfo(device: number): { free: number; total: number };
  alloc(device: number, bytes: number): NativeBuffer;
  free(buffer: NativeBuffer): void;
  write(buffer: NativeBuffer, offset: number, data: ArrayBufferView): void;
  read(buffer: NativeBuffer, offset: number, length: number): Uint8Array;
  /** Runs a kernel writing seed + 2·i for i < n on the device and returns what it wrote. */
  selfTest(device: number, n: number, seed: number): Int32Array;
}

export type NativeLoad =
  | { readonly ok: true; readonly addon: NativeAddon; readonly path: string }
  | { readonly ok: false; readonly reason: string };

/** Loads the addon; a missing or broken build is a reason, not an exception. */
export function loadNative(): NativeLoad {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..");
  const path = join(root, "build", "minfer_cuda.node");
  if (!existsSync(path)) {
    const note = join(root, "build", "NATIVE_UNAVAILABLE.txt");
    const reason = existsSync(note)
      ? readFileSync(note, "utf8").trim()
      : `the native addon ${path} is not built (run the package's build script)`;
    return { ok: false, reason };
  }
  try {
    return { ok: true, addon: createRequire(import.meta.url)(path) as NativeAddon, path };
  } catch (e) {
    return { ok: false, reason: `the native addon ${path} does not load: ${(e as Error).message}` };
  }
}
