import type { BackendBuffer, Device, DeviceRuntime, ExecuteOptions, ExecuteResult } from "@minfer/ir";
import { CpuBackendError, callNative, fromNative } from "./errors.js";
import type { NativeAddon, NativeBuffer, NativeRuntime, SimdLevelName } from "./native.js";

/** A buffer of the CPU backend: host memory owned by native code. */
export class CpuBuffer implements BackendBuffer {
  readonly device: string;
  readonly label: string;
  /** @internal */
  readonly native: NativeBuffer;
  /** @internal */
  readonly owner: CpuRuntime;

  /** @internal */
  constructor(owner: CpuRuntime, native: NativeBuffer, label: string) {
    this.owner = owner;
    this.native = native;
    this.device = owner.device.name;
    this.label = label;
  }

  get size(): number {
    return this.native.size;
  }
  /** True for file mappings: writes and program outputs are refused. */
  get readOnly(): boolean {
    return this.native.readOnly;
  }
  get disposed(): boolean {
    return this.native.disposed;
  }
  /** Frees the memory; throws BUSY while an execute uses the buffer. */
  dispose(): void {
    callNative(() => this.native.dispose());
    this.owner.forget(this);
  }
}

/** A started CPU device: a persistent thread pool and its executor. */
export class CpuRuntime implements DeviceRuntime {
  readonly device: Device;
  readonly #addon: NativeAddon;
  readonly #native: NativeRuntime;
  readonly #buffers = new Set<CpuBuffer>();

  /** @internal */
  constructor(device: Device, addon: NativeAddon, native: NativeRuntime) {
    this.device = device;
    this.#addon = addon;
    this.#native = native;
  }

  /** Worker threads, the calling thread included. */
  get threads(): number {
    return callNative(() => this.#native.threads);
  }
  /** The SIMD level kernels run at. */
  get simd(): SimdLevelName {
    return callNative(() => this.#native.simd);
  }
  /** Whether products of 8 or more columns may take the panel GEMM (DeviceInitOptions.panelGemm). */
  get panelGemm(): boolean {
    return callNative(() => this.#native.panelGemm);
  }

  allocate(bytes: number, label: string): CpuBuffer {
    const b = new CpuBuffer(
      this,
      callNative(() => this.#addon.allocate(bytes)),
      label,
    );
    this.#buffers.add(b);
    return b;
  }

  async mapFile(path: string, offset: number, length: number, label: string): Promise<CpuBuffer> {
    const b = new CpuBuffer(
      this,
      callNative(() => this.#addon.mapFile(path, offset, length)),
      label,
    );
    this.#buffers.add(b);
    return b;
  }

  async write(buffer: BackendBuffer, offset: number, data: ArrayBufferView): Promise<void> {
    const b = this.#own(buffer, "write");
    callNative(() => b.native.write(offset, data));
  }

  async read(buffer: BackendBuffer, offset: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    const b = this.#own(buffer, "read");
    return callNative(() => b.native.read(offset, length, into));
  }

  async execute(
    program: Uint8Array,
    buffers: readonly BackendBuffer[],
    options: ExecuteOptions = {},
  ): Promise<ExecuteResult> {
    const natives = buffers.map((b, i) => this.#own(b, `execute (buffers[${i}])`).native);
    try {
      const r = await this.#native.execute(program, natives, options.profile === true);
      return r.nodeMicros ? { nodeMicros: r.nodeMicros } : {};
    } catch (e) {
      throw fromNative(e);
    }
  }

  /** Stops the thread pool and frees every buffer it made; throws BUSY while an execute runs. */
  dispose(): void {
    callNative(() => this.#native.dispose());
    for (const b of this.#buffers) callNative(() => b.native.dispose());
    this.#buffers.clear();
  }

  /** @internal */
  forget(b: CpuBuffer): void {
    this.#buffers.delete(b);
  }

  #own(buffer: BackendBuffer, what: string): CpuBuffer {
    if (!(buffer instanceof CpuBuffer) || buffer.owner !== this) {
      throw new CpuBackendError(
        "WRONG_DEVICE",
        `${what}: buffer "${buffer.label}" of device "${buffer.device}" was not made by this CPU runtime`,
      );
    }
    return buffer;
  }
}
