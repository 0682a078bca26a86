import { open } from "node:fs/promises";
import type {
  BackendBuffer,
  Device,
  DeviceRead,
  DeviceRuntime,
  DeviceWrite,
  ExecuteOptions,
  ExecuteResult,
} from "@minfer/ir";
import { CudaBackendError, fromNative } from "./errors.js";
import type {
  NativeAddon,
  NativeBuffer,
  NativeExecutor,
  NativeExecutorStats,
  NativeTuning,
} from "./native.js";

/** Device memory of one CUDA device. */
export class CudaBuffer implements BackendBuffer {
  readonly size: number;
  readonly device: string;
  readonly label: string;
  #native: NativeBuffer | undefined;
  readonly #addon: NativeAddon;

  constructor(addon: NativeAddon, native: NativeBuffer, size: number, device: string, label: string) {
    this.#addon = addon;
    this.#native = native;
    this.size = size;
    this.device = device;
    this.label = label;
  }

  get disposed(): boolean {
    return this.#native === undefined;
  }

  /** The native handle; DISPOSED after dispose(). */
  handle(): NativeBuffer {
    if (!this.#native) throw new CudaBackendError("DISPOSED", `buffer "${this.label}" was disposed`);
    return this.#native;
  }

  dispose(): void {
    if (!this.#native) return;
    const n = this.#native;
    this.#native = undefined;
    try {
      this.#addon.free(n);
    } catch (e) {
      throw fromNative(e, `freeing "${this.label}"`);
    }
  }
}

const CHUNK = 64 << 20;
/** How long a replayed run is polled on every turn of the event loop before polling every ms. */
const SPIN_MS = 50;

/**
 * With MINFER_CUDA_STEP_TIMES=1, where the JavaScript thread's time goes around the steps that
 * executeWithIo replays (summed milliseconds; see {@link CudaRuntime.replayHostTimes}).
 */
export interface ReplayHostTimes {
  /** Steps replayed from the JavaScript thread. */
  readonly replays: number;
  /** From executeWithIo's call to launchReplay's (the runtime's checks and arguments, a wait for the step before). */
  readonly prepMs: number;
  /** launchReplay itself: the addon's checks, the staging copies, the uploads, graph and downloads enqueued. */
  readonly launchMs: number;
  /** From the launch to the poll that saw the step finished. */
  readonly waitMs: number;
  /** pollReplay calls. */
  readonly polls: number;
  /** From that poll to executeWithIo resuming after it (the hops of the promises back to the caller count in betweenMs). */
  readonly resumeMs: number;
  /** From one replayed step's return to the next one's call: the caller's JavaScript between steps. */
  readonly betweenMs: number;
  /** Gaps counted in betweenMs (replays that followed a replay). */
  readonly betweens: number;
}

/** Options of a {@link CudaRuntime} beyond the kernel variants. */
export interface CudaRuntimeOptions {
  /**
   * executeWithIo replays a captured step on the JavaScript thread (uploads, graph, downloads
   * enqueued at once, never waited on) and polls for its end between event-loop turns, instead
   * of handing each step to a worker thread. Default: true (MINFER_CUDA_POLL=0 turns it off).
   */
  readonly replayOnThread?: boolean;
}

/**
 * A started CUDA device: buffers, copies, and an executor (a stream, device scratch and the CUDA
 * graphs it captured). `execute` validates the program natively, enqueues its kernels off the
 * JavaScript thread and resolves when the stream has finished; a program that runs again with
 * the same bytes and buffers is captured into a CUDA graph and replayed from then on.
 */
export class CudaRuntime implements DeviceRuntime {
  readonly device: Device;
  readonly #addon: NativeAddon;
  readonly #index: number;
  readonly #executor: NativeExecutor;
  readonly #replayOnThread: boolean;
  /** Each program array's id (execute and launchReplay name programs by it). */
  readonly #ids = new WeakMap<Uint8Array, number>();
  #nextId = 1;
  /** The end of the last execute or executeWithIo asked for: each runs after the one before. */
  #tail: Promise<unknown> = Promise.resolve();
  #disposed = false;
  /** MINFER_CUDA_STEP_TIMES: the sums of ReplayHostTimes (undefined: not timed). */
  readonly #host: { -readonly [K in keyof ReplayHostTimes]: number } | undefined;
  /** When the last replayed step returned (performance.now()). */
  #lastReturn: number | undefined;
  /** When the poll that saw the running step finished happened. */
  #doneAt = 0;

  constructor(
    device: Device,
    addon: NativeAddon,
    index: number,
    useGraphs: boolean,
    tuning: NativeTuning = {},
    options: CudaRuntimeOptions = {},
  ) {
    this.device = device;
    this.#addon = addon;
    this.#index = index;
    this.#replayOnThread = (options.replayOnThread ?? true) && useGraphs;
    this.#host = tuning.stepTimes
      ? { replays: 0, prepMs: 0, launchMs: 0, waitMs: 0, polls: 0, resumeMs: 0, betweenMs: 0, betweens: 0 }
      : undefined;
    try {
      this.#executor = addon.createExecutor(index, useGraphs, tuning);
    } catch (e) {
      throw fromNative(e, `starting an executor on ${device.name}`);
    }
  }

  /**
   * With MINFER_CUDA_STEP_TIMES=1: the JavaScript thread's time around the replayed steps so far
   * (beside graphStats().stepTimes, the addon's GPU and copy times); undefined otherwise.
   */
  replayHostTimes(): ReplayHostTimes | undefined {
    return this.#host ? { ...this.#host } : undefined;
  }

  /** CUDA graphs kept now, and replays and captures since the runtime started. */
  graphStats(): NativeExecutorStats {
    this.#live();
    return this.#addon.executorStats(this.#executor);
  }

  #live(): void {
    if (this.#disposed)
      throw new CudaBackendError("DISPOSED", `the runtime of ${this.device.name} was disposed`);
  }

  #own(buffer: BackendBuffer): CudaBuffer {
    if (!(buffer instanceof CudaBuffer) || buffer.device !== this.device.name)
      throw new CudaBackendError(
        "WRONG_DEVICE",
        `buffer "${buffer.label}" belongs to ${buffer.device}, not ${this.device.name}`,
      );
    return buffer;
  }

  allocate(bytes: number, label: string): CudaBuffer {
    this.#live();
    if (!Number.isSafeInteger(bytes) || bytes < 0)
      throw new CudaBackendError(
        "INVALID_ARGUMENT",
        `allocate: bytes must be a non-negative integer, got ${bytes}`,
      );
    let native: NativeBuffer;
    try {
      native = this.#addon.alloc(this.#index, bytes);
    } catch (e) {
      throw fromNative(e, `allocating ${bytes} bytes for "${label}" on ${this.device.name}`);
    }
    return new CudaBuffer(this.#addon, native, bytes, this.device.name, label);
  }

  async mapFile(path: string, offset: number, length: number, label: string): Promise<CudaBuffer> {
    const buffer = this.allocate(length, label);
    try {
      const file = await open(path, "r");
      try {
        const chunk = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(1, length)));
        for (let done = 0; done < length; ) {
          const n = Math.min(chunk.length, length - done);
          const { bytesRead } = await file.read(chunk, 0, n, offset + done);
          if (bytesRead !== n)
            throw new CudaBackendError(
              "IO_ERROR",
              `${path}: ${length} bytes from ${offset} asked, the file ends first`,
            );
          await this.write(buffer, done, chunk.subarray(0, n));
          done += n;
        }
      } finally {
        await file.close();
      }
    } catch (e) {
      buffer.dispose();
      if (e instanceof CudaBackendError) throw e;
      throw new CudaBackendError("IO_ERROR", `${path}: ${(e as Error).message}`, { cause: e });
    }
    return buffer;
  }

