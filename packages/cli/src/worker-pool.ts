import { Worker } from "node:worker_threads";
import { GgufError, type GgufErrorCode, type SynthChunk } from "@minfer/gguf";
import type { ConvertJob, SynthJob } from "./quantize-worker.js";

interface Pending {
  resolve(data: Uint8Array): void;
  reject(e: Error): void;
}

/** A fixed set of conversion (and synthesis) workers; jobs queue until a worker is free. */
export class ConvertPool {
  readonly #workers: Worker[] = [];
  readonly #idle: Worker[] = [];
  readonly #queue: { job: ConvertJob | SynthJob; p: Pending }[] = [];
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;

  constructor(threads: number) {
    const url = new URL("./quantize-worker.js", import.meta.url);
    for (let i = 0; i < threads; i++) {
      const w = new Worker(url);
      w.on("message", (msg: { id: number; data?: Uint8Array; error?: string; code?: GgufErrorCode }) => {
        const p = this.#pending.get(msg.id)!;
        this.#pending.delete(msg.id);
        // A conversion error keeps its GgufError code across the thread boundary.
        if (msg.error !== undefined)
          p.reject(msg.code ? new GgufError(msg.code, msg.error) : new Error(msg.error));
        else p.resolve(msg.data!);
        this.#release(w);
      });
      w.on("error", (e) => {
        for (const p of this.#pending.values()) p.reject(e);
        this.#pending.clear();
      });
      this.#workers.push(w);
      this.#idle.push(w);
    }
  }

  #release(w: Worker): void {
    const next = this.#queue.shift();
    if (next) this.#send(w, next.job, next.p);
    else this.#idle.push(w);
  }

  #send(w: Worker, job: ConvertJob | SynthJob, p: Pending): void {
    this.#pending.set(job.id, p);
    if (job.kind === "synth") w.postMessage(job);
    else w.postMessage(job, [job.data.buffer as ArrayBuffer]);
  }

  #submit(job: ConvertJob | SynthJob): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      const p = { resolve, reject };
      const w = this.#idle.pop();
      if (w) this.#send(w, job, p);
      else this.#queue.push({ job, p });
    });
  }

  /**
   * Converts `data` (which is transferred to the worker) from one type to another; `importance`
   * (copied) weighs the quantizer's error per column.
   */
  convert(
    data: Uint8Array,
    from: number,
    to: number,
    nElements: number,
    importance?: Float32Array,
  ): Promise<Uint8Array> {
    const job: ConvertJob = { id: this.#nextId++, data, from, to, nElements };
    if (importance) job.importance = importance;
    return this.#submit(job);
  }

  /** Makes one chunk of synthesized weights (see `synthChunk` of @minfer/gguf). */
  synth(chunk: SynthChunk): Promise<Uint8Array> {
    return this.#submit({ kind: "synth", id: this.#nextId++, chunk });
  }

  async close(): Promise<void> {
    await Promise.all(this.#workers.map((w) => w.terminate()));
  }
}
