// Kernel variants chosen at run time, so that one GPU run can measure several of them side by side.
// Set per executor from JavaScript (packages/backend-cuda/src/config.ts reads the environment).
#pragma once

namespace minfer::cuda {

struct Tuning {
  // ATTENTION over many rows (prefill) with F16 k/v and head size 64 or 128: the tensor-core kernel
  // (ops/attention_mma.cuh: q and P rounded to f16, f32 accumulation) instead of the f32 tile kernel.
  bool attn_mma = true;
};

}  // namespace minfer::cuda
