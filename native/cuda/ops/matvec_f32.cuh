// The float mat-vec of the decode path (included by ops/matmul.cu only): F32, F16 and BF16 weights
// against contiguous f32 activation columns (to_f32_kernel), one warp per weight row, 16-byte
// weight loads, up to kMaxMvCols columns per weight read, f32 accumulation.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "matvec_q.cuh"

namespace minfer::cuda::mm {

// ---- the float mat-vec (F32 / F16 / BF16 weights, f32 activation columns) --------------------------
// Each lane reads 16 bytes of weights at a time (8 halves or 4 floats): K a multiple of 8 (4 for F32).

__host__ __device__ inline int f32_vec(DType t) { return t == DType::F32 ? 4 : 8; }
inline bool mv_f32_supported(DType t, int64_t K) { return mv_act_format(t) == ActFmt::F32 && K % f32_vec(t) == 0; }
inline bool mv_f32_aligned(const Planes& p) { return planes_aligned(p, 16) && p.ncols <= kMaxMvCols; }

template <DType T>
__device__ inline void load_vec(const uint8_t* p, float* w) {
  const uint4 v = *reinterpret_cast<const uint4*>(p);
  const uint32_t u[4] = {v.x, v.y, v.z, v.w};
  if (T == DType::F32) {
#pragma unroll
    for (int i = 0; i < 4; i++) w[i] = __uint_as_float(u[i]);
  } else if (T == DType::F16) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&u[i]));
      w[2 * i] = f.x;
      w[2 * i + 1] = f.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < 4; i++) {
      w[2 * i] = __uint_as_float(u[i] << 16);
      w[2 * i + 1] = __uint_as_float(u[i] & 0xffff0000u);
    }
  }
}

template <DType T, int NC>
__global__ void __launch_bounds__(kMvWarps * 32) mv_f32_kernel(Planes p, const float* __restrict__ act) {
  pdl_begin();
  constexpr int V = T == DType::F32 ? 4 : 8;
  const int lane = threadIdx.x % kWarp;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kMvWarps + threadIdx.x / kWarp;
  if (row >= p.M) return;
  const int64_t K = p.K, nv = K / V;
  for (int64_t z = blockIdx.y; z < p.n_planes; z += gridDim.y) {
    const Plane pl = plane_of(p, z);
    const int nc = plane_cols(p, pl);
    const uint8_t* wrow = pl.w + row * p.w_nb1;
    float acc[NC];
#pragma unroll
    for (int c = 0; c < NC; c++) acc[c] = 0.0f;
#pragma unroll 2
    for (int64_t j = lane; j < nv; j += kWarp) {
      float w[V];
      load_vec<T>(wrow + j * 16, w);
#pragma unroll
      for (int c = 0; c < NC; c++) {
        if (c < nc) {
          const float4* ap = reinterpret_cast<const float4*>(act + (pl.col0 + c) * K + j * V);
#pragma unroll
          for (int v = 0; v < V / 4; v++) {
            const float4 x = ap[v];
            acc[c] += w[4 * v] * x.x + w[4 * v + 1] * x.y + w[4 * v + 2] * x.z + w[4 * v + 3] * x.w;
          }
        }
      }
    }
#pragma unroll
    for (int c = 0; c < NC; c++) {
      const float s = warp_sum(acc[c]);
      if (lane == 0 && c < nc) reinterpret_cast<float*>(pl.out + c * p.o_nb1)[row] = plus_c(p, z, c, row, s);
    }
  }
}

template <DType T>
cudaError_t launch_mv_f32_t(const Planes& p, const float* act, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(ceil_div(p.M, kMvWarps)), static_cast<unsigned>(std::min<int64_t>(p.n_planes, 65535)));
  const dim3 block(kMvWarps * kWarp);
  if (p.ncols <= 1) return launch_k(mv_f32_kernel<T, 1>, grid, block, 0, s, p, act);
  if (p.ncols <= 2) return launch_k(mv_f32_kernel<T, 2>, grid, block, 0, s, p, act);
  if (p.ncols <= 4) return launch_k(mv_f32_kernel<T, 4>, grid, block, 0, s, p, act);
  return launch_k(mv_f32_kernel<T, 8>, grid, block, 0, s, p, act);
}

// act: cols contiguous f32 columns of K (to_f32_kernel); MUL_MAT planes only (no expert ids).
inline cudaError_t launch_mv_f32(const Planes& p, const float* act, cudaStream_t s) {
  if (p.M <= 0 || p.n_planes <= 0 || p.ncols <= 0) return cudaSuccess;
  switch (p.wtype) {
    case DType::F32: return launch_mv_f32_t<DType::F32>(p, act, s);
    case DType::F16: return launch_mv_f32_t<DType::F16>(p, act, s);
    case DType::BF16: return launch_mv_f32_t<DType::BF16>(p, act, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace minfer::cuda::mm