  async write(buffer: BackendBuffer, offset: number, data: ArrayBufferView): Promise<void> {
    this.#live();
    const b = this.#own(buffer);
    try {
      this.#addon.write(b.handle(), offset, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    } catch (e) {
      if (e instanceof CudaBackendError) throw e;
      throw fromNative(e, `write to "${b.label}"`);
    }
  }

  async read(buffer: BackendBuffer, offset: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    this.#live();
    const b = this.#own(buffer);
    try {
      return this.#addon.read(b.handle(), offset, length, into);
    } catch (e) {
      if (e instanceof CudaBackendError) throw e;
      throw fromNative(e, `read from "${b.label}"`);
    }
  }

  /** Page-locked host memory: a read of a device buffer into it is one DMA transfer (no staging). */
  allocateHost(bytes: number): Uint8Array {
    this.#live();
    if (!Number.isSafeInteger(bytes) || bytes <= 0)
      throw new CudaBackendError(
        "INVALID_ARGUMENT",
        `allocateHost: bytes must be a positive integer, got ${bytes}`,
      );
    try {
      return this.#addon.allocHost(this.#index, bytes);
    } catch (e) {
      if (e instanceof CudaBackendError) throw e;
      throw fromNative(e, `allocating ${bytes} bytes of page-locked host memory for ${this.device.name}`);
    }
  }

  async execute(
    program: Uint8Array,
    buffers: readonly BackendBuffer[],
    options: ExecuteOptions = {},
  ): Promise<ExecuteResult> {
    this.#live();
    const natives = buffers.map((b) => this.#own(b).handle());
    return this.#serial(() => this.#execute(program, natives, options));
  }

  /** Runs f after every execute asked for before it has ended (a replayed step is polled, not awaited natively). */
  #serial<T>(f: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(f, f);
    this.#tail = run.catch(() => {});
    return run;
  }

