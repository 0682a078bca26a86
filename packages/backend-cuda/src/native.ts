/**
 * The native binding (minfer_cuda.node: built from source in build/, or prebuilt in this
 * platform's package), typed in one place, and how it was loaded.
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BinaryChoice, type BinaryOrigin, selectBinary } from "./binary.js";

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
export type DecodeAttn = "auto" | "tile" | "vec" | "flash";

/** Kernel variants of an executor (see native/cuda/tuning.h). */
export interface NativeTuning {
  readonly attnMma?: boolean;
  readonly attnWarps?: 1 | 2 | 4;
  readonly gemmStages?: 2 | 3;
  readonly mmqBlocks?: 2 | 3;
  readonly mmqRows?: 0 | 64 | 128;
  readonly mmqStreamk?: number;
  readonly topkChunks?: boolean;
  /** TOP_K of long rows by radix selection from this many rows (0: never). */
  readonly topkRadixRows?: number;
  readonly attnDecode?: DecodeAttn;
  readonly fuse?: boolean;
  readonly pdl?: boolean;
  readonly attnPerQuery?: boolean;
  readonly mvWideLoads?: boolean;
  /** The dp4a mat-vec's launch shape (warps a row group, rows a group; one column, then 2-8). */
  readonly mvShape?: {
    readonly warps1: number;
    readonly rows1: number;
    readonly warps: number;
    readonly rows: number;
    readonly warpsLong: number;
    readonly warpsFew?: number;
    readonly rowsFew?: number;
    readonly tightWarps?: number;
    readonly tightRows?: number;
    readonly tightRowsFirst?: number;
    readonly split?: number;
    readonly warps1Few?: number;
    readonly rows1Few?: number;
    readonly fewRows?: number;
  };
  /** Time every execute (GPU and host), summed in the executor's stats. */
  readonly stepTimes?: boolean;
  /** Decode attention: rows of a kv head per block (0: all of them). */
  readonly decodeRows?: number;
  /** A decode token's RoPE + K/V stores on one block that loads everything first. */
  readonly ropeBlock?: boolean;
  readonly qkvRope?: boolean;
  readonly fuseRows?: number;
  /** Decode steps of up to this many queries have their attention write the o product's quantized activations (1-64). */
  readonly attnQuantRows?: number;
  /** Decode attention's splits merged by the last block to finish (no combine kernel). */
  readonly fusedCombine?: boolean;
  readonly invariantBatched?: boolean;
  /** Several queries' decode attention one query a block on the tensor-core kernel. */
  readonly perQueryFlash?: boolean;
  /** Blocks an SM the per-query decode attention's splits aim for (1-64; 0: the kernel's default). */
  readonly perQueryBlocks?: number;
  /** At most this many splits a query of that attention (1-16; 0: no cap). */
  readonly perQuerySplits?: number;
  /** Norms of up to this many rows on the slice kernel (0-263). */
  readonly normSliceRows?: number;
  /** The int8 products' split-K target: blocks a launch (1-512). */
  readonly mmqTargetBlocks?: number;
  /** Activation columns [min, max] of the int8 tensor-core products; [0, 0]: off. */
  readonly mmqCols?: readonly [number, number];
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
  /** Of the replays, those enqueued on the JavaScript thread by launchReplay (executeWithIo). */
  readonly threadReplays: number;
  /** Programs whose CUDA graph capture failed: they launch directly (lastGraphError says why). */
  readonly graphFailures: number;
  /** Runs of adjacent nodes launched as one fused kernel, in the programs loaded so far. */
  readonly fusedRuns: number;
  readonly lastGraphError?: string;
  /**
   * With `stepTimes`: executes timed since the executor started, and their summed GPU time (from
   * the first launch to the last node's end), host time inside execute (from entry to return, off
   * the JavaScript thread), and host time from entry until the launches were enqueued (µs).
   */
  readonly stepTimes?: {
    readonly runs: number;
    readonly gpuMicros: number;
    readonly executeMicros: number;
    readonly launchMicros: number;
    /** Of the runs, those launchReplay enqueued, and their uploads' and downloads' GPU time (µs). */
    readonly replays?: number;
    readonly uploadMicros?: number;
    readonly downloadMicros?: number;
    /** Of launchReplay's host time, that until the graph's launch and that in cudaGraphLaunch (µs). */
    readonly uploadEnqueueMicros?: number;
    readonly graphLaunchMicros?: number;
  };
}

export interface NativeAddon {
  probe(): NativeProbe;
  memInfo(device: number): { free: number; total: number };
  alloc(device: number, bytes: number): NativeBuffer;
  free(buffer: NativeBuffer): void;
  write(buffer: NativeBuffer, offset: number, data: ArrayBufferView): void;
  read(buffer: NativeBuffer, offset: number, length: number, into?: Uint8Array): Uint8Array;
  /** Page-locked host memory (zero-filled), freed when the array is garbage-collected. */
  allocHost(device: number, bytes: number): Uint8Array;
  /** Runs a kernel writing seed + 2·i for i < n on the device and returns what it wrote. */
  selfTest(device: number, n: number, seed: number): Int32Array;
  /** null when every node has a kernel accepting its dtypes and shapes. */
  checkProgram(program: Uint8Array, bufferSizes: readonly number[]): NativeCheck | null;
  /**
   * The runs of nodes fused kernels would take in a valid program under `tuning` (createExecutor's;
   * default: the defaults), their node counts in order (no device needed).
   */
  fusedRuns(program: Uint8Array, bufferSizes: readonly number[], tuning?: NativeTuning): number[];
  registeredOps(): string[];
  createExecutor(device: number, useGraphs: boolean, tuning?: NativeTuning): NativeExecutor;
  /** BUSY while an execute is in flight. */
  disposeExecutor(executor: NativeExecutor): void;
  executorStats(executor: NativeExecutor): NativeExecutorStats;
  /**
   * Rejects with an Error whose `code` is BAD_PROGRAM, OUT_OF_RANGE, UNSUPPORTED_SHAPE, CUDA_ERROR, …
   * `id` (a positive integer) names the program for launchReplay: one id, one program's bytes.
   */
  execute(
    executor: NativeExecutor,
    program: Uint8Array,
    buffers: readonly NativeBuffer[],
    profile: boolean,
    id?: number,
  ): Promise<NativeExecuteResult>;
  /**
   * Runs program `id` (`length` bytes) on the calling thread without waiting, when it was captured
   * before over these buffers: the uploads, the graph, then the downloads into page-locked memory.
   * false: nothing was done (not captured yet, another run in flight, a download into pageable
   * memory). After true, pollReplay until it returns true.
   */
  launchReplay(
    executor: NativeExecutor,
    id: number,
    length: number,
    buffers: readonly NativeBuffer[],
    uploads: readonly (readonly [NativeBuffer, number, ArrayBufferView])[],
    downloads: readonly (readonly [NativeBuffer, number, number, Uint8Array])[],
  ): boolean;
  /** false while the launched run is on the GPU; true when done; throws its error (with a `code`). */
  pollReplay(executor: NativeExecutor): boolean;
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
      reason: `the native addon ${path} (${origin}) does not load: ${(e as Error).message}; ${fix}`,
    };
  }
}

/** Selects (binary.ts says in which order) and loads the addon; a missing or broken one is a reason, not an exception. */
export function loadNative(): NativeLoad {
  return loadBinary(selectBinary({ packageRoot }), createRequire(import.meta.url));
}
