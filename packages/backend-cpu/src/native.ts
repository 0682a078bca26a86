/**
 * The whole native binding (build/Release/minfer_cpu.node), typed in one place. Handles are
 * branded so a plain object never passes for a native one.
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { readEnv } from "./config.js";

declare const brand: unique symbol;

/** "scalar" | "avx2" | "avx512" | "neon". */
export type SimdLevelName = "scalar" | "avx2" | "avx512" | "neon";

/** Host memory owned by native code (allocated, or a read-only file mapping). */
export interface NativeBuffer {
  readonly [brand]: "NativeBuffer";
  readonly size: number;
  readonly readOnly: boolean;
  readonly disposed: boolean;
  /** Copies `data` to `offset`; READ_ONLY for mappings, BUSY while an execute holds it. */
  write(offset: number, data: ArrayBufferView): void;
  /** A copy of `length` bytes from `offset`. */
  read(offset: number, length: number): Uint8Array;
  /** Frees the memory; BUSY while an execute holds it; a second call does nothing. */
  dispose(): void;
}

/** A thread pool and executor. */
export interface NativeRuntime {
  readonly [brand]: "NativeRuntime";
  readonly threads: number;
  readonly simd: SimdLevelName;
  readonly disposed: boolean;
  /** Validates and runs a program on the pool, off the JavaScript thread. */
  execute(
    program: Uint8Array,
    buffers: readonly NativeBuffer[],
    profile: boolean,
  ): Promise<{ nodeMicros?: Float64Array }>;
  /** Stops the pool; BUSY while an execute runs. */
  dispose(): void;
}

export interface NativeFeatures {
  /** The best level the CPU and OS allow. */
  readonly detected: SimdLevelName;
  /** Levels a runtime may be forced to (scalar and every level up to the detected one). */
  readonly usableLevels: readonly SimdLevelName[];
  /** CPUID features confirmed usable ("avx2", "fma", "avx512f", "os-avx512", …). */
  readonly features: readonly string[];
  readonly amx: { readonly present: boolean; readonly usable: boolean; readonly note: string };
  readonly logicalCpus: number;
  readonly physicalCores: number;
}

/** Why a program was refused: a native code ("BAD_PROGRAM", "NO_KERNEL", …) and message. */
export interface NativeCheck {
  readonly code: string;
  readonly message: string;
}

export interface NativeAddon {
  readonly Runtime: new (options: { threads?: number; simd?: string }) => NativeRuntime;
  allocate(bytes: number): NativeBuffer;
  mapFile(path: string, offset: number, length: number): NativeBuffer;
  features(): NativeFeatures;
  /** Names of the ops with a kernel in this build. */
  registeredOps(): string[];
  /** Validates a program against buffer sizes: null when it would run. */
  checkProgram(program: Uint8Array, bufferSizes: readonly number[], simd?: string): NativeCheck | null;
}

export type NativeLoad =
  | { readonly ok: true; readonly addon: NativeAddon; readonly path: string }
  | { readonly ok: false; readonly reason: string };

/** The package root: src/ and dist/ both sit one level below it. */
const packageRoot = join(dirname(fileURLToPath(import.meta.url)), "..");

let loaded: NativeLoad | undefined;

/** Loads the addon once; a failure is recorded with its reason, never thrown. */
export function loadNative(): NativeLoad {
  if (loaded) return loaded;
  const config = readEnv().sanitize ? "Debug" : "Release";
  const path = join(packageRoot, "build", config, "minfer_cpu.node");
  const why = join(packageRoot, "build", "NATIVE_UNAVAILABLE.txt");
  if (!existsSync(path)) {
    const recorded = existsSync(why) ? ` ${readFileSync(why, "utf8").trim()}` : "";
    loaded = {
      ok: false,
      reason:
        `native addon ${path} not found.${recorded} ` +
        "Build it with `pnpm --filter @minfer/backend-cpu build:native` (needs a C++ compiler and Python 3).",
    };
    return loaded;
  }
  try {
    const addon = createRequire(import.meta.url)(path) as NativeAddon;
    loaded = { ok: true, addon, path };
  } catch (e) {
    loaded = { ok: false, reason: `native addon ${path} failed to load: ${(e as Error).message}` };
  }
  return loaded;
}
