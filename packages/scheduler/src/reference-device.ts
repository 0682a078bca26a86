import { open } from "node:fs/promises";
import { DEQUANTIZE_TYPES } from "@minfer/gguf";
import {
  BACKEND_API_VERSION,
  type BackendBuffer,
  type BackendEntry,
  blockOf,
  type Device,
  type DeviceCaps,
  type DeviceMemory,
  type DeviceRuntime,
  decodeProgram,
  dtypeName,
  type ExecuteOptions,
  type ExecuteResult,
  isQuantized,
  type OpQuery,
  opSpec,
} from "@minfer/ir";
import { SchedulerError } from "./errors.js";
import { canWrite } from "./reference/dtype-io.js";
import { interpret } from "./reference/interpreter.js";

/** Options of {@link referenceBackend}. */
export interface ReferenceBackendOptions {
  /** The backend entry's name. Default: `"reference"`. */
  name?: string;
  /** The device's name. Default: the backend name. */
  deviceName?: string;
  /** The device's type. Default: `"cpu"`. */
  type?: Device["type"];
  /** What `score()` returns. Default: 1 (usable, ranked below any native backend). */
  score?: number;
  /** Capabilities the cost model sees. Default: host memory, 1 µs launch cost, 10 GB/s. */
  caps?: Partial<DeviceCaps>;
  /** Total memory the device reports. Default: 4 GiB. */
  memoryBytes?: number;
  /**
   * A further restriction on the ops the device claims (to model a device that lacks an op);
   * called after the reference's own check. Default: none (every op the reference implements).
   */
  supports?: (query: OpQuery) => boolean;
}

const DEFAULT_CAPS: DeviceCaps = { hostMemory: true, launchCostUs: 1, hostToDeviceBandwidth: 10e9 };

class ReferenceBuffer implements BackendBuffer {
  #bytes: Uint8Array | undefined;
  constructor(
    readonly device: string,
    readonly label: string,
    bytes: Uint8Array,
  ) {
    this.#bytes = bytes;
  }
  get size(): number {
    return this.#bytes?.length ?? 0;
  }
  get disposed(): boolean {
    return this.#bytes === undefined;
  }
  /** The memory; throws after dispose. */
  get bytes(): Uint8Array {
    if (!this.#bytes) throw new SchedulerError("DISPOSED", `buffer "${this.label}" was disposed`);
    return this.#bytes;
  }
  dispose(): void {
    this.#bytes = undefined;
  }
}

/** Whether the reference kernels read (and write) every tensor of the query. */
function referenceSupports(q: OpQuery): boolean {
  if (!opSpec(q.op)) return false;
  const readable = (t: OpQuery["inputs"][number]) =>
    !isQuantized(t.dtype) ||
    (DEQUANTIZE_TYPES.includes(dtypeName(t.dtype) as never) &&
      (t.ne[0] <= blockOf(t.dtype).blockSize || t.nb[0] === blockOf(t.dtype).typeSize));
  return q.inputs.every(readable) && q.outputs.every((t) => readable(t) && canWrite(t.dtype));
}

class ReferenceRuntime implements DeviceRuntime {
  #disposed = false;
  #buffers = new Set<ReferenceBuffer>();
  constructor(readonly device: ReferenceDevice) {}

  #check(): void {
    if (this.#disposed) throw new SchedulerError("DISPOSED", `runtime of ${this.device.name} was disposed`);
  }

  #own(buffer: BackendBuffer): ReferenceBuffer {
    if (!(buffer instanceof ReferenceBuffer) || buffer.device !== this.device.name) {
      throw new SchedulerError(
        "BAD_PROGRAM",
        `buffer "${buffer.label}" belongs to device ${buffer.device}, not ${this.device.name}`,
      );
    }
    return buffer;
  }

