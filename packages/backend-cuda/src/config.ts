/** Environment settings of the CUDA backend, read here and nowhere else. */
export interface CudaEnv {
  /** MINFER_CUDA_GRAPHS=0: launch every program's kernels directly (no CUDA graph capture/replay). */
  readonly graphs: boolean;
  /**
   * MINFER_CUDA_MV_STAGE=1: the quantized mat-vec stages weight blocks in shared memory (a kernel
   * variant under measurement; same results).
   */
  readonly mvStage: boolean;
}

export function readEnv(env: NodeJS.ProcessEnv = process.env): CudaEnv {
  return { graphs: env.MINFER_CUDA_GRAPHS !== "0", mvStage: env.MINFER_CUDA_MV_STAGE === "1" };
}
