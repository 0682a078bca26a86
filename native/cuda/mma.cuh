// Tensor-core PTX shared by the kernels that use mma.sync (ops/gemm_tc.cu, ops/attention_flash.cuh).
#pragma once
#include <cuda_fp16.h>

#include <cstdint>

namespace minfer::cuda {

// c (16×8 f32, this thread's 4 values) += a (16×16 f16, 4 registers) · b (16×8 f16, 2 registers),
// fragments in the layouts of PTX's mma.m16n8k16 .row.col.
__device__ __forceinline__ void mma_16816(float* c, const uint32_t* a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace minfer::cuda
