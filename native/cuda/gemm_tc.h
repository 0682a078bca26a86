// Tensor-core matrix multiply for prefill (many activation columns), called by ops/matmul.cu.
// Implemented in ops/gemm_tc.cu.
//
//   out[m + n*out_col] = sum_k W(k, m) * X[k + n*x_col]      for m < M, n < N, k < K
//
// W: M rows of K elements of dtype `wtype` (any weight dtype the CPU backend reads: F32, F16,
// BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K), row m at w + m*w_row_bytes.
// X: F32 activations, column n at x + n*x_col; out: F32, column n at out + n*out_col.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "../common/program_format.h"

namespace minfer::cuda {

struct GemmArgs {
  program::DType wtype;
  const uint8_t* w;
  int64_t w_row_bytes;
  const float* x;
  int64_t x_col;
  float* out;
  int64_t out_col;
  int64_t M, N, K;
  int stages = 2;  // shared-memory stages of the k-tile pipeline, 2 or 3 (Tuning::gemm_stages)
};

// Whether gemm_tc handles this weight dtype and shape (K a multiple of 32).
bool gemm_tc_supported(program::DType wtype, int64_t M, int64_t N, int64_t K);
// Whether gemm_tc's loader for `wtype` can read weights at `w` with rows (and planes) `stride`
// bytes apart; gemm_tc refuses a misaligned weight with cudaErrorMisalignedAddress. A weight view
// at whole rows of an aligned weight stays aligned.
bool gemm_tc_aligned(program::DType wtype, const uint8_t* w, int64_t stride);
// Device scratch bytes gemm_tc needs for these sizes (may be 0).
size_t gemm_tc_scratch(program::DType wtype, int64_t M, int64_t N, int64_t K);
// Enqueues the product on `stream` using `scratch` (gemm_tc_scratch bytes); returns the first error.
cudaError_t gemm_tc(const GemmArgs& a, void* scratch, cudaStream_t stream);

}  // namespace minfer::cuda
