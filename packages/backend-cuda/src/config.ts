/** Environment settings of the CUDA backend, read here and nowhere else. */
export interface CudaEnv {
  /** MINFER_CUDA_GRAPHS=0: launch every program's kernels directly (no CUDA graph capture/replay). */
  readonly graphs: boolean;
}

export function readEnv(env: NodeJS.ProcessEnv = process.env): CudaEnv {
  return { graphs: env.MINFER_CUDA_GRAPHS !== "0" };
}
