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

/** A program executor on one device (a stream, scratch and its captured CUDA graphs). */
export interface NativeExecutor {
  readonly [brand]: "CudaNativeExecutor";
}

/** Why a program cannot run: a stable code and a message naming the node. */
export interface NativeCheck {
  readonly code: string;
  readonly message: string;
}

/** Which kernel runs decode attention (see native/cuda/tuning.h and config.ts). */
export type DecodeAttn = "auto" | "tile" | "vec";

/** Kernel variants of an executor (see native/cuda/tuning.h). */
export interface NativeTuning {
  readonly attnMma?: boolean;
  readonly attnDecode?: DecodeAttn;
  readonly fuse?: boolean;
  readonly pdl?: boolean;
  readonly attnPerQuery?: boolean;
}

export interface NativeExecuteResult {
  readonly nodeMicros?: Float64Array;
  /**
   * Whether this execute replayed a captured CUDA graph, captured one, launched directly, or
   * launched directly because capturing failed ("failed": stats' lastGraphError says why).
   */
  readonly graph: "replayed" | "captured" | "none" | "failed";
}

export interface NativeExecutorStats {
  readonly graphsCached: number;
  readonly graphReplays: number;
  readonly graphCaptures: number;
  /** Programs whose CUDA graph capture failed: they launch directly (lastGraphError says why). */
  readonly graphFailures: number;
  /** Runs of adjacent nodes launched as one fused kernel, in the programs loaded so far. */
  readonly fusedRuns: number;
  readonly lastGraphError?: string;
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
  /** null when every node has a kernel accepting its dtypes and shapes. */
  checkProgram(program: Uint8Array, bufferSizes: readonly number[]): NativeCheck | null;
  /** Runs of nodes fused kernels would take in a valid program (no device needed). */
  fusedRuns(program: Uint8Array, bufferSizes: readonly number[]): number;
  registeredOps(): string[];
  createExecutor(device: number, useGraphs: boolean, tuning?: NativeTuning): NativeExecutor;
  /** BUSY while an execute is in flight. */
  disposeExecutor(executor: NativeExecutor): void;
  executorStats(executor: NativeExecutor): NativeExecutorStats;
  /** Rejects with an Error whose `code` is BAD_PROGRAM, OUT_OF_RANGE, UNSUPPORTED_SHAPE, CUDA_ERROR, … */
  execute(
    executor: NativeExecutor,
    program: Uint8Array,
    buffers: readonly NativeBuffer[],
    profile: boolean,
  ): Promise<NativeExecuteResult>;
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
