// Kernel variants chosen at run time, so that one GPU run can measure several of them side by side.
// Set per executor from JavaScript (packages/backend-cuda/src/config.ts reads the environment).
#pragma once

namespace minfer::cuda {

struct Tuning {
  // Quantized mat-vec of Q4_0/Q8_0 weights: coalesced word loads shared among lanes
  // (mv_q_wide_kernel, ops/matvec_q_wide.cuh) instead of one block per lane (mv_q_kernel). Same
  // per-block arithmetic; the partial sums meet in another order.
  bool mv_wide = false;
  // ATTENTION over many rows (prefill) with F16 k/v and head size 64 or 128: the tensor-core kernel
  // (ops/attention_mma.cuh: q and P rounded to f16, f32 accumulation) instead of the f32 tile kernel.
  bool attn_mma = true;
};

}  // namespace minfer::cuda
