/** Environment settings of the CPU backend, read here and nowhere else. */
export interface CpuEnv {
  /** MINFER_CPU_SIMD: force a SIMD level ("scalar" | "avx2" | "avx512" | "neon"); "" = detected. */
  readonly simd: string;
  /** MINFER_SANITIZE=address: load the sanitizer build (build/Debug) instead of build/Release. */
  readonly sanitize: boolean;
}

export function readEnv(env: NodeJS.ProcessEnv = process.env): CpuEnv {
  return { simd: env.MINFER_CPU_SIMD ?? "", sanitize: env.MINFER_SANITIZE === "address" };
}
