/**
 * The whole native binding (minfer_cpu.node: built from source in build/, or prebuilt in this
 * platform's package), typed in one place. Handles are branded so a plain object never passes
 * for a native one.
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BinaryChoice, type BinaryOrigin, selectBinary } from "./binary.js";
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
  /** A copy of `length` bytes from `offset` (with `into`: written there, its first `length` bytes returned). */
  read(offset: number, length: number, into?: Uint8Array): Uint8Array;
  /** Frees the memory; BUSY while an execute holds it; a second call does nothing. */
  dispose(): void;
}

/** A thread pool and executor. */
export interface NativeRuntime {
  readonly [brand]: "NativeRuntime";
  readonly threads: number;
  readonly simd: SimdLevelName;
  /** False: products never take the panel GEMM (see DeviceInitOptions.panelGemm). */
  readonly panelGemm: boolean;
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
  readonly Runtime: new (options: { threads?: number; simd?: string; panelGemm?: boolean }) => NativeRuntime;
  allocate(bytes: number): NativeBuffer;
  mapFile(path: string, offset: number, length: number): NativeBuffer;
  features(): NativeFeatures;
  /** Names of the ops with a kernel in this build. */
  registeredOps(): string[];
  /** Validates a program against buffer sizes: null when it would run. */
  checkProgram(program: Uint8Array, bufferSizes: readonly number[], simd?: string): NativeCheck | null;
  /**
   * The values of `src` (dtype `srcDtype`: F32, F16 or BF16; whole rows of `rowLength` values)
   * quantized to `dtype` byte for byte as `quantize` of @minfer/gguf does, `importance`
   * (`rowLength` values, finite, ≥ 0) weighing column j of every row. Synchronous, on the calling
   * thread. Absent from binaries built before it (see quantize-weights.ts).
   */
  quantizeWeights?(
    dtype: number,
    src: ArrayBufferView,
    srcDtype: number,
    rowLength: number,
    importance?: Float32Array,
  ): Uint8Array;
}

export type NativeLoad =
  | {
      readonly ok: true;
      readonly addon: NativeAddon;
      readonly path: string;
      readonly origin: BinaryOrigin;
      /** The platform package of a prebuilt binary. */
      readonly from?: string;
    }
  | { readonly ok: false; readonly reason: string };

/** The package root: src/ and dist/ both sit one level below it. */
const packageRoot = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Loads the chosen binary with `load` (require); a failure is a reason, never thrown. */
export function loadBinary(choice: BinaryChoice, load: (path: string) => unknown): NativeLoad {
  if (!choice.ok) return choice;
  const { path, origin, from } = choice;
  try {
    return { ok: true, addon: load(path) as NativeAddon, path, origin, ...(from ? { from } : {}) };
  } catch (e) {
    const fix =
      origin === "prebuilt"
        ? `reinstall ${from}, or build from source with \`npm run build:native\` in ${packageRoot}`
        : "rebuild it with `npm run build:native` in the package";
    return {
      ok: false,
      reason: `native addon ${path} (${origin}) failed to load: ${(e as Error).message}; ${fix}`,
    };
  }
}

let loaded: NativeLoad | undefined;

/** Selects and loads the addon once (binary.ts says in which order); a failure is recorded, never thrown. */
export function loadNative(): NativeLoad {
  loaded ??= loadBinary(
    selectBinary({ packageRoot, sanitize: readEnv().sanitize }),
    createRequire(import.meta.url),
  );
  return loaded;
}
