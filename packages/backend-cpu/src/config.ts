import { CpuBackendError } from "./errors.js";

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

/**
 * MINFER_CPU_PANEL_GEMM=0|1: the default of `init({ panelGemm })` (0: every product on the
 * dot-product kernels); unset or empty: undefined (the option's own default, true). Another value
 * is refused with INVALID_ARGUMENT when a runtime starts.
 */
export function panelGemmFromEnv(env: NodeJS.ProcessEnv = process.env): boolean | undefined {
  const v = env.MINFER_CPU_PANEL_GEMM;
  if (v === undefined || v === "") return undefined;
  if (v !== "0" && v !== "1")
    throw new CpuBackendError(
      "INVALID_ARGUMENT",
      `MINFER_CPU_PANEL_GEMM must be 0 or 1, not ${JSON.stringify(v)}`,
    );
  return v === "1";
}
