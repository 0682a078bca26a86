// Kernel variants chosen at run time, so that one GPU run can measure several of them side by side.
// Set per executor from JavaScript (packages/backend-cuda/src/config.ts reads the environment).
#pragma once

namespace minfer::cuda {

struct Tuning {
  // ATTENTION over many rows (prefill) with F16 k/v and head size 64 or 128: the tensor-core kernel
  // (ops/attention_mma.cuh: q and P rounded to f16, f32 accumulation) instead of the f32 tile kernel.
  bool attn_mma = true;
  // ATTENTION over few rows (decode) with F16 k/v and head size 64 or 128: the decode kernel
  // (ops/attention_decode.cuh) instead of the f32 tile kernel. Off by default: on the H200 it
  // measured even with the tile kernel at short depths and slower at depth 4096 (docs/PERFORMANCE.md).
  bool attn_decode = false;
  // Adjacent nodes run as one launch where a fused kernel exists (fused.cu: RoPE of q and k with
  // the k and v cache stores).
  bool fuse = true;
  // Programmatic dependent launch (pdl.cuh) for the decode path's kernels, on compute capability 9.0
  // and later: each kernel's launch overlaps the tail of the one before it.
  bool pdl = true;
};

}  // namespace minfer::cuda
