// Generic MUL_MAT / MUL_MAT_ADD / MUL_MAT_MULTI / MUL_MAT_ID kernels (included by ops/matmul.cu only): every
// weight dtype quants.cuh dequantizes, any activation dtype and strides, f32 accumulation.
//
//   * "Planes": a matmul is a set of planes, each one weight matrix [K, M] times a few activation
//     columns; MUL_MAT's plane z = i2 + ne2·i3 (weights broadcast over b's dims 2 and 3), MUL_MAT_ID's
//     plane z = e + n_used·t (weights = expert ids[e, t], read and bounds-checked on the device).
//   * mv_generic: one warp per weight row, dequant32 on the fly, for few columns and MUL_MAT_ID.
//   * mm_tiled_generic: 64 rows × 32 columns per block through shared memory, for many columns
//     when gemm_tc does not take the shape.
//   * to_f32_kernel: activation columns to contiguous f32 (for the float mat-vec and gemm_tc).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "../cuda_util.cuh"
#include "../kernel.h"
#include "../quants.cuh"

namespace minfer::cuda::mm {

using program::DType;

// Activations b (F32/F16/BF16, any strides); column c = i1 + ne1·(i2 + ne2·i3).
struct BView {
  const uint8_t* data;
  DType dtype;
  int64_t nb0, nb1, nb2, nb3;
  int64_t ne1, ne2;
  __device__ const uint8_t* col(int64_t c) const {
    const int64_t i1 = c % ne1, r = c / ne1;
    return data + i1 * nb1 + (r % ne2) * nb2 + (r / ne2) * nb3;
  }
};

// Where each plane reads its weights and activation columns and writes its output.
struct Planes {
  DType wtype;
  const uint8_t* w;  // weight tensor data
  int64_t w_nb1, w_nb2, w_nb3;
  int64_t K, M;
  int64_t n_planes;
  int64_t ncols;  // activation columns per plane (MUL_MAT: b's ne1; MUL_MAT_ID: 1)
  // Column chunks as planes (batch-invariant products, mv_col_planes; taken by the dp4a and float
  // mat-vecs only): plane z holds columns [z·ncols, min((z + 1)·ncols, cols_total)); 0: every plane
  // has ncols columns.
  int64_t cols_total;
  uint8_t* out;
  int64_t o_nb1, o_nb2, o_nb3;
  // MUL_MAT (ids == nullptr): broadcast ratios and b's ne2.
  int64_t r2, r3, ne2;
  // MUL_MAT_ID: ids [n_used, n_tok] I32, experts w_nb2 apart; b's ne1 (1 = shared).
  const uint8_t* ids;
  int64_t id_nb0, id_nb1, n_used, n_exp, b_ne1;
  DeviceError* err;
  int node;
  // MUL_MAT_ADD's c or MUL_MAT_MULTI's c_i (F32, any strides) broadcast over the output as ADD's
  // b, added to each result as it is stored (plus_c); nullptr for MUL_MAT, MUL_MAT_MULTI without
  // addends and MUL_MAT_ID.
  const uint8_t* c;
  int64_t c_ne[4], c_nb[4];
};

struct Plane {
  const uint8_t* w;  // weight matrix of the plane (row m at w + m·w_nb1)
  int64_t col0;      // its first activation column
  uint8_t* out;      // its output column 0 (column n at out + n·o_nb1)
  bool ok;           // false: an expert id out of range (output NaN, error reported)
};

__device__ inline Plane plane_of(const Planes& p, int64_t z) {
  Plane pl;
  if (!p.ids) {
    const int64_t i2 = z % p.ne2, i3 = z / p.ne2;
    pl.w = p.w + (i2 / p.r2) * p.w_nb2 + (i3 / p.r3) * p.w_nb3;
    pl.col0 = z * p.ncols;
    pl.out = p.out + i2 * p.o_nb2 + i3 * p.o_nb3;
    pl.ok = true;
    return pl;
  }
  const int64_t e = z % p.n_used, t = z / p.n_used;
  const int32_t id = *reinterpret_cast<const int32_t*>(p.ids + e * p.id_nb0 + t * p.id_nb1);
  pl.ok = id >= 0 && id < p.n_exp;
  pl.w = p.w + (pl.ok ? id : 0) * p.w_nb2;
  pl.col0 = (p.b_ne1 == 1 ? 0 : e) + p.b_ne1 * t;
  pl.out = p.out + e * p.o_nb1 + t * p.o_nb2;
  return pl;
}

// A bad expert id: report it once per warp and fill this row of the plane's column with NaN.
__device__ inline void bad_plane(const Planes& p, int64_t z, const Plane& pl, int64_t row, int lane) {
  if (lane != 0) return;
  const int64_t e = z % p.n_used, t = z / p.n_used;
  report_error(p.err, p.node, *reinterpret_cast<const int32_t*>(p.ids + e * p.id_nb0 + t * p.id_nb1));
  reinterpret_cast<float*>(pl.out)[row] = __int_as_float(0x7fc00000);
}

// Columns of plane pl: ncols, or the last column chunk's fewer (Planes::cols_total).
__device__ inline int plane_cols(const Planes& p, const Plane& pl) {
  return static_cast<int>(p.cols_total > 0 && p.cols_total - pl.col0 < p.ncols ? p.cols_total - pl.col0 : p.ncols);
}

// The value stored at (row, column col) of plane z: s, plus c there for MUL_MAT_ADD (one f32 add
// of the f32 product, never contracted: MUL_MAT followed by ADD).
__device__ inline float plus_c(const Planes& p, int64_t z, int64_t col, int64_t row, float s) {
  if (!p.c) return s;
  const int64_t i2 = z % p.ne2, i3 = z / p.ne2;
  const float cv = *reinterpret_cast<const float*>(p.c + (row % p.c_ne[0]) * p.c_nb[0] + (col % p.c_ne[1]) * p.c_nb[1] +
                                                   (i2 % p.c_ne[2]) * p.c_nb[2] + (i3 % p.c_ne[3]) * p.c_nb[3]);
  return __fadd_rn(s, cv);
}

constexpr int kMvWarps = 4;  // rows (warps) per block of the mat-vec kernels
constexpr int kMaxMvCols = 8;

// ---- generic mat-vec: grid (ceil(M / kMvWarps), min(n_planes, 65535)), kMvWarps·32 threads ----
__global__ void __launch_bounds__(kMvWarps * 32) mv_generic(Planes p, BView b) {
  const int lane = threadIdx.x % kWarp;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kMvWarps + threadIdx.x / kWarp;
  if (row >= p.M) return;
  const int64_t nchunks = (p.K + 31) / 32;
  for (int64_t z = blockIdx.y; z < p.n_planes; z += gridDim.y) {
    const Plane pl = plane_of(p, z);
    if (!pl.ok) {
      bad_plane(p, z, pl, row, lane);
      continue;
    }
    const uint8_t* wrow = pl.w + row * p.w_nb1;
    for (int64_t c0 = 0; c0 < p.ncols; c0 += kMaxMvCols) {
      const int nc = static_cast<int>(p.ncols - c0 < kMaxMvCols ? p.ncols - c0 : kMaxMvCols);
      const uint8_t* bcol[kMaxMvCols];
#pragma unroll
      for (int c = 0; c < kMaxMvCols; c++) bcol[c] = c < nc ? b.col(pl.col0 + c0 + c) : nullptr;
      float acc[kMaxMvCols];
#pragma unroll
      for (int c = 0; c < kMaxMvCols; c++) acc[c] = 0.0f;
      for (int64_t ch = lane; ch < nchunks; ch += kWarp) {
        const int64_t k0 = ch * 32;
        float w[32];
        const int n = p.K - k0 < 32 ? static_cast<int>(p.K - k0) : 32;
        if (n == 32) {
          dequant32(p.wtype, wrow, k0, w);
        } else {
          for (int j = 0; j < 32; j++) w[j] = j < n ? dequant_elem(p.wtype, wrow, k0 + j) : 0.0f;
        }
#pragma unroll
        for (int c = 0; c < kMaxMvCols; c++) {
          if (c >= nc) break;
          float s = 0.0f;
          for (int j = 0; j < n; j++) s += w[j] * load_elem(bcol[c] + (k0 + j) * b.nb0, b.dtype);
          acc[c] += s;
        }
      }
#pragma unroll
      for (int c = 0; c < kMaxMvCols; c++) {
        const float s = warp_sum(acc[c]);
        if (lane == 0 && c < nc) reinterpret_cast<float*>(pl.out + (c0 + c) * p.o_nb1)[row] = plus_c(p, z, c0 + c, row, s);
      }
    }
  }
}

// ---- generic tiled matmul (MUL_MAT planes only): grid (ceil(M/64), ceil(ncols/32), planes) ----
constexpr int kTileM = 64, kTileN = 32, kTileK = 32;
__global__ void __launch_bounds__(256) mm_tiled_generic(Planes p, BView b) {
  __shared__ float ws[kTileM][kTileK + 1];
  __shared__ float xs[kTileN][kTileK + 1];
  const int tid = threadIdx.x, lane = tid % kWarp, ty = tid / kWarp;  // ty 0..7
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kTileM, n0 = static_cast<int64_t>(blockIdx.y) * kTileN;
  for (int64_t z = blockIdx.z; z < p.n_planes; z += gridDim.z) {
    const Plane pl = plane_of(p, z);
    float acc[8];
#pragma unroll
    for (int r = 0; r < 8; r++) acc[r] = 0.0f;
    for (int64_t k0 = 0; k0 < p.K; k0 += kTileK) {
      const int kn = p.K - k0 < kTileK ? static_cast<int>(p.K - k0) : kTileK;
      if (tid < kTileM) {
        const int64_t m = m0 + tid;
        float* dst = ws[tid];
        if (m >= p.M) {
          for (int j = 0; j < kTileK; j++) dst[j] = 0.0f;
        } else if (kn == kTileK) {
          dequant32(p.wtype, pl.w + m * p.w_nb1, k0, dst);
        } else {
          for (int j = 0; j < kTileK; j++) dst[j] = j < kn ? dequant_elem(p.wtype, pl.w + m * p.w_nb1, k0 + j) : 0.0f;
        }
      }
      for (int idx = tid; idx < kTileN * kTileK; idx += 256) {
        const int c = idx / kTileK, kk = idx % kTileK;
        const int64_t n = n0 + c;
        xs[c][kk] = (n < p.ncols && kk < kn) ? load_elem(b.col(pl.col0 + n) + (k0 + kk) * b.nb0, b.dtype) : 0.0f;
      }
      __syncthreads();
#pragma unroll 8
      for (int kk = 0; kk < kTileK; kk++) {
        const float x = xs[lane][kk];
#pragma unroll
        for (int r = 0; r < 8; r++) acc[r] += ws[ty * 8 + r][kk] * x;
      }
      __syncthreads();
    }
    const int64_t n = n0 + lane;
    if (n < p.ncols) {
      float* o = reinterpret_cast<float*>(pl.out + n * p.o_nb1);
#pragma unroll
      for (int r = 0; r < 8; r++) {
        const int64_t m = m0 + ty * 8 + r;
        if (m < p.M) o[m] = plus_c(p, z, n, m, acc[r]);
      }
    }
  }
}

// ---- MUL_MAT_ADD after gemm_tc (which has no epilogue): out += c over every plane, once ----
__global__ void add_c_kernel(Planes p) {
  const int64_t total = p.M * p.ncols * p.n_planes;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i % p.M, rest = i / p.M, col = rest % p.ncols, z = rest / p.ncols;
    float* o = reinterpret_cast<float*>(p.out + col * p.o_nb1 + (z % p.ne2) * p.o_nb2 + (z / p.ne2) * p.o_nb3) + row;
    *o = plus_c(p, z, col, row, *o);
  }
}

// ---- activation columns [0, ncols) of b to contiguous f32: dst[c·K + k] ----
__global__ void to_f32_kernel(BView b, int64_t K, int64_t ncols, float* dst) {
  const int64_t total = K * ncols;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = i / K, k = i % K;
    dst[i] = load_elem(b.col(c) + k * b.nb0, b.dtype);
  }
}

}  // namespace minfer::cuda::mm
