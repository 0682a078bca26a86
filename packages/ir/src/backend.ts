import type { DType } from "./dtype.js";
import type { Op } from "./ops.js";
import type { Shape } from "./tensor.js";

/**
 * The version of the contract below. A backend whose entry has another `apiVersion` is refused
 * by the registry, with both numbers.
 */
export const BACKEND_API_VERSION = 1;

/** What a backend package exports as `backend`: found by the registry at startup. */
export interface BackendEntry {
  /** Must equal {@link BACKEND_API_VERSION}. */
  readonly apiVersion: number;
  /** "cpu", "cuda", "metal", … */
  readonly name: string;
  /** How suited the backend is to this host; 0 = unusable here (the reason is in `diagnostics()`). */
  score(): number;
  /** Why the backend is or is not usable (native binary missing, no device, SIMD level, …). */
  diagnostics(): readonly string[];
  devices(): readonly Device[];
  /** Backend-specific extras, by name; `undefined` when the backend has none of that name. */
  getExtension?(name: string): unknown;
}

/** The extension name of a backend's {@link WeightQuantizer} (`getExtension(WEIGHT_QUANTIZER)`). */
export const WEIGHT_QUANTIZER = "weight-quantizer";

/**
 * Weight quantization in a backend's native code (`minfer gguf quantize` uses it where a backend
 * offers it): the same bytes as @minfer/gguf's TypeScript quantizers, faster.
 */
export interface WeightQuantizer {
  /** Why it cannot convert dtype `from` to `to` here, or undefined when it can. */
  unsupported(from: number, to: number): string | undefined;
  /**
   * `data`, whole rows of `rowLength` values of dtype `from`, converted to `to`; `importance`
   * (`rowLength` values) weighs each column's error.
   */
  convert(
    from: number,
    to: number,
    data: ArrayBufferView,
    rowLength: number,
    importance?: Float32Array,
  ): Uint8Array;
}

export interface DeviceMemory {
  /** Bytes free now. */
  readonly free: number;
  readonly total: number;
}

export interface DeviceCaps {
  /** Buffers are host memory: weights can be mapped from a file in place. */
  readonly hostMemory: boolean;
  /** Fixed overhead of one `execute` call in microseconds (for the assignment's cost model). */
  readonly launchCostUs: number;
  /** Bytes per second a copy from host to this device moves (for the cost model). */
  readonly hostToDeviceBandwidth: number;
  /**
   * Honours PROGRAM_FLAG_BATCH_INVARIANT: a flagged program gives each column (token) the bits it
   * has when computed alone. Absent or false: the flag is accepted but not honoured (speculative
   * verification then may round otherwise than one-token decoding; the CLI says so).
   */
  readonly batchInvariant?: boolean;
}

/** An op as `supportsOp` sees it: the op, its parameters and its tensors' types and layouts. */
export interface OpQuery {
  readonly op: Op;
  readonly params: readonly number[];
  readonly inputs: readonly { dtype: DType; ne: Shape; nb: Shape }[];
  readonly outputs: readonly { dtype: DType; ne: Shape; nb: Shape }[];
}

export interface DeviceInitOptions {
  /** Worker threads (CPU). Default: the backend's choice (physical cores for the CPU). */
  threads?: number;
  /** Force an instruction-set level ("scalar", "avx2", "avx512", …) instead of the best one found. */
  simd?: string;
  /**
   * CPU: false keeps products of every column count on the dot-product kernels, where by default
   * (true) 8 or more columns take the panel GEMM (AVX-512: quantized and float weights), which sums
   * in another order. With float weights a token's logits are then the same bits however it is
   * batched (a prompt at once, in micro-batches, a token a step); prefill is slower.
   */
  panelGemm?: boolean;
}

/** One configuration of a device that tests should cover (e.g. one SIMD level of a CPU). */
export interface DeviceVariant {
  readonly label: string;
  readonly options: DeviceInitOptions;
}

