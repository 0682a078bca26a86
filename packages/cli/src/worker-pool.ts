import { Worker } from "node:worker_threads";
import {
  GgufError,
  type GgufErrorCode,
  type GgufFile,
  type GgufTensorInfo,
  ggmlTypeInfo,
  type SynthChunk,
} from "@minfer/gguf";
import { WEIGHT_QUANTIZER, type WeightQuantizer } from "@minfer/ir";
import { Registry } from "@minfer/scheduler";
import type { ConvertJob, FileRange, SynthJob } from "./quantize-worker.js";

/**
 * Where `length` bytes of tensor `t`'s data, `start` bytes in, are in its file (as readTensorRange
 * of @minfer/gguf reads them): for a worker to read itself.
 */
export function tensorRange(file: GgufFile, t: GgufTensorInfo, start: number, length: number): FileRange {
  const part = file.parts[t.part];
  if (start < 0 || length < 0 || start + length > t.byteSize) {
    throw new GgufError(
      "INVALID_ARGUMENT",
      `range ${start}+${length} is outside tensor "${t.name}" (${t.byteSize} bytes)`,
    );
  }
  if (!part?.path) {
    throw new GgufError(
      "INVALID_ARGUMENT",
      `tensor "${t.name}" was parsed from memory, not read from a file`,
      {
        key: t.name,
      },
    );
  }
  return { path: part.path, offset: part.dataOffset + t.offset + start, length, tensor: t.name };
}

/** A backend's native weight quantizer and the package it came from (the workers load the same). */
export interface NativeQuantizer {
  readonly package: string;
  readonly quantizer: WeightQuantizer;
}

/** Whether a backend extension is a {@link WeightQuantizer}. */
function isWeightQuantizer(v: unknown): v is WeightQuantizer {
  const q = v as Partial<WeightQuantizer> | undefined;
  return typeof q?.convert === "function" && typeof q.unsupported === "function";
}

/**
 * The weight quantizer of the first backend in the registry that offers one
 * (`getExtension(WEIGHT_QUANTIZER)`), or why none does. `known`: only those packages (a worker
 * loading the one its pool found).
 */
export async function findWeightQuantizer(known?: readonly string[]): Promise<NativeQuantizer | string> {
  const registry = await Registry.discover(known ? { known } : {});
  const diagnostics = [...registry.diagnostics().values()];
  for (const b of registry.backends()) {
    const q = b.getExtension?.(WEIGHT_QUANTIZER);
    const pkg = diagnostics.find((d) => d.backend === b.name && d.status === "loaded")?.package;
    if (pkg !== undefined && isWeightQuantizer(q)) return { package: pkg, quantizer: q };
  }
  const why = diagnostics.map((d) => `${d.package}: ${d.reason}`).join("; ");
  return `no backend offers a native weight quantizer (${why || "none found"})`;
}

let found: Promise<NativeQuantizer | string> | undefined;

/** Which quantizer converted each quantized tensor: the native one, or TypeScript and why. */
export interface QuantizerUse {
  /** Names of the tensors the native quantizer converted. */
  readonly native: Set<string>;
  /** Tensors the TypeScript converted, by the reason the native one could not. */
  readonly typescript: Map<string, Set<string>>;
}

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
    if (job.kind === "synth" || !(job.data instanceof Uint8Array)) w.postMessage(job);
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

  /** Which quantizer converted the tensors so far (see {@link quantizerSummary}). */
  readonly used: QuantizerUse = { native: new Set(), typescript: new Map() };

  /**
   * Converts `data` (transferred to the worker, or a range of a file the worker reads: see
   * {@link tensorRange}) from one type to another; `importance` (copied) weighs the quantizer's
   * error per column. To a quantized type, the native quantizer converts it when it can (the same
   * bytes, faster), else the TypeScript; {@link used} records which and why, per `tensor` name.
   * `rowLength`: the tensor's row length (its dims[0]).
   */
  async convert(
    data: Uint8Array | FileRange,
    from: number,
    to: number,
    nElements: number,
    importance?: Float32Array,
    tensor = "",
    rowLength = nElements,
  ): Promise<Uint8Array> {
    const job: ConvertJob = { id: this.#nextId++, data, from, to, nElements };
    if (importance) job.importance = importance;
    if (from !== to && ggmlTypeInfo(to).quantized) {
      found ??= findWeightQuantizer();
      const native = await found;
      const why = typeof native === "string" ? native : native.quantizer.unsupported(from, to);
      if (why === undefined) {
        job.native = { package: (native as NativeQuantizer).package, rowLength };
        this.used.native.add(tensor);
      } else {
        const names = this.used.typescript.get(why) ?? new Set<string>();
        this.used.typescript.set(why, names.add(tensor));
      }
    }
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

/**
 * "native quantizer", "TypeScript quantizer (REASON)" or "native quantizer for N tensors,
 * TypeScript for M (REASON)": the quantizers `used` for the quantized tensors; "" for none.
 */
export function quantizerSummary(used: QuantizerUse): string {
  const ts = [...used.typescript.entries()];
  const nTs = ts.reduce((a, [, names]) => a + names.size, 0);
  const why = ts.map(([reason, names]) => (ts.length > 1 ? `${names.size}: ${reason}` : reason)).join("; ");
  if (nTs === 0) return used.native.size > 0 ? "native quantizer" : "";
  if (used.native.size === 0) return `TypeScript quantizer (${why})`;
  return `native quantizer for ${used.native.size} tensors, TypeScript for ${nTs} (${why})`;
}
