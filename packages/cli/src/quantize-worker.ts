// Worker thread of `minfer gguf quantize` and `minfer gguf synth`: converts chunks of tensor data
// between ggml types, or synthesizes chunks of random weights.
import { parentPort } from "node:worker_threads";
import { convertTensor, type SynthChunk, synthChunk } from "@minfer/gguf";

export interface ConvertJob {
  kind?: "convert";
  id: number;
  data: Uint8Array;
  from: number;
  to: number;
  nElements: number;
  /** Per-column importance of the rows being quantized (see `quantize` of @minfer/gguf). */
  importance?: Float32Array;
}

export interface SynthJob {
  kind: "synth";
  id: number;
  chunk: SynthChunk;
}

parentPort?.on("message", (job: ConvertJob | SynthJob) => {
  try {
    const out =
      job.kind === "synth"
        ? synthChunk(job.chunk)
        : convertTensor(job.data, job.from, job.to, job.nElements, job.importance);
    parentPort!.postMessage({ id: job.id, data: out }, [out.buffer as ArrayBuffer]);
  } catch (e) {
    const err = e as { message?: string; code?: unknown };
    parentPort!.postMessage({ id: job.id, error: err.message ?? String(e), code: err.code });
  }
});