export interface Device {
  /** Unique within the process, e.g. "cpu" or "cuda:0". */
  readonly name: string;
  readonly type: "cpu" | "gpu" | "accelerator";
  /** The backend entry's name. */
  readonly backend: string;
  readonly caps: DeviceCaps;
  memory(): DeviceMemory;
  /**
   * What the device is, for listings such as `minfer devices`: the model, the compute capability
   * or SIMD level, … (keys in camelCase). Absent: nothing beyond the name and memory.
   */
  properties?(): Readonly<Record<string, string | number>>;
  /** Whether this device can run the op with these types and layouts. Decided by capability, never by trying. */
  supportsOp(query: OpQuery): boolean;
  /**
   * The configurations a conformance run should cover, each a set of init options (the CPU lists
   * every SIMD level this host can run). Absent: the default configuration only.
   */
  variants?(): readonly DeviceVariant[];
  /** Starts the device (threads, streams); one runtime per device is enough for a process. */
  init(options?: DeviceInitOptions): Promise<DeviceRuntime>;
}

/** Memory owned by a device runtime. Using it after `dispose()` throws. */
export interface BackendBuffer {
  readonly size: number;
  readonly device: string;
  readonly label: string;
  readonly disposed: boolean;
  dispose(): void;
}

export interface ExecuteOptions {
  /** Measure each node; the result carries the times. Default: false. */
  profile?: boolean;
}

export interface ExecuteResult {
  /** Microseconds per node, in program order, when profiling. */
  readonly nodeMicros?: Float64Array;
}

/** A write of host bytes into a device buffer (see {@link DeviceRuntime.executeWithIo}). */
export interface DeviceWrite {
  readonly buffer: BackendBuffer;
  readonly offset: number;
  readonly data: ArrayBufferView;
}

/** A read of device bytes, into `into` (at least `length` bytes) or a new array. */
export interface DeviceRead {
  readonly buffer: BackendBuffer;
  readonly offset: number;
  readonly length: number;
  readonly into?: Uint8Array;
}

/** A started device: buffers, transfers and program execution. */
export interface DeviceRuntime {
  readonly device: Device;
  /** New device memory of `bytes` bytes (zero-filled). */
  allocate(bytes: number, label: string): BackendBuffer;
  /** A buffer holding `length` bytes of a file from `offset` (mapped in place where the device can). */
  mapFile(path: string, offset: number, length: number, label: string): Promise<BackendBuffer>;
  write(buffer: BackendBuffer, offset: number, data: ArrayBufferView): Promise<void>;
  /**
   * `length` bytes from `offset`: a new array, or with `into` (at least `length` bytes) written
   * there and returned as its first `length` bytes (no allocation: what a caller reading the same
   * output every step passes).
   */
  read(buffer: BackendBuffer, offset: number, length: number, into?: Uint8Array): Promise<Uint8Array>;
  /**
   * Host memory of `bytes` bytes (zero-filled) that this device copies to and from fastest: page-locked
   * on a GPU, so a read into it is one DMA transfer. Released when garbage-collected. Optional: a
   * device without it is read into ordinary memory.
   */
  allocateHost?(bytes: number): Uint8Array;
  /** Runs an encoded program over the given buffers (in slot order); resolves when done. */
  execute(
    program: Uint8Array,
    buffers: readonly BackendBuffer[],
    options?: ExecuteOptions,
  ): Promise<ExecuteResult>;
  /**
   * Optional: the writes, the program, then the reads, as one call — what a step that runs on one
   * device does. The results are those of `write` for each of `writes` in order, `execute`, and
   * `read` for each of `reads`; a GPU enqueues all three on its stream at once. Resolves to the
   * bytes read (a view of `into` where given), in the order of `reads`.
   */
  executeWithIo?(
    program: Uint8Array,
    buffers: readonly BackendBuffer[],
    writes: readonly DeviceWrite[],
    reads: readonly DeviceRead[],
  ): Promise<Uint8Array[]>;
  dispose(): void;
}
