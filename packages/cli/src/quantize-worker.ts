// Worker thread of `minfer gguf quantize`: converts chunks of tensor data between ggml types.
import { parentPort } from "node:worker_threads";
import { convertTensor } from "@minfer/gguf";

export interface ConvertJob {
  id: number;
  data: Uint8Array;
  from: number;
  to: number;
  nElements: number;
}

parentPort?.on("message", (job: ConvertJob) => {
  try {
    const out = convertTensor(job.data, job.from, job.to, job.nElements);
    parentPort!.postMessage({ id: job.id, data: out }, [out.buffer as ArrayBuffer]);
  } catch (e) {
    const err = e as { message?: string; code?: unknown };
    parentPort!.postMessage({ id: job.id, error: err.message ?? String(e), code: err.code });
  }
});
