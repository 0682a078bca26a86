// Worker thread of `minfer gguf quantize` and `minfer gguf synth`: converts chunks of tensor data
// between ggml types (with a backend's native quantizer, found through the registry, when the job
// says so, else with @minfer/gguf's TypeScript), or synthesizes chunks of random weights.
import { closeSync, openSync, readSync } from "node:fs";
import { parentPort } from "node:worker_threads";
import { convertTensor, GgufError, type SynthChunk, synthChunk } from "@minfer/gguf";
import type { WeightQuantizer } from "@minfer/ir";
import { findWeightQuantizer } from "./worker-pool.js";

/** Bytes of a file to convert, read by the worker (so the main thread never holds them). */
export interface FileRange {
  path: string;
  offset: number;
  length: number;
  /** The tensor's name, for the error when the file ends early. */
  tensor: string;
}

export interface ConvertJob {
  kind?: "convert";
  id: number;
  /** The bytes to convert (transferred), or where to read them. */
  data: Uint8Array | FileRange;
  from: number;
  to: number;
  nElements: number;
  /** Per-column importance of the rows being quantized (see `quantize` of @minfer/gguf). */
  importance?: Float32Array;
  /**
   * Set when the pool chose a backend's native quantizer for this job (the registry's
   * WEIGHT_QUANTIZER extension, found in `package`): the tensor's row length. It writes the same
   * bytes as the TypeScript.
   */
  native?: { package: string; rowLength: number };
}

export interface SynthJob {
  kind: "synth";
  id: number;
  chunk: SynthChunk;
}

let native: Promise<WeightQuantizer> | undefined;

/** The native quantizer of the package the pool found, loaded on the first job that asks for it. */
function loadQuantizer(pkg: string): Promise<WeightQuantizer> {
  native ??= findWeightQuantizer([pkg]).then((q) => {
    if (typeof q === "string") throw new GgufError("INVALID_ARGUMENT", `worker: ${q}`);
    return q.quantizer;
  });
  return native;
}

/** The buffer this worker reads ranges into, reused from job to job. */
let scratch = new Uint8Array(0);

/** The bytes of `r`, in `scratch`. */
function readRange(r: FileRange): Uint8Array {
  if (scratch.length < r.length) scratch = new Uint8Array(r.length);
  const out = scratch.subarray(0, r.length);
  let fd: number;
  try {
    fd = openSync(r.path, "r");
  } catch (e) {
    throw new GgufError("IO_ERROR", `cannot open ${r.path}: ${(e as Error).message}`, {
      path: r.path,
      cause: e,
    });
  }
  try {
    for (let got = 0; got < r.length; ) {
      const n = readSync(fd, out, got, r.length - got, r.offset + got);
      if (n === 0) {
        throw new GgufError("TRUNCATED", `file ends inside the data of tensor "${r.tensor}"`, {
          path: r.path,
          key: r.tensor,
        });
      }
      got += n;
    }
  } finally {
    closeSync(fd);
  }
  return out;
}

async function convert(job: ConvertJob): Promise<Uint8Array> {
  const data = job.data instanceof Uint8Array ? job.data : readRange(job.data);
  let out: Uint8Array;
  if (job.native === undefined || job.from === job.to) {
    out = convertTensor(data, job.from, job.to, job.nElements, job.importance);
  } else {
    const q = await loadQuantizer(job.native.package);
    out = q.convert(job.from, job.to, data, job.native.rowLength, job.importance);
  }
  // Never hand the reused buffer to the main thread (transferring it would detach it here).
  return out.buffer === scratch.buffer ? out.slice() : out;
}

parentPort?.on("message", (job: ConvertJob | SynthJob) => {
  const work = job.kind === "synth" ? Promise.resolve().then(() => synthChunk(job.chunk)) : convert(job);
  work.then(
    (out) => parentPort!.postMessage({ id: job.id, data: out }, [out.buffer as ArrayBuffer]),
    (e: unknown) => {
      const err = e as { message?: string; code?: unknown };
      parentPort!.postMessage({ id: job.id, error: err.message ?? String(e), code: err.code });
    },
  );
});
