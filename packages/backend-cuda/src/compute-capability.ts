/** Which GPUs the kernels can run on: compute capability 8.0 or later (see scripts/prebuilt.mjs). */
import { MIN_COMPUTE_CAPABILITY } from "../scripts/prebuilt.mjs";
import type { NativeDeviceInfo } from "./native.js";

/** "8.6" → 86; NaN when malformed. */
const rank = (cc: string): number => {
  const m = /^(\d+)\.(\d)$/.exec(cc);
  return m ? Number(m[1]) * 10 + Number(m[2]) : Number.NaN;
};

/** Why a device cannot run the kernels (its compute capability), or undefined when it can. */
export function computeCapabilityProblem(info: NativeDeviceInfo): string | undefined {
  const have = rank(info.computeCapability);
  if (have >= rank(MIN_COMPUTE_CAPABILITY)) return undefined;
  return (
    `cuda:${info.index} ${info.name} has compute capability ${info.computeCapability}; minfer's CUDA ` +
    `kernels need ${MIN_COMPUTE_CAPABILITY} or later (tensor-core mma.m16n8k16 and cp.async; the ` +
    "prebuilt binary holds sm_80, sm_86, sm_89, sm_90 and compute_90 PTX). Run on the CPU backend instead"
  );
}
