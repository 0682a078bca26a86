// Kernel variants chosen at run time, so that one GPU run can measure several of them side by side.
// Set per executor from JavaScript (packages/backend-cuda/src/config.ts reads the environment).
#pragma once

namespace minfer::cuda {

struct Tuning {
  // Quantized mat-vec: each warp stages its rows' weight blocks in shared memory with coalesced
  // 16-byte loads before decoding them (ops/matvec_q_stage.cuh), instead of 2/4-byte loads straight
  // from global memory. Same arithmetic, same order: bit-identical results.
  bool mv_stage = false;
};

}  // namespace minfer::cuda
