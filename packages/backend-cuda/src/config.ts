import { CudaBackendError } from "./errors.js";

/** Environment settings of the CUDA backend, read here and nowhere else. */
export interface CudaEnv {
  /** MINFER_CUDA_GRAPHS=0: launch every program's kernels directly (no CUDA graph capture/replay). */
  readonly graphs: boolean;
  /**
   * MINFER_CUDA_ATTN=tile: prefill attention with F16 k/v runs on the f32 tile kernel instead of the
   * default `mma` (tensor cores; q and the softmax weights rounded to f16).
   */
  readonly attnMma: boolean;
}

function choice(env: NodeJS.ProcessEnv, name: string, values: readonly string[]): string {
  const v = env[name] ?? "";
  if (v !== "" && !values.includes(v))
    throw new CudaBackendError(
      "BAD_ARGUMENT",
      `${name} must be ${values.map((x) => JSON.stringify(x)).join(" or ")}, not ${JSON.stringify(v)}`,
    );
  return v;
}

export function readEnv(env: NodeJS.ProcessEnv = process.env): CudaEnv {
  return {
    graphs: env.MINFER_CUDA_GRAPHS !== "0",
    attnMma: choice(env, "MINFER_CUDA_ATTN", ["mma", "tile"]) !== "tile",
  };
}
