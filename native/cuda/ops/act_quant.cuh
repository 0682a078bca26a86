// The activation quantization of the quantized mat-vec (formats in matvec_q.cuh), as device
// helpers shared by its own quantizing kernels and by the producers fused with it (norm.cu,
// elementwise.cu): one definition, so a fused producer writes the same bytes as the separate
// kernel. The arithmetic is the CPU backend's (native/cpu/quants.cpp).
#pragma once
#include <cuda_fp16.h>

#include <cstdint>

#include "../cuda_util.cuh"

namespace minfer::cuda {

// The CPU's act_scale_f16: d at binary16 precision (nearest even), kept as is beyond f16's range.
__device__ inline float act_scale_f16(float d) {
  if (!(d < 65520.0f)) return d;
  return __half2float(__float2half_rn(d));
}

// Q8A: a warp holds one block of 32, x being this lane's element. Every lane writes its code to
// *q; lane 0 writes the block's {d, d·Σq} to *ds.
__device__ inline void q8a_warp_block(float x, int8_t* q, float2* ds) {
  const float amax = warp_max(fabsf(x));
  const float d = __fdiv_rn(amax, 127.0f);
  const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
  const int v = __float2int_rn(__fmul_rn(x, id));
  const int sum = __reduce_add_sync(0xffffffffu, v);
  *q = static_cast<int8_t>(v);
  if (threadIdx.x % kWarp == 0) {
    const float d16 = act_scale_f16(d);
    *ds = make_float2(d16, __fmul_rn(d16, static_cast<float>(sum)));
  }
}

// Q8K: the scale of a block of 256 whose largest magnitude is amax, and the code of x under it.
__device__ inline float q8k_scale(float amax) { return __fdiv_rn(amax, 127.0f); }
__device__ inline int8_t q8k_code(float x, float d) {
  const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
  return static_cast<int8_t>(__float2int_rn(__fmul_rn(x, id)));
}

}  // namespace minfer::cuda