  async #execute(
    program: Uint8Array,
    natives: NativeBuffer[],
    options: ExecuteOptions,
  ): Promise<ExecuteResult> {
    try {
      const r = await this.#addon.execute(
        this.#executor,
        program,
        natives,
        options.profile === true,
        this.#id(program),
      );
      if (r.graph === "failed") {
        // Correct but slower: never silent. Once per program (the executor does not retry it).
        const why = this.#addon.executorStats(this.#executor).lastGraphError ?? "unknown";
        process.emitWarning(
          `${this.device.name}: a program could not be captured into a CUDA graph (${why}); it runs with direct kernel launches`,
          { code: "MINFER_CUDA_GRAPH_FALLBACK" },
        );
      }
      return r.nodeMicros ? { nodeMicros: r.nodeMicros } : {};
    } catch (e) {
      throw fromNative(e, `${this.device.name}: execute`);
    }
  }

  /** A program array's id: programs are not changed once executed (the scheduler encodes each once). */
  #id(program: Uint8Array): number {
    let id = this.#ids.get(program);
    if (id === undefined) {
      id = this.#nextId++;
      this.#ids.set(program, id);
    }
    return id;
  }

  /**
   * The writes, the program and the reads in one call (DeviceRuntime.executeWithIo). A program
   * that ran before over the same buffers replays its CUDA graph from this thread: the writes go
   * through page-locked staging, the reads land in `into` when that is page-locked
   * (`allocateHost`), and the run's end is polled between event-loop turns — no worker thread, so
   * no thread hand-offs around a step. Otherwise (or with MINFER_CUDA_POLL=0) it writes, executes
   * and reads one after another.
   */
  async executeWithIo(
    program: Uint8Array,
    buffers: readonly BackendBuffer[],
    writes: readonly DeviceWrite[],
    reads: readonly DeviceRead[],
  ): Promise<Uint8Array[]> {
    const t0 = this.#host ? performance.now() : 0;
    this.#live();
    const natives = buffers.map((b) => this.#own(b).handle());
    return this.#serial(async () => {
      if (this.#replayOnThread && reads.every((r) => r.into !== undefined && r.into.byteLength >= r.length)) {
        let launched = false;
        const ups = writes.map((w) => [this.#own(w.buffer).handle(), w.offset, w.data] as const);
        const downs = reads.map((r) => [this.#own(r.buffer).handle(), r.offset, r.length, r.into!] as const);
        const t1 = this.#host ? performance.now() : 0;
        try {
          launched = this.#addon.launchReplay(
            this.#executor,
            this.#id(program),
            program.byteLength,
            natives,
            ups,
            downs,
          );
        } catch (e) {
          throw fromNative(e, `${this.device.name}: execute`);
        }
        if (launched) {
          const t2 = this.#host ? performance.now() : 0;
          await this.#waitReplay();
          if (this.#host) this.#timeReplay(t0, t1, t2);
          return reads.map((r) => r.into!.subarray(0, r.length));
        }
      }
      this.#lastReturn = undefined; // (a step run apart ends the replays' run of gaps)
      for (const w of writes) await this.write(w.buffer, w.offset, w.data);
      await this.#execute(program, natives, {});
      const out: Uint8Array[] = [];
      for (const r of reads) out.push(await this.read(r.buffer, r.offset, r.length, r.into));
      return out;
    });
  }

  /** Adds one replayed step's phases (its call at t0, launchReplay from t1 to t2) to the sums. */
  #timeReplay(t0: number, t1: number, t2: number): void {
    const h = this.#host!;
    const end = performance.now();
    h.replays++;
    h.prepMs += t1 - t0;
    h.launchMs += t2 - t1;
    h.waitMs += this.#doneAt - t2;
    h.resumeMs += end - this.#doneAt;
    if (this.#lastReturn !== undefined && t0 >= this.#lastReturn) {
      h.betweenMs += t0 - this.#lastReturn;
      h.betweens++;
    }
    this.#lastReturn = end;
  }

  /** Resolves when the launched run has finished: polled every event-loop turn, then every ms. */
  #waitReplay(): Promise<void> {
    const t0 = performance.now();
    return new Promise<void>((resolve, reject) => {
      const tick = () => {
        let done: boolean;
        try {
          if (this.#host) this.#host.polls++;
          done = this.#addon.pollReplay(this.#executor);
        } catch (e) {
          reject(fromNative(e, `${this.device.name}: execute`));
          return;
        }
        if (done) {
          if (this.#host) this.#doneAt = performance.now();
          resolve();
        } else if (performance.now() - t0 < SPIN_MS) setImmediate(tick);
        else setTimeout(tick, 1);
      };
      tick();
    });
  }

  /** Stops the executor (BUSY while an execute runs); buffers are freed by their owners. */
  dispose(): void {
    if (this.#disposed) return;
    try {
      this.#addon.disposeExecutor(this.#executor);
    } catch (e) {
      throw fromNative(e, `disposing the runtime of ${this.device.name}`);
    }
    this.#disposed = true;
  }
}