  allocated(): number {
    let n = 0;
    for (const b of this.#buffers) if (!b.disposed) n += b.size;
    return n;
  }

  allocate(bytes: number, label: string): BackendBuffer {
    this.#check();
    if (!Number.isSafeInteger(bytes) || bytes < 0)
      throw new SchedulerError("INVALID_ARGUMENT", `cannot allocate ${bytes} bytes for "${label}"`);
    const b = new ReferenceBuffer(this.device.name, label, new Uint8Array(bytes));
    this.#buffers.add(b);
    return b;
  }

  async mapFile(path: string, offset: number, length: number, label: string): Promise<BackendBuffer> {
    this.#check();
    const fh = await open(path, "r");
    try {
      const bytes = new Uint8Array(length);
      const { bytesRead } = await fh.read(bytes, 0, length, offset);
      if (bytesRead !== length)
        throw new SchedulerError("IO_ERROR", `${path} holds ${bytesRead} of ${length} bytes from ${offset}`);
      const b = new ReferenceBuffer(this.device.name, label, bytes);
      this.#buffers.add(b);
      return b;
    } finally {
      await fh.close();
    }
  }

  async write(buffer: BackendBuffer, offset: number, data: ArrayBufferView): Promise<void> {
    this.#check();
    const b = this.#own(buffer).bytes;
    const src = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    if (offset < 0 || offset + src.length > b.length)
      throw new SchedulerError(
        "OUT_OF_RANGE",
        `write of ${src.length} bytes at ${offset} overruns "${buffer.label}" (${b.length} bytes)`,
      );
    b.set(src, offset);
  }

  async read(buffer: BackendBuffer, offset: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    this.#check();
    const b = this.#own(buffer).bytes;
    if (offset < 0 || offset + length > b.length)
      throw new SchedulerError(
        "OUT_OF_RANGE",
        `read of ${length} bytes at ${offset} overruns "${buffer.label}" (${b.length} bytes)`,
      );
    if (into === undefined) return b.slice(offset, offset + length);
    if (into.byteLength < length)
      throw new SchedulerError(
        "INVALID_ARGUMENT",
        `read: into holds ${into.byteLength} bytes, ${length} were asked for`,
      );
    into.set(b.subarray(offset, offset + length));
    return into.subarray(0, length);
  }

  async execute(
    program: Uint8Array,
    buffers: readonly BackendBuffer[],
    options: ExecuteOptions = {},
  ): Promise<ExecuteResult> {
    this.#check();
    const spec = decodeProgram(program);
    if (buffers.length !== spec.bufferSizes.length)
      throw new SchedulerError(
        "BAD_PROGRAM",
        `the program has ${spec.bufferSizes.length} buffer slots, ${buffers.length} buffers were given`,
      );
    const bytes = buffers.map((b, i) => {
      const own = this.#own(b).bytes;
      if (own.length < spec.bufferSizes[i]!)
        throw new SchedulerError(
          "BAD_PROGRAM",
          `slot ${i} needs ${spec.bufferSizes[i]} bytes, buffer "${b.label}" has ${own.length}`,
        );
      return own;
    });
    const micros = options.profile ? new Float64Array(spec.nodes.length) : undefined;
    interpret(spec, bytes, micros ? (i, us) => (micros[i] = us) : undefined);
    return micros ? { nodeMicros: micros } : {};
  }

  dispose(): void {
    for (const b of this.#buffers) b.dispose();
    this.#buffers.clear();
    this.#disposed = true;
  }
}

class ReferenceDevice implements Device {
  readonly name: string;
  readonly type: Device["type"];
  readonly backend: string;
  readonly caps: DeviceCaps;
  readonly #total: number;
  readonly #supports: ((q: OpQuery) => boolean) | undefined;
  readonly #runtimes = new Set<ReferenceRuntime>();

  constructor(o: Required<Pick<ReferenceBackendOptions, "name">> & ReferenceBackendOptions) {
    this.name = o.deviceName ?? o.name;
    this.type = o.type ?? "cpu";
    this.backend = o.name;
    this.caps = { ...DEFAULT_CAPS, ...o.caps };
    this.#total = o.memoryBytes ?? 4 * 2 ** 30;
    this.#supports = o.supports;
  }

  memory(): DeviceMemory {
    let used = 0;
    for (const r of this.#runtimes) used += r.allocated();
    return { total: this.#total, free: Math.max(0, this.#total - used) };
  }

  supportsOp(query: OpQuery): boolean {
    return referenceSupports(query) && (this.#supports?.(query) ?? true);
  }

  async init(): Promise<DeviceRuntime> {
    const r = new ReferenceRuntime(this);
    this.#runtimes.add(r);
    return r;
  }
}

/**
 * A backend implemented in TypeScript that executes programs with float64 reference kernels:
 * the scheduler's null device for tests and the oracle of the op-conformance suite. Slow by
 * design; never picked unless asked for (see `RegistryOptions.reference`).
 */
export function referenceBackend(options: ReferenceBackendOptions = {}): BackendEntry {
  const name = options.name ?? "reference";
  const device = new ReferenceDevice({ ...options, name });
  const score = options.score ?? 1;
  return {
    apiVersion: BACKEND_API_VERSION,
    name,
    score: () => score,
    diagnostics: () => [`${name}: TypeScript float64 reference kernels (slow; for tests and as the oracle)`],
    devices: () => [device],
  };
}

/** The name of the default reference backend and its device. */
export const REFERENCE_BACKEND = "reference";
