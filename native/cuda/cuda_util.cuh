// Device helpers every kernel file shares: element loads and stores of the plain dtypes, warp and
// block reductions, and launch arithmetic. Quantized blocks are in quants.cuh.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "../common/program_format.h"
#include "pdl.cuh"

namespace minfer::cuda {

constexpr int kWarp = 32;

__host__ __device__ inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One element of a plain dtype (F32, F16, BF16, I32 read as its value) as float.
__device__ inline float load_elem(const uint8_t* p, program::DType t) {
  switch (t) {
    case program::DType::F32: return *reinterpret_cast<const float*>(p);
    case program::DType::F16: return __half2float(*reinterpret_cast<const __half*>(p));
    case program::DType::BF16: return __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(p));
    case program::DType::I32: return static_cast<float>(*reinterpret_cast<const int32_t*>(p));
    default: return 0.0f;
  }
}

// Stores a float as a plain dtype (F16/BF16 round to nearest even; I32 truncates toward zero).
__device__ inline void store_elem(uint8_t* p, program::DType t, float v) {
  switch (t) {
    case program::DType::F32: *reinterpret_cast<float*>(p) = v; break;
    case program::DType::F16: *reinterpret_cast<__half*>(p) = __float2half_rn(v); break;
    case program::DType::BF16: *reinterpret_cast<__nv_bfloat16*>(p) = __float2bfloat16_rn(v); break;
    case program::DType::I32: *reinterpret_cast<int32_t*>(p) = static_cast<int32_t>(v); break;
    default: break;
  }
}

__device__ inline float warp_sum(float v) {
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline float warp_max(float v) {
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block (every thread gets it). `shared` holds at least blockDim.x / 32 floats;
// every thread of the block must call it.
__device__ inline float block_sum(float v, float* shared) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, n_warps = (blockDim.x + kWarp - 1) / kWarp;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < n_warps ? shared[lane] : 0.0f;
  return warp_sum(v);
}

__device__ inline float block_max(float v, float* shared) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, n_warps = (blockDim.x + kWarp - 1) / kWarp;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < n_warps ? shared[lane] : -INFINITY;
  return warp_max(v);
}

}  // namespace minfer::cuda
