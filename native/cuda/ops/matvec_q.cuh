// Decode fast paths of the matmuls (included by ops/matmul.cu only).
//
// Activation formats, as the CPU backend's (native/cpu/quants_internal.h), stored per column:
//   Q8A (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4): int8 qs[cols·K], then float2 {d, s} per 32 elements,
//        d = amax/127 rounded to f16 precision, s = d·Σq;
//   Q8K (Q2_K .. Q6_K, IQ4_XS): int8 qs[cols·K], then float d per 256 elements (f32), block sums are
//        recomputed with dp4a where needed;
//   F32 (F32, F16, BF16 weights): contiguous f32 columns (ops/matvec_f32.cuh).
// Weights are read in "parts" of 32 (a block of the 32-element types, a 32-element chunk of a K-quant
// super-block) against up to NC columns: integer dot products with __dp4a, then the CPU vec_dot's
// per-block float formula. mv_q_kernel gives each lane of a warp one part of R rows at a time.
// Weight types without a part here (the grid i-quants IQ1_*/IQ2_*/IQ3_*, TQ1_0, TQ2_0: ActFmt::None)
// take the generic mat-vec (matmul_generic.cuh), which dequantizes with quants.cuh.
// (Measured and dropped on the H200, docs/PERFORMANCE.md: staging blocks in shared memory, a thread
// block per row, coalesced word loads shared among lanes, a warp's cp.async copies of its next 32
// parts in 2-4 stages (session 16); each was slower.)
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "../loads.cuh"
#include "act_quant.cuh"
#include "matmul_generic.cuh"
#include "rope_common.cuh"

namespace minfer::cuda::mm {

enum class ActFmt { None, F32, Q8A, Q8K };

__host__ __device__ inline ActFmt mv_act_format(DType t) {
  switch (t) {
    case DType::F32:
    case DType::F16:
    case DType::BF16: return ActFmt::F32;
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q8_0:
    case DType::IQ4_NL:
    case DType::MXFP4: return ActFmt::Q8A;
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_XS: return ActFmt::Q8K;
    default: return ActFmt::None;
  }
}

inline size_t qs_bytes(int64_t K, int64_t cols) { return (static_cast<size_t>(K * cols) + 255) & ~static_cast<size_t>(255); }
inline size_t q8a_bytes(int64_t K, int64_t cols) { return qs_bytes(K, cols) + static_cast<size_t>(cols * (K / 32)) * 8; }
inline size_t q8k_bytes(int64_t K, int64_t cols) { return qs_bytes(K, cols) + static_cast<size_t>(cols * (K / 256)) * 4; }

// ---- activation quantization ----------------------------------------------------------------------

// One warp per block of 32: grid ceil(cols·K/32 / 8) blocks of 256 threads.
__global__ void quant_q8a_kernel(BView b, int64_t K, int64_t cols, int8_t* qs, float2* ds) {
  pdl_begin();
  const int lane = threadIdx.x % kWarp;
  const int64_t nblk = K / 32;
  const int64_t gw = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (gw >= nblk * cols) return;
  const int64_t col = gw / nblk, k = (gw % nblk) * 32 + lane;
  q8a_warp_block(load_elem(b.col(col) + k * b.nb0, b.dtype), qs + col * K + k, ds + gw);
}

// One warp per block of 256 (8 elements a lane).
__global__ void quant_q8k_kernel(BView b, int64_t K, int64_t cols, int8_t* qs, float* dk) {
  pdl_begin();
  const int lane = threadIdx.x % kWarp;
  const int64_t nblk = K / 256;
  const int64_t gw = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (gw >= nblk * cols) return;
  const int64_t col = gw / nblk, k0 = (gw % nblk) * 256;
  const uint8_t* src = b.col(col);
  float x[8], amax = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; i++) {
    x[i] = load_elem(src + (k0 + lane + 32 * i) * b.nb0, b.dtype);
    amax = fmaxf(amax, fabsf(x[i]));
  }
  const float d = q8k_scale(warp_max(amax));
#pragma unroll
  for (int i = 0; i < 8; i++) qs[col * K + k0 + lane + 32 * i] = q8k_code(x[i], d);
  if (lane == 0) dk[gw] = d;
}

inline cudaError_t launch_quant_q8a(const BView& b, int64_t K, int64_t cols, uint8_t* dst, cudaStream_t s) {
  const int64_t warps = cols * (K / 32);
  if (warps <= 0) return cudaSuccess;
  return launch_k(quant_q8a_kernel, dim3(static_cast<unsigned>(ceil_div(warps, 8))), dim3(256), 0, s, b, K, cols,
                  reinterpret_cast<int8_t*>(dst), reinterpret_cast<float2*>(dst + qs_bytes(K, cols)));
}

inline cudaError_t launch_quant_q8k(const BView& b, int64_t K, int64_t cols, uint8_t* dst, cudaStream_t s) {
  const int64_t warps = cols * (K / 256);
  if (warps <= 0) return cudaSuccess;
  return launch_k(quant_q8k_kernel, dim3(static_cast<unsigned>(ceil_div(warps, 8))), dim3(256), 0, s, b, K, cols,
                  reinterpret_cast<int8_t*>(dst), reinterpret_cast<float*>(dst + qs_bytes(K, cols)));
}

// ---- weight parts ---------------------------------------------------------------------------------
// load(row, pi): part pi of a row (block pi, or chunk pi%8 of super-block pi/8); dot(a, ad, as): its
// contribution against 32 activation codes a (8 words) with scale ad (and Q8A's s = as).

__device__ inline uint32_t ld2x16(const uint8_t* p) {  // 2-byte aligned
  const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
  return static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16);
}
__device__ inline uint32_t ld32(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

__device__ inline float f16lo(uint32_t v) { return __half2float(__ushort_as_half(static_cast<unsigned short>(v & 0xffffu))); }
__device__ inline float f16at(const uint8_t* p) { return __half2float(*reinterpret_cast<const __half*>(p)); }
__device__ inline int dot8(const int* q, const int* a) {
  int s = 0;
#pragma unroll
  for (int i = 0; i < 8; i++) s = __dp4a(q[i], a[i], s);
  return s;
}
__device__ inline int dot4(const int* q, const int* a) {
  int s = 0;
#pragma unroll
  for (int i = 0; i < 4; i++) s = __dp4a(q[i], a[i], s);
  return s;
}
__device__ inline int sum4(const int* a) {
  int s = 0;
#pragma unroll
  for (int i = 0; i < 4; i++) s = __dp4a(0x01010101, a[i], s);
  return s;
}
// Bits 0..3 of x to bit 4 of bytes 0..3.
__device__ inline int spread4(uint32_t x) {
  return static_cast<int>(((x & 1u) << 4) | ((x & 2u) << 11) | ((x & 4u) << 18) | ((x & 8u) << 25));
}

// kWide: the quants through ld_words2 (Tuning::mv_wide_loads) instead of 2-byte loads.
template <bool kWide>
struct PQ4_0 {
  static constexpr int kPerBlock = 1, kBlockBytes = kQ4_0Bytes;  // parts (of 32) per block, bytes
  static constexpr bool kQ8K = false;
  static constexpr int kAlign = 2;
  int q[8];
  float d;
  __device__ void load(const uint8_t* row, int64_t pi) {
    const uint8_t* s = row + pi * kQ4_0Bytes;
    d = f16at(s);
    uint32_t w[4];
    if (kWide) ld_words2(s + 2, w);
    else
#pragma unroll
      for (int i = 0; i < 4; i++) w[i] = ld2x16(s + 2 + 4 * i);
#pragma unroll
    for (int i = 0; i < 4; i++) {
      q[i] = static_cast<int>(w[i] & 0x0f0f0f0fu);
      q[4 + i] = static_cast<int>((w[i] >> 4) & 0x0f0f0f0fu);
    }
  }
  __device__ float dot(const int* a, float ad, float as) const {
    return __fmul_rn(d, __fsub_rn(__fmul_rn(ad, static_cast<float>(dot8(q, a))), __fmul_rn(8.0f, as)));
  }
};

struct PQ4_1 {
  static constexpr int kPerBlock = 1, kBlockBytes = kQ4_1Bytes;  // parts (of 32) per block, bytes
  static constexpr bool kQ8K = false;
  static constexpr int kAlign = 4;
  int q[8];
  float d, m;
  __device__ void load(const uint8_t* row, int64_t pi) {
    const uint8_t* s = row + pi * kQ4_1Bytes;
    const uint32_t dm = ld32(s);
    d = f16lo(dm);
    m = f16lo(dm >> 16);
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const uint32_t w = ld32(s + 4 + 4 * i);
      q[i] = static_cast<int>(w & 0x0f0f0f0fu);
      q[4 + i] = static_cast<int>((w >> 4) & 0x0f0f0f0fu);
    }
  }
  __device__ float dot(const int* a, float ad, float as) const {
    return __fadd_rn(__fmul_rn(__fmul_rn(d, ad), static_cast<float>(dot8(q, a))), __fmul_rn(m, as));
  }
};

struct PQ5_0 {
  static constexpr int kPerBlock = 1, kBlockBytes = kQ5_0Bytes;  // parts (of 32) per block, bytes
  static constexpr bool kQ8K = false;
  static constexpr int kAlign = 2;
  int q[8];
  float d;
  __device__ void load(const uint8_t* row, int64_t pi) {
    const uint8_t* s = row + pi * kQ5_0Bytes;
    d = f16at(s);
    const uint32_t qh = ld2x16(s + 2);
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const uint32_t w = ld2x16(s + 6 + 4 * i);
      q[i] = static_cast<int>(w & 0x0f0f0f0fu) | spread4(qh >> (4 * i));
      q[4 + i] = static_cast<int>((w >> 4) & 0x0f0f0f0fu) | spread4(qh >> (16 + 4 * i));
    }
  }
  __device__ float dot(const int* a, float ad, float as) const {
    return __fmul_rn(d, __fsub_rn(__fmul_rn(ad, static_cast<float>(dot8(q, a))), __fmul_rn(16.0f, as)));
  }
};

struct PQ5_1 {
  static constexpr int kPerBlock = 1, kBlockBytes = kQ5_1Bytes;  // parts (of 32) per block, bytes
  static constexpr bool kQ8K = false;
  static constexpr int kAlign = 4;
  int q[8];
  float d, m;
  __device__ void load(const uint8_t* row, int64_t pi) {
    const uint8_t* s = row + pi * kQ5_1Bytes;
    const uint32_t dm = ld32(s);
    d = f16lo(dm);
    m = f16lo(dm >> 16);
    const uint32_t qh = ld32(s + 4);
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const uint32_t w = ld32(s + 8 + 4 * i);
      q[i] = static_cast<int>(w & 0x0f0f0f0fu) | spread4(qh >> (4 * i));
      q[4 + i] = static_cast<int>((w >> 4) & 0x0f0f0f0fu) | spread4(qh >> (16 + 4 * i));
    }
  }
  __device__ float dot(const int* a, float ad, float as) const {
    return __fadd_rn(__fmul_rn(__fmul_rn(d, ad), static_cast<float>(dot8(q, a))), __fmul_rn(m, as));
  }
};

template <bool kWide>
struct PQ8_0 {
  static constexpr int kPerBlock = 1, kBlockBytes = kQ8_0Bytes;  // parts (of 32) per block, bytes
  static constexpr bool kQ8K = false;
  static constexpr int kAlign = 2;
  int q[8];
  float d;
  __device__ void load(const uint8_t* row, int64_t pi) {
    const uint8_t* s = row + pi * kQ8_0Bytes;
    d = f16at(s);
    uint32_t w[8];
    if (kWide) ld_words2(s + 2, w);
    else
#pragma unroll
      for (int i = 0; i < 8; i++) w[i] = ld2x16(s + 2 + 4 * i);
#pragma unroll
    for (int i = 0; i < 8; i++) q[i] = static_cast<int>(w[i]);
  }
  __device__ float dot(const int* a, float ad, float) const {
    return __fmul_rn(__fmul_rn(d, ad), static_cast<float>(dot8(q, a)));
  }
};

// K-quants: chunk c = pi % 8 of super-block pi / 8 (elements 32c .. 32c+31).
struct PQ2_K {
  static constexpr int kPerBlock = 8, kBlockBytes = kQ2_KBytes;  // parts (of 32) per block, bytes
  static constexpr bool kQ8K = true;
  static constexpr int kAlign = 4;
  int q[8];
  int sc0, sc1;
  float d, dmin;
  __device__ void load(const uint8_t* row, int64_t pi) {
    const uint8_t* s = row + (pi / 8) * kQ2_KBytes;
    const int c = static_cast<int>(pi % 8);
    const uint32_t dd = ld32(s + 80);
    d = f16lo(dd);
    dmin = f16lo(dd >> 16);
    sc0 = s[2 * c];
    sc1 = s[2 * c + 1];
    const uint8_t* qp = s + 16 + 32 * (c >> 2);
    const int shift = 2 * (c & 3);
#pragma unroll
    for (int i = 0; i < 8; i++) q[i] = static_cast<int>((ld32(qp + 4 * i) >> shift) & 0x03030303u);
  }
  __device__ float dot(const int* a, float ad, float) const {
    const int sumi = (sc0 & 15) * dot4(q, a) + (sc1 & 15) * dot4(q + 4, a + 4);
    const int summ = (sc0 >> 4) * sum4(a) + (sc1 >> 4) * sum4(a + 4);
    return __fmul_rn(ad, __fsub_rn(__fmul_rn(d, static_cast<float>(sumi)), __fmul_rn(dmin, static_cast<float>(summ))));
  }
};

struct PQ3_K {
  static constexpr int kPerBlock = 8, kBlockBytes = kQ3_KBytes;  // parts (of 32) per block, bytes
  static constexpr bool kQ8K = true;
  static constexpr int kAlign = 2;
  int q[8];
  int sc0, sc1;
  float d;
  __device__ void load(const uint8_t* row, int64_t pi) {
    const uint8_t* s = row + (pi / 8) * kQ3_KBytes;
    const int c = static_cast<int>(pi % 8);
    d = f16at(s + 108);
    sc0 = q_scale_q3k(2 * c, s + 96);
    sc1 = q_scale_q3k(2 * c + 1, s + 96);
    const uint8_t* qp = s + 32 + 32 * (c >> 2);
    const int shift = 2 * (c & 3);
#pragma unroll
    for (int i = 0; i < 8; i++) {
      const uint32_t lo = (ld2x16(qp + 4 * i) >> shift) & 0x03030303u;
      const uint32_t hi = ((ld2x16(s + 4 * i) >> c) & 0x01010101u) << 2;
      q[i] = static_cast<int>(lo | hi);  // q + 4, 0..7
    }
  }
  __device__ float dot(const int* a, float ad, float) const {
    const int sumi = sc0 * (dot4(q, a) - 4 * sum4(a)) + sc1 * (dot4(q + 4, a + 4) - 4 * sum4(a + 4));
    return __fmul_rn(__fmul_rn(d, ad), static_cast<float>(sumi));
  }
};

template <bool kFive>
struct PQ45_K {
  static constexpr int kPerBlock = 8, kBlockBytes = kFive ? kQ5_KBytes : kQ4_KBytes;  // parts per block, bytes
  static constexpr bool kQ8K = true;
  static constexpr int kAlign = 4;
  int q[8];
  int sc, mn;
  float d, dmin;
  __device__ void load(const uint8_t* row, int64_t pi) {
    const uint8_t* s = row + (pi / 8) * (kFive ? kQ5_KBytes : kQ4_KBytes);
    const int c = static_cast<int>(pi % 8);
    const uint32_t dd = ld32(s);
    d = f16lo(dd);
    dmin = f16lo(dd >> 16);
    q_scale_min_k4(c, s + 4, &sc, &mn);
    const uint8_t* qp = s + (kFive ? 48 : 16) + 32 * (c >> 1);
    const int shift = 4 * (c & 1);
#pragma unroll
    for (int i = 0; i < 8; i++) {
      uint32_t v = (ld32(qp + 4 * i) >> shift) & 0x0f0f0f0fu;
      if (kFive) v |= ((ld32(s + 16 + 4 * i) >> c) & 0x01010101u) << 4;
      q[i] = static_cast<int>(v);
    }
  }
  __device__ float dot(const int* a, float ad, float) const {
    const int sumi = sc * dot8(q, a);
    const int summ = mn * (sum4(a) + sum4(a + 4));
    return __fmul_rn(ad, __fsub_rn(__fmul_rn(d, static_cast<float>(sumi)), __fmul_rn(dmin, static_cast<float>(summ))));
  }
};

// Q6_K, a part of 32 consecutive elements with 2-byte loads (MINFER_CUDA_MV_WIDE=0; PQ6_Ks below
// is the default).
struct PQ6_K {
  static constexpr int kPerBlock = 8, kBlockBytes = kQ6_KBytes;  // parts (of 32) per block, bytes
  static constexpr bool kQ8K = true;
  static constexpr int kAlign = 2;
  int q[8];
  int sc0, sc1;
  float d;
  __device__ void load(const uint8_t* row, int64_t pi) {
    const uint8_t* s = row + (pi / 8) * kQ6_KBytes;
    const int c = static_cast<int>(pi % 8);
    const int h = c >> 2, r = c & 3;
    d = f16at(s + 208);
    const uint16_t scs = *reinterpret_cast<const uint16_t*>(s + 192 + 8 * h + 2 * r);  // both scales
    sc0 = static_cast<int8_t>(scs & 0xffu);
    sc1 = static_cast<int8_t>(scs >> 8);
    const uint8_t* ql = s + 64 * h + 32 * (r & 1);
    const uint8_t* qh = s + 128 + 32 * h;
    const int lshift = 4 * (r >> 1), hshift = 2 * r;
    uint32_t wl[8], wh[8];
#pragma unroll
    for (int i = 0; i < 8; i++) wl[i] = ld2x16(ql + 4 * i), wh[i] = ld2x16(qh + 4 * i);
#pragma unroll
    for (int i = 0; i < 8; i++) {
      const uint32_t lo = (wl[i] >> lshift) & 0x0f0f0f0fu;
      const uint32_t hi = ((wh[i] >> hshift) & 0x03030303u) << 4;
      q[i] = static_cast<int>(lo | hi);  // q + 32, 0..63
    }
  }
  __device__ float dot(const int* a, float ad, float) const {
    const int sumi = sc0 * (dot4(q, a) - 32 * sum4(a)) + sc1 * (dot4(q + 4, a + 4) - 32 * sum4(a + 4));
    return __fmul_rn(__fmul_rn(d, ad), static_cast<float>(sumi));
  }
};

// Q6_K with a part that reads each quant byte once (the default with wide loads): part pi of
// super-block pi / 8 is half h = (pi % 8) / 4 of it and the elements l = 8j .. 8j + 7 (j = pi % 4)
// of each of the half's four 32-element chunks, i.e. 8 bytes of ql at 64h + 8j (chunks 0 and 2,
// low and high nibbles), 8 at 64h + 32 + 8j (chunks 1 and 3) and 8 of qh at 128 + 32h + 8j (two
// bits of each chunk). PQ6_K's part of 32 consecutive elements reads its half's 32 qh bytes for
// two bits of each and its ql bytes for one nibble: 68 bytes loaded for 26 of the weight.
// Its activation codes are four runs of 8 (kSpread: load_act).
struct PQ6_Ks {
  static constexpr int kPerBlock = 8, kBlockBytes = kQ6_KBytes;  // parts (of 32) per block, bytes
  static constexpr bool kQ8K = true;
  static constexpr bool kSpread = true;
  static constexpr int kAlign = 2;
  int q[8];  // chunk r's two words at q[2r], q[2r + 1] (each code q + 32, 0..63)
  int sc[4];
  float d;
  // The 32 activation codes of part pi from column col (K codes): chunk r's 8 at a[2r], a[2r + 1].
  __device__ static void load_act(const int8_t* col, int64_t pi, int (&a)[8]) {
    const int u = static_cast<int>(pi % 8), h = u >> 2, j = u & 3;
    const int2* p = reinterpret_cast<const int2*>(col + (pi / 8) * 256 + 128 * h + 8 * j);
#pragma unroll
    for (int r = 0; r < 4; r++) {
      const int2 v = p[4 * r];  // + 32 r codes
      a[2 * r] = v.x;
      a[2 * r + 1] = v.y;
    }
  }
  __device__ void load(const uint8_t* row, int64_t pi) {
    const uint8_t* s = row + (pi / 8) * kQ6_KBytes;
    const int u = static_cast<int>(pi % 8), h = u >> 2, j = u & 3;
    uint32_t lo[2], hi[2], qh[2];
    ld_words2(s + 64 * h + 8 * j, lo);
    ld_words2(s + 64 * h + 32 + 8 * j, hi);
    ld_words2(s + 128 + 32 * h + 8 * j, qh);
    d = f16at(s + 208);
    // the half's 8 scales: chunk r's at 2r (l < 16) and 2r + 1 (byte loads: an 8-byte load of them
    // could reach past the super-block, and past the buffer after its last one)
#pragma unroll
    for (int r = 0; r < 4; r++) sc[r] = static_cast<int8_t>(__ldg(s + 192 + 8 * h + 2 * r + (j >> 1)));
#pragma unroll
    for (int w = 0; w < 2; w++) {
      q[0 + w] = static_cast<int>((lo[w] & 0x0f0f0f0fu) | ((qh[w] & 0x03030303u) << 4));
      q[2 + w] = static_cast<int>((hi[w] & 0x0f0f0f0fu) | (((qh[w] >> 2) & 0x03030303u) << 4));
      q[4 + w] = static_cast<int>(((lo[w] >> 4) & 0x0f0f0f0fu) | (((qh[w] >> 4) & 0x03030303u) << 4));
      q[6 + w] = static_cast<int>(((hi[w] >> 4) & 0x0f0f0f0fu) | (((qh[w] >> 6) & 0x03030303u) << 4));
    }
  }
  __device__ float dot(const int* a, float ad, float) const {
    int sumi = 0;
#pragma unroll
    for (int r = 0; r < 4; r++) {
      const int dq = __dp4a(q[2 * r + 1], a[2 * r + 1], __dp4a(q[2 * r], a[2 * r], 0));
      const int sa = __dp4a(0x01010101, a[2 * r + 1], __dp4a(0x01010101, a[2 * r], 0));
      sumi += sc[r] * (dq - 32 * sa);
    }
    return __fmul_rn(__fmul_rn(d, ad), static_cast<float>(sumi));
  }
};

// ---- IQ4_NL / IQ4_XS / MXFP4: 4-bit codes into a 16-entry table of int8 levels --------------
// (kvalues_iq4nl, kvalues_mxfp4). The 16 levels sit in four words (byte i of word k: level 4k + i;
// immediates). A word of quant bytes holds 8 codes; each 16-bit half (codes lo0, hi0, lo1, hi1 as
// selector nibbles) is looked up with three __byte_perm (levels 0-7, levels 8-15, then per byte the
// one its code's bit 3 picks; __byte_perm reads 3 bits of each selector nibble), and two more split
// the halves' results into the low-nibble word (elements 4i..4i+3) and the high-nibble word
// (16+4i..) of Q4_0's layout.

// Level word k (0..3) of a 16-entry table.
__device__ constexpr uint32_t level_word(const int8_t* t, int k) {
  return static_cast<uint32_t>(static_cast<uint8_t>(t[4 * k])) |
         (static_cast<uint32_t>(static_cast<uint8_t>(t[4 * k + 1])) << 8) |
         (static_cast<uint32_t>(static_cast<uint8_t>(t[4 * k + 2])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(t[4 * k + 3])) << 24);
}

// The levels of the four codes in bits 0..15 of s (nibble n: output byte n) from the table in
// words t0..t3.
__device__ __forceinline__ uint32_t lookup16(uint32_t s, uint32_t t0, uint32_t t1, uint32_t t2, uint32_t t3) {
  const uint32_t lo = __byte_perm(t0, t1, s);  // right where the code is < 8
  const uint32_t hi = __byte_perm(t2, t3, s);  // right where the code is >= 8 (code & 7 selects)
  return __byte_perm(lo, hi, 0x3210u | ((s >> 1) & 0x4444u));
}

// Word k of kvalues_mxfp4 (kMx) or kvalues_iq4nl.
template <bool kMx>
__device__ constexpr uint32_t table_word(int k) {
  return kMx ? level_word(minfer::quant::kvalues_mxfp4<>, k) : level_word(minfer::quant::kvalues_iq4nl<>, k);
}

// A word of 8 codes (byte i: element i low nibble, element i + 16 high) as the low-nibble levels
// *lo (bytes i) and the high-nibble levels *hi, from table kMx ? kvalues_mxfp4 : kvalues_iq4nl.
template <bool kMx = false>
__device__ __forceinline__ void levels8(uint32_t w, int* lo, int* hi) {
  constexpr uint32_t t0 = table_word<kMx>(0), t1 = table_word<kMx>(1), t2 = table_word<kMx>(2), t3 = table_word<kMx>(3);
  const uint32_t a = lookup16(w, t0, t1, t2, t3);        // lo0 hi0 lo1 hi1
  const uint32_t b = lookup16(w >> 16, t0, t1, t2, t3);  // lo2 hi2 lo3 hi3
  *lo = static_cast<int>(__byte_perm(a, b, 0x6420u));
  *hi = static_cast<int>(__byte_perm(a, b, 0x7531u));
}

// IQ4_NL (18-byte blocks { f16 d; u8 qs[16] }, 2-byte aligned) against Q8A: d·d_a·Σ level·a, as the
// CPU's vec_dot_iq4_nl. kWide: the quants through ld_words2 (Tuning::mv_wide_loads).
template <bool kWide>
struct PIQ4_NL {
  static constexpr int kPerBlock = 1, kBlockBytes = kIQ4_NLBytes;  // parts (of 32) per block, bytes
  static constexpr bool kQ8K = false;
  static constexpr int kAlign = 2;
  int q[8];
  float d;
  __device__ void load(const uint8_t* row, int64_t pi) {
    const uint8_t* s = row + pi * kIQ4_NLBytes;
    d = f16at(s);
    uint32_t w[4];
    if (kWide) ld_words2(s + 2, w);
    else
#pragma unroll
      for (int i = 0; i < 4; i++) w[i] = ld2x16(s + 2 + 4 * i);
#pragma unroll
    for (int i = 0; i < 4; i++) levels8(w[i], &q[i], &q[4 + i]);
  }
  __device__ float dot(const int* a, float ad, float) const {
    return __fmul_rn(__fmul_rn(d, ad), static_cast<float>(dot8(q, a)));
  }
};

// IQ4_XS (136-byte super-blocks { f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128] }, 8-byte
// aligned: weight_align) against Q8K: chunk c = pi % 8 is sub-block c, (d·d_a·(scale_c - 32))·Σ
// level·a as the CPU's vec_dot_iq4_xs.
struct PIQ4_XS {
  static constexpr int kPerBlock = 8, kBlockBytes = kIQ4_XSBytes;  // parts (of 32) per block, bytes
  static constexpr bool kQ8K = true;
  static constexpr int kAlign = 8;
  int q[8];
  int ls;
  float d;
  __device__ void load(const uint8_t* row, int64_t pi) {
    const uint8_t* s = row + (pi / 8) * kIQ4_XSBytes;
    const int c = static_cast<int>(pi % 8);
    const uint2 hd = *reinterpret_cast<const uint2*>(s);  // d | scales_h << 16, scales_l
    const uint2* qp = reinterpret_cast<const uint2*>(s + 8 + 16 * c);
    const uint2 w0 = qp[0], w1 = qp[1];
    d = f16lo(hd.x);
    ls = static_cast<int>(((hd.y >> (4 * c)) & 15u) | (((hd.x >> (16 + 2 * c)) & 3u) << 4)) - 32;
    levels8(w0.x, &q[0], &q[4]);
    levels8(w0.y, &q[1], &q[5]);
    levels8(w1.x, &q[2], &q[6]);
    levels8(w1.y, &q[3], &q[7]);
  }
  __device__ float dot(const int* a, float ad, float) const {
    return __fmul_rn(__fmul_rn(__fmul_rn(d, ad), static_cast<float>(ls)), static_cast<float>(dot8(q, a)));
  }
};

// MXFP4 (17-byte blocks { u8 e; u8 qs[16] }, byte aligned) against Q8A: (d_a·2^(e-128))·Σ level·a
// with the doubled E2M1 levels, as the CPU's vec_dot_mxfp4. The block's bytes come from the three
// 8-byte words holding them (any offset), shifted into place.
struct PMXFP4 {
  static constexpr int kPerBlock = 1, kBlockBytes = kMXFP4Bytes;  // parts (of 32) per block, bytes
  static constexpr bool kQ8K = false;
  static constexpr int kAlign = 1;
  int q[8];
  float dh;
  __device__ void load(const uint8_t* row, int64_t pi) {
    const uint8_t* s = row + pi * kMXFP4Bytes;
    uint32_t v[6];
    const int off = ld_words8<3>(s, kMXFP4Bytes, v);
    const uint32_t e = ((off < 4 ? v[0] : v[1]) >> (8 * (off & 3))) & 0xffu;
    dh = e8m0_half(e);
    const int o = off + 1, base = o >> 2;  // the quants start `o` bytes in (1..8): word base, byte o & 3
    const unsigned sh = static_cast<unsigned>(o & 3) * 8u;
#pragma unroll
    for (int k = 0; k < 4; k++) {
      const uint32_t lo = base == 0 ? v[k] : base == 1 ? v[k + 1] : v[k + 2];
      const uint32_t hi = base == 0 ? v[k + 1] : base == 1 ? v[k + 2] : (k < 3 ? v[k < 3 ? k + 3 : 0] : 0u);
      levels8<true>(__funnelshift_r(lo, hi, sh), &q[k], &q[4 + k]);
    }
  }
  __device__ float dot(const int* a, float ad, float) const {
    return __fmul_rn(__fmul_rn(ad, dh), static_cast<float>(dot8(q, a)));
  }
};

// Whether part type Q reads its activation codes through Q::load_act (else 32 consecutive ones).
template <class Q, class = void>
struct spread_parts : std::false_type {};
template <class Q>
struct spread_parts<Q, std::void_t<decltype(Q::kSpread)>> : std::bool_constant<Q::kSpread> {};

// ---- several weights against the same activations in one launch -------------------------------
// (MUL_MAT_MULTI's q/k/v or gate/up): block x of the grid belongs to weight i when
// first[i] <= x < first[i + 1].
constexpr int kMaxMvBatch = 4;

struct MvBatch {
  Planes p[kMaxMvBatch];
  int64_t first[kMaxMvBatch + 1];  // first block (grid x) of each weight; first[n] = grid x
  int n;
};

// The batch of ps[0..n) with ceil(M / rows_per_block) blocks per weight; false when the grid
// would be too large.
inline bool make_batch(const Planes* ps, int n, int64_t rows_per_block, MvBatch* bt) {
  *bt = MvBatch{};
  bt->n = n;
  int64_t blocks = 0;
  for (int i = 0; i < n; i++) {
    bt->p[i] = ps[i];
    bt->first[i] = blocks;
    blocks += ceil_div(ps[i].M, rows_per_block);
  }
  bt->first[n] = blocks;
  return blocks <= 0x7fffffff;
}

__device__ inline int batch_weight(const MvBatch& bt) {
  int wi = 0;
  while (wi + 1 < bt.n && static_cast<int64_t>(blockIdx.x) >= bt.first[wi + 1]) wi++;
  return wi;
}

// ---- the q/k/v product's epilogue (ops/qkv_rope.cu) --------------------------------------------
// The mat-vec of MUL_MAT_MULTI(q, k, v) may also do what the four nodes after it do (ROPE q, ROPE k,
// SET_ROWS of k's rows and of v into the caches; rope_store.cu runs them as one launch otherwise):
// a row group of the rotated weights is one RoPE pair (rows j and j + nDims/2 of a head for NeoX,
// j and j + 1 for the normal mode), so the lane that stores the two products rotates them as the
// ROPE kernel does (rope_cos_sin, rope_rotate: the same bits) and stores the rotated pair, and k's
// pair and v's rows go into their cache rows at the token's cell too. NoEpi: a plain product.
struct NoEpi {};

enum class MvRole : int8_t { Plain = 0, RotQ = 1, RotK = 2, StoreV = 3 };

struct MvRope {
  MvRole role[kMaxMvBatch];  // by weight of the launch's batch
  // The bytes [skip_lo, skip_hi) of a weight's product are not stored (a RoPE's output, written
  // after it apart, reuses them); the rest is, as the plain product stores it.
  uintptr_t skip_lo[kMaxMvBatch], skip_hi[kMaxMvBatch];
  Tensor rot_q, rot_k;       // the RoPEs' outputs [hd, heads, tokens]
  Tensor cache_k, cache_v;   // the caches: a row of hd · heads elements per cell
  Tensor pos, ff, idx;       // positions and frequency factors of the RoPEs, the stores' cells
  int64_t hd;                // head size (= nDims: heads rotate whole)
  int k_node, v_node;        // the stores' node indices, for reports
  DeviceError* err;
  RopeParams p;
};

// Row r (0 or 1) of row group `grp` of weight wi: a RoPE pair of a rotated weight, else grp·2 + r.
__device__ inline int64_t rope_pair_row(const MvRope& e, int wi, int64_t grp) {
  const bool rot = e.role[wi] == MvRole::RotQ || e.role[wi] == MvRole::RotK;
  if (!rot || e.p.mode != 2) return grp * 2;
  const int64_t half = e.hd / 2;
  return (grp / half) * e.hd + grp % half;
}
__device__ inline int64_t rope_pair_step(const MvRope& e, int wi) {
  const bool rot = e.role[wi] == MvRole::RotQ || e.role[wi] == MvRole::RotK;
  return rot && e.p.mode == 2 ? e.hd / 2 : 1;
}

// Stores column c's two products s0, s1 of rows ra, rb = ra + step (after the addend, as plus_c).
__device__ inline void rope_epilogue(const MvRope& e, int wi, const Planes& p, int64_t z, const Plane& pl, int c, int64_t ra,
                                     int64_t rb, float s0, float s1) {
  const float v0 = plus_c(p, z, c, ra, s0), v1 = plus_c(p, z, c, rb, s1);
  float* out = reinterpret_cast<float*>(pl.out + c * p.o_nb1);
  const auto put = [&](float* a, float v) {
    const uintptr_t u = reinterpret_cast<uintptr_t>(a);
    if (u < e.skip_lo[wi] || u >= e.skip_hi[wi]) *a = v;
  };
  put(out + ra, v0);
  put(out + rb, v1);
  const MvRole role = e.role[wi];
  if (role == MvRole::Plain) return;
  const int64_t t = pl.col0 + c;  // the token (one activation column each)
  float y0 = v0, y1 = v1;
  const int64_t h = ra / e.hd, j0 = ra % e.hd, j1 = rb % e.hd;
  if (role != MvRole::StoreV) {
    const int i = static_cast<int>(e.p.mode == 2 ? j0 : j0 / 2);
    const double pos = *reinterpret_cast<const int32_t*>(e.pos.data + t * e.pos.nb[0]);
    const float2 y = rope_rotate(v0, v1, rope_cos_sin(e.p, e.ff, pos, i));
    y0 = y.x;
    y1 = y.y;
    const Tensor& ro = role == MvRole::RotQ ? e.rot_q : e.rot_k;
    uint8_t* base = ro.data + h * ro.nb[1] + t * ro.nb[2];
    *reinterpret_cast<float*>(base + j0 * ro.nb[0]) = y0;
    *reinterpret_cast<float*>(base + j1 * ro.nb[0]) = y1;
    if (role == MvRole::RotQ) return;
  }
  const Tensor& cd = role == MvRole::RotK ? e.cache_k : e.cache_v;
  const int64_t cell = *reinterpret_cast<const int32_t*>(e.idx.data + t * e.idx.nb[0]);
  if (cell < 0 || cell >= cd.ne[1]) {
    // (a cell out of both caches is reported for the k store, the earlier node, as apart)
    const bool k_bad = cell < 0 || cell >= e.cache_k.ne[1];
    if (role == MvRole::RotK || !k_bad) report_error(e.err, role == MvRole::RotK ? e.k_node : e.v_node, cell);
    return;
  }
  for (int64_t u = t + 1; u < pl.col0 + p.ncols; u++)  // a later token at the same cell is the one stored
    if (*reinterpret_cast<const int32_t*>(e.idx.data + u * e.idx.nb[0]) == cell) return;
  uint8_t* row = cd.data + cell * cd.nb[1];
  store_elem(row + ra * cd.nb[0], cd.dtype, y0);
  store_elem(row + rb * cd.nb[0], cd.dtype, y1);
}

// Slice 0 of a group of W warps (warp `warp`, red[warp..warp + W) its warps' sums by row and
// column) adds the W sums of each of its nr rows and nc columns in slice order and stores them
// (after the addend, plus_c). Shared by mv_q_body and mv_q_body_split (ops/matvec_q_split.cuh).
template <int W, int NW, int R, int NC>
__device__ __forceinline__ void store_group_sums(const float (&red)[NW][R][NC], int warp, int lane, int nr, int nc,
                                                 const Planes& p, int64_t z, const Plane& pl, int64_t row0) {
  if (lane >= R * NC) return;
  const int r = lane / NC, c = lane % NC;
  if (r >= nr || c >= nc) return;
  float s = red[warp][r][c];
#pragma unroll
  for (int k = 1; k < W; k++) s += red[warp + k][r][c];
  reinterpret_cast<float*>(pl.out + c * p.o_nb1)[row0 + r] = plus_c(p, z, c, row0 + r, s);
}

// As store_group_sums for a group whose 2 rows are a RoPE pair (rows row0 and row0 + rstep): the
// pair's sums of each column go through rope_epilogue.
template <int W, int NW, int NC>
__device__ __forceinline__ void rope_group_sums(const float (&red)[NW][2][NC], int warp, int lane, int nr, int nc,
                                                const MvRope& epi, int wi, const Planes& p, int64_t z, const Plane& pl,
                                                int64_t row0, int64_t rstep) {
  if (lane >= nc || nr <= 0) return;
  float s0 = red[warp][0][lane], s1 = red[warp][1][lane];
#pragma unroll
  for (int k = 1; k < W; k++) s0 += red[warp + k][0][lane], s1 += red[warp + k][1][lane];
  rope_epilogue(epi, wi, p, z, pl, lane, row0, row0 + rstep, s0, s1);
}

// ---- the quantized mat-vec: grid (Σ ceil(M / (G·R)), min(planes, 65535)), G = kMvWarps / W -----
// A block's kMvWarps warps form G groups of W warps; each group runs R consecutive rows, so that
// one load of the activation codes serves R rows, its W·32 lanes taking the parts of K in turn
// (part pi goes to lane pi mod W·32 of the group). W = 1: a warp a row group, the sum a warp
// reduction; W > 1: the W warps' sums added in shared memory (llama.cpp's mat-vec of 2-8 columns
// spreads K over a block of 4 warps this way). (Issuing the loads of two or four of a lane's parts
// before their arithmetic measured slower on the H200: Q4_0 3584 x 18944 at one column 29.3 and
// 39.2 against 21.0 us, docs/PERFORMANCE.md.) kColsLast: each row's part first, then one column's
// codes at a time (see the loop).
// Epi: NoEpi, or MvRope (R = 2: a group's rows are a RoPE pair, rows row0 and row0 + rstep).
// (The body of the kernels below, which differ only in their launch bounds.)
template <class Q, int NC, int R, int W, bool kColsLast, class Epi>
__device__ __forceinline__ void mv_q_body(const MvBatch& bt, const int8_t* __restrict__ aq, const void* __restrict__ asc,
                                          const Epi& epi) {
  static_assert(W == 1 || W == 2 || W == 4, "a row group is 1, 2 or 4 warps");
  constexpr bool kEpi = !std::is_same_v<Epi, NoEpi>;
  static_assert(!kEpi || R == 2, "the epilogue's groups are row pairs");
  constexpr int G = kMvWarps / W;
  pdl_begin();
  const int wi = batch_weight(bt);
  const Planes& p = bt.p[wi];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int g = warp / W, slice = warp % W;
  const int64_t grp = (static_cast<int64_t>(blockIdx.x) - bt.first[wi]) * G + g;
  int64_t row0 = grp * R, rstep = 1;
  if constexpr (kEpi) {
    row0 = rope_pair_row(epi, wi, grp);
    rstep = rope_pair_step(epi, wi);
  }
  // (W > 1: a group past the last row still reaches the block's barriers)
  if (W == 1 && row0 >= p.M) return;
  const int nr = row0 >= p.M ? 0 : kEpi ? R : p.M - row0 < R ? static_cast<int>(p.M - row0) : R;
  const int64_t K = p.K, nparts = K / 32;
  __shared__ float red[W > 1 ? kMvWarps : 1][R][NC];
  for (int64_t z = blockIdx.y; z < p.n_planes; z += gridDim.y) {
    const Plane pl = plane_of(p, z);
    if (!pl.ok) {
      if (slice == 0)
        for (int r = 0; r < nr; r++) bad_plane(p, z, pl, row0 + r, lane);
      continue;
    }
    const int nc = plane_cols(p, pl);
    const uint8_t* wrow = pl.w + (nr > 0 ? row0 : 0) * p.w_nb1;
    float acc[R][NC];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int c = 0; c < NC; c++) acc[r][c] = 0.0f;
    // Column c's activation codes and scale(s) of part pi.
    auto act = [&](int c, int64_t pi, int (&a)[8], float& ad, float& as) {
      const int64_t col = pl.col0 + (c < nc ? c : 0);
      if constexpr (spread_parts<Q>::value) {
        Q::load_act(aq + col * K, pi, a);
      } else {
        const int4* ap = reinterpret_cast<const int4*>(aq + col * K + pi * 32);
        const int4 a0 = ap[0], a1 = ap[1];
        a[0] = a0.x, a[1] = a0.y, a[2] = a0.z, a[3] = a0.w;
        a[4] = a1.x, a[5] = a1.y, a[6] = a1.z, a[7] = a1.w;
      }
      if (Q::kQ8K) {
        ad = static_cast<const float*>(asc)[col * (K / 256) + pi / 8];
        as = 0.0f;
      } else {
        const float2 ds = static_cast<const float2*>(asc)[col * nparts + pi];
        ad = ds.x;
        as = ds.y;
      }
    };
    for (int64_t pi = slice * kWarp + lane; nr > 0 && pi < nparts; pi += W * kWarp) {
      if constexpr (kColsLast) {
        // The part of each row first, then one column's codes at a time: one column's codes live
        // instead of NC's, fewer registers (Q4_0 at 4 columns, 2 rows: 80 against 96) and more
        // warps resident, but each column's loads wait in turn (see launch_mv_q_warp).
        Q q[R];
#pragma unroll
        for (int r = 0; r < R; r++)
          if (r < nr) q[r].load(wrow + r * rstep * p.w_nb1, pi);
#pragma unroll
        for (int c = 0; c < NC; c++) {
          int a[8];
          float ad, as;
          act(c, pi, a, ad, as);
#pragma unroll
          for (int r = 0; r < R; r++)
            if (r < nr) acc[r][c] += q[r].dot(a, ad, as);
        }
      } else {
        int a[NC][8];
        float ad[NC], as[NC];
#pragma unroll
        for (int c = 0; c < NC; c++) act(c, pi, a[c], ad[c], as[c]);
#pragma unroll
        for (int r = 0; r < R; r++) {
          if (r < nr) {
            Q q;
            q.load(wrow + r * rstep * p.w_nb1, pi);
#pragma unroll
            for (int c = 0; c < NC; c++) acc[r][c] += q.dot(a[c], ad[c], as[c]);
          }
        }
      }
    }
    if constexpr (W == 1 && kEpi) {
#pragma unroll
      for (int c = 0; c < NC; c++) {
        const float s0 = warp_sum(acc[0][c]), s1 = warp_sum(acc[1][c]);
        if (lane == 0 && c < nc) rope_epilogue(epi, wi, p, z, pl, c, row0, row0 + rstep, s0, s1);
      }
    } else if constexpr (W == 1) {
#pragma unroll
      for (int r = 0; r < R; r++)
#pragma unroll
        for (int c = 0; c < NC; c++) {
          const float s = warp_sum(acc[r][c]);
          if (lane == 0 && c < nc && r < nr)
            reinterpret_cast<float*>(pl.out + c * p.o_nb1)[row0 + r] = plus_c(p, z, c, row0 + r, s);
        }
    } else {
      // each warp's sums into shared memory, then slice 0 adds the group's W in slice order
#pragma unroll
      for (int r = 0; r < R; r++)
#pragma unroll
        for (int c = 0; c < NC; c++) {
          const float s = warp_sum(acc[r][c]);
          if (lane == 0) red[warp][r][c] = s;
        }
      __syncthreads();
      if constexpr (kEpi) {
        if (slice == 0) rope_group_sums<W>(red, warp, lane, nr, nc, epi, wi, p, z, pl, row0, rstep);
      } else if (slice == 0) {
        store_group_sums<W>(red, warp, lane, nr, nc, p, z, pl, row0);
      }
      __syncthreads();  // (red is written again by the next plane)
    }
  }
}

// Two or more columns: the launch bounds give only the block size, and ptxas keeps the registers
// low (Q4_0 at 4 columns, 2 rows, 2 warps: 80; 113 with the bounds of the one-column kernel, and
// `bench -npl 4` of qwen2-7b Q4_0 772 against 887-904 tok/s on the H200, docs/PERFORMANCE.md session 34).
template <class Q, int NC, int R, int W, bool kColsLast = false, class Epi = NoEpi>
__global__ void __launch_bounds__(kMvWarps * 32) mv_q_kernel(const __grid_constant__ MvBatch bt,
                                                             const int8_t* __restrict__ aq,
                                                             const void* __restrict__ asc,
                                                             const __grid_constant__ Epi epi) {
  mv_q_body<Q, NC, R, W, kColsLast, Epi>(bt, aq, asc, epi);
}

// One column: at least one block an SM asked for, so ptxas may take more registers (Q6_K 64 -> 85,
// the q/k/v product with its RoPE epilogue 56 -> 64): on one H100, tg128 of qwen2-7b Q4_0 359-362
// against 346-349 tok/s and Q6_K products 12-15% faster (docs/PERFORMANCE.md session 34).
template <class Q, int NC, int R, int W, bool kColsLast = false, class Epi = NoEpi>
__global__ void __launch_bounds__(kMvWarps * 32, 1) mv_q_kernel1(const __grid_constant__ MvBatch bt,
                                                                 const int8_t* __restrict__ aq,
                                                                 const void* __restrict__ asc,
                                                                 const __grid_constant__ Epi epi) {
  mv_q_body<Q, NC, R, W, kColsLast, Epi>(bt, aq, asc, epi);
}

// 3-4 columns with MvShape::tight_warps: at least 7 blocks an SM asked for, so at most 72 registers.
template <class Q, int NC, int R, int W, bool kColsLast>
__global__ void __launch_bounds__(kMvWarps * 32, 7) mv_q_kernel7(const __grid_constant__ MvBatch bt,
                                                                 const int8_t* __restrict__ aq,
                                                                 const void* __restrict__ asc,
                                                                 const __grid_constant__ NoEpi epi) {
  mv_q_body<Q, NC, R, W, kColsLast, NoEpi>(bt, aq, asc, epi);
}

}  // namespace minfer::cuda::mm

#include "matvec_q_split.cuh"

namespace minfer::cuda::mm {

inline int weight_align(DType t) {
  switch (t) {
    case DType::Q4_1:
    case DType::Q5_1:
    case DType::Q2_K:
    case DType::Q4_K:
    case DType::Q5_K: return 4;
    case DType::IQ4_XS: return 8;
    case DType::MXFP4: return 1;
    case DType::F32:
    case DType::F16:
    case DType::BF16: return 16;
    default: return 2;
  }
}

inline bool planes_aligned(const Planes& p, int a) {
  return reinterpret_cast<uintptr_t>(p.w) % a == 0 && p.w_nb1 % a == 0 && p.w_nb2 % a == 0 && p.w_nb3 % a == 0;
}
inline bool mv_q_aligned(const Planes& p) { return planes_aligned(p, weight_align(p.wtype)) && p.ncols <= kMaxMvCols; }

}  // namespace minfer::cuda::mm

namespace minfer::cuda::mm {

template <class Q, int NC, int R, int W, bool kColsLast, class Epi = NoEpi>
cudaError_t launch_mv_q_nc(const Planes* ps, int n, const int8_t* aq, const void* asc, cudaStream_t s,
                           const Epi& epi = Epi{}) {
  MvBatch bt;
  if (!make_batch(ps, n, kMvWarps / W * R, &bt)) return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned>(bt.first[n]), static_cast<unsigned>(std::min<int64_t>(ps[0].n_planes, 65535)));
  if constexpr (NC == 1)
    return launch_k(mv_q_kernel1<Q, NC, R, W, kColsLast, Epi>, grid, dim3(kMvWarps * kWarp), 0, s, bt, aq, asc, epi);
  else
    return launch_k(mv_q_kernel<Q, NC, R, W, kColsLast, Epi>, grid, dim3(kMvWarps * kWarp), 0, s, bt, aq, asc, epi);
}

// (its launch shape, MvShape, is in tuning.h. 4 warps a group, llama.cpp's shape for 2-8 columns,
// only for 3-4 columns over a K above 4096 (MvShape::warps_long): on the H200 slower on the other
// shapes (Q4_0 3584 x 18944 at 4 columns 47.4 against 38.0 us for 2 warps, docs/PERFORMANCE.md
// session 20), and for one column (tg128 of qwen2-7b Q4_0 251 against 378 tok/s, session 26).)
// rows: a group's rows, 1 or 2.
template <class Q, int NC, int W, bool kColsLast>
cudaError_t launch_mv_q_r(int rows, const Planes* ps, int n, const int8_t* aq, const void* asc, cudaStream_t s) {
  return rows == 2 ? launch_mv_q_nc<Q, NC, 2, W, kColsLast>(ps, n, aq, asc, s)
                   : launch_mv_q_nc<Q, NC, 1, W, kColsLast>(ps, n, aq, asc, s);
}

template <class Q, int NC, bool kColsLast = false>
cudaError_t launch_mv_q_w(int w, int rows, const Planes* ps, int n, const int8_t* aq, const void* asc, cudaStream_t s) {
  switch (w) {
    case 1: return launch_mv_q_r<Q, NC, 1, kColsLast>(rows, ps, n, aq, asc, s);
    case 2: return launch_mv_q_r<Q, NC, 2, kColsLast>(rows, ps, n, aq, asc, s);
    case 4:  // (built for 3-4 columns, MvShape::warps_long, and one, MvShape::warps1_few)
      if constexpr ((NC == 4 || NC == 1) && !kColsLast) return launch_mv_q_r<Q, NC, 4, false>(rows, ps, n, aq, asc, s);
      return cudaErrorInvalidValue;
    default: return cudaErrorInvalidValue;
  }
}

template <class Q>
struct is_q4_0 : std::false_type {};
template <bool kWide>
struct is_q4_0<PQ4_0<kWide>> : std::true_type {};

template <class Q, int R, int W, bool kColsLast>
cudaError_t launch_mv_q_nc7(const Planes* ps, int n, const int8_t* aq, const void* asc, cudaStream_t s) {
  MvBatch bt;
  if (!make_batch(ps, n, kMvWarps / W * R, &bt)) return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned>(bt.first[n]), static_cast<unsigned>(std::min<int64_t>(ps[0].n_planes, 65535)));
  return launch_k(mv_q_kernel7<Q, 4, R, W, kColsLast>, grid, dim3(kMvWarps * kWarp), 0, s, bt, aq, asc, NoEpi{});
}

template <class Q, int R, int W, class Epi = NoEpi>
cudaError_t launch_mv_q_split(const Planes* ps, int n, const int8_t* aq, const void* asc, cudaStream_t s,
                              const Epi& epi = Epi{}) {
  MvBatch bt;
  if (!make_batch(ps, n, kMvWarps / W * R, &bt)) return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned>(bt.first[n]), static_cast<unsigned>(std::min<int64_t>(ps[0].n_planes, 65535)));
  return launch_k(mv_q_kernel_split<Q, R, W, Epi>, grid, dim3(kMvWarps * kWarp), 0, s, bt, aq, asc, epi);
}

// MvShape::tight_warps x tight_rows (tight_rows_first: 0 columns first, 1 rows first, on
// mv_q_kernel7; 2 the columns split between lane pairs, mv_q_kernel_split) for 3-4 columns.
template <class Q>
cudaError_t launch_mv_q_tight(const MvShape& sh, const Planes* ps, int n, const int8_t* aq, const void* asc,
                              cudaStream_t s) {
  const int key = sh.tight_warps * 100 + sh.tight_rows * 10 + sh.tight_rows_first;
  switch (key) {
    case 222: return launch_mv_q_split<Q, 2, 2>(ps, n, aq, asc, s);
    case 232: return launch_mv_q_split<Q, 3, 2>(ps, n, aq, asc, s);
    case 412: return launch_mv_q_split<Q, 1, 4>(ps, n, aq, asc, s);
    case 422: return launch_mv_q_split<Q, 2, 4>(ps, n, aq, asc, s);
    case 432: return launch_mv_q_split<Q, 3, 4>(ps, n, aq, asc, s);
    case 211: return launch_mv_q_nc7<Q, 1, 2, true>(ps, n, aq, asc, s);
    case 221: return launch_mv_q_nc7<Q, 2, 2, true>(ps, n, aq, asc, s);
    case 410: return launch_mv_q_nc7<Q, 1, 4, false>(ps, n, aq, asc, s);
    case 411: return launch_mv_q_nc7<Q, 1, 4, true>(ps, n, aq, asc, s);
    case 420: return launch_mv_q_nc7<Q, 2, 4, false>(ps, n, aq, asc, s);
    case 421: return launch_mv_q_nc7<Q, 2, 4, true>(ps, n, aq, asc, s);
    default: return cudaErrorInvalidValue;
  }
}

// MvShape::warps_few x rows_few for 3-4 columns, rows first (the Q4_0 short-K default's order).
template <class Q>
cudaError_t launch_mv_q_few(int w, int rows, const Planes* ps, int n, const int8_t* aq, const void* asc, cudaStream_t s) {
  if (w == 1) {
    if (rows == 1) return launch_mv_q_nc<Q, 4, 1, 1, true>(ps, n, aq, asc, s);
    if (rows == 2) return launch_mv_q_nc<Q, 4, 2, 1, true>(ps, n, aq, asc, s);
    if (rows == 3) return launch_mv_q_nc<Q, 4, 3, 1, true>(ps, n, aq, asc, s);
  } else if (w == 2) {
    if (rows == 1) return launch_mv_q_nc<Q, 4, 1, 2, true>(ps, n, aq, asc, s);
    if (rows == 2) return launch_mv_q_nc<Q, 4, 2, 2, true>(ps, n, aq, asc, s);
    if (rows == 3) return launch_mv_q_nc<Q, 4, 3, 2, true>(ps, n, aq, asc, s);
  }
  return cudaErrorInvalidValue;
}

// Rows of a launch in all (the weights' rows times their planes; column chunks as planes,
// Planes::cols_total, count once: the launch's shape is the one-column launch's).
inline int64_t mv_rows(const Planes* ps, int n) {
  int64_t rows = 0;
  for (int i = 0; i < n; i++) rows += ps[i].M * (ps[i].cols_total > 0 ? 1 : ps[i].n_planes);
  return rows;
}

// Warps a group of the one-column launch of `rows` rows in all (launch_mv_q_warp): what a
// batch-invariant launch of any column count takes.
inline int mv_q_invariant_warps(const MvShape& sh, int64_t rows) {
  return sh.warps1_few != 0 && rows < sh.few_rows ? sh.warps1_few : sh.warps1;
}

// One row group per R rows: by default R = 2 for one column when there are rows enough to fill the
// device, a warp a group. (Two rows for 3-4 columns too measured no faster on the H200 with a warp a
// group: Q4_0 3584 x 18944 at 4 columns 42.3 against 41.2 us, Q4_K 46.2 against 42.8.)
template <class Q>
cudaError_t launch_mv_q_warp(const Planes* ps, int n, const int8_t* aq, const void* asc, const MvShape& sh,
                             cudaStream_t s) {
  const int64_t rows = mv_rows(ps, n);
  const bool fill = rows >= 4096;
  const int64_t nc = ps[0].ncols;
  // Q4_0 at 3-4 columns, at most 4096 rows over a K of at most 4096 (the o product): MvShape's
  // warps_few x rows_few, else 2 warps a group of 3 rows above 3072 rows — at 2 x 2 the o product
  // (3584 rows) is 896 blocks, one wave of 6 an SM and a tail of 104 on 132 SMs; 2 x 3 is 598. On
  // the H100, mmq-bench 12.35 against 14.88 us, bench -npl 4 of qwen2-7b Q4_0 910.3 against 894.5
  // tok/s (docs/PERFORMANCE.md session 38). Each row's sums are those of 2 x 2 (2 warps either way).
  // Batch-invariant (MvShape::invariant): the one-column launch's warps a group for any column
  // count (see mv_q_invariant_warps); the rows a group do not change a row's sum.
  if (sh.invariant && nc > 1) {
    const int w = mv_q_invariant_warps(sh, rows);
    if (w == 4) return nc <= 4 ? launch_mv_q_w<Q, 4>(4, 1, ps, n, aq, asc, s) : cudaErrorInvalidValue;
    if (nc <= 2) return launch_mv_q_w<Q, 2>(w, fill ? 2 : 1, ps, n, aq, asc, s);
    if (nc <= 4) return launch_mv_q_w<Q, 4>(w, fill ? 2 : 1, ps, n, aq, asc, s);
    return launch_mv_q_w<Q, 8>(w, fill ? 2 : 1, ps, n, aq, asc, s);
  }
  if constexpr (is_q4_0<Q>::value)
    if (nc > 2 && nc <= 4) {
      if (sh.tight_warps != 0) return launch_mv_q_tight<Q>(sh, ps, n, aq, asc, s);
      // (MvShape::split: the default unless another shape is asked for)
      if (sh.split != 0 && sh.warps == 0 && sh.warps_few == 0 && sh.warps_long == 0)
        return launch_mv_q_split<Q, 2, 2>(ps, n, aq, asc, s);
    }
  if constexpr (is_q4_0<Q>::value)
    if (nc > 2 && nc <= 4 && rows <= 4096 && ps[0].K <= 4096) {
      if (sh.warps_few != 0) return launch_mv_q_few<Q>(sh.warps_few, sh.rows_few, ps, n, aq, asc, s);
      if (sh.warps == 0 && rows > 3072) return launch_mv_q_few<Q>(2, 3, ps, n, aq, asc, s);
    }
  if (nc <= 1 && sh.warps1_few != 0 && rows < sh.few_rows)
    return launch_mv_q_w<Q, 1>(sh.warps1_few, sh.rows1_few == 0 ? 1 : sh.rows1_few, ps, n, aq, asc, s);
  if (nc <= 1) return launch_mv_q_w<Q, 1>(sh.warps1, sh.rows1 == 0 ? (fill ? 2 : 1) : sh.rows1, ps, n, aq, asc, s);
  // Q4_0 at 3-4 columns over a K above 4096 (the down product), unset: 4 warps a row pair as below
  // (the same sums), each row's part first, on the kernel held to 72 registers: 7 blocks an SM
  // instead of 5, the down product's 1792 blocks 1.94 waves instead of 2.72; on the H100 mmq-bench
  // 31.14 against 33.09 us (docs/PERFORMANCE.md session 39). (Columns first at 72 registers
  // 33.28; every Q4_0 shape on it, the gate/up product 40.0 against 34.3.)
  if constexpr (is_q4_0<Q>::value)
    if (nc > 2 && nc <= 4 && ps[0].K > 4096 && sh.warps_long == 0 && sh.warps == 0)
      return launch_mv_q_nc7<Q, 2, 4, true>(ps, n, aq, asc, s);
  if (nc > 2 && nc <= 4 && ps[0].K > 4096 && (sh.warps_long != 0 || (sh.warps == 0 && !Q::kQ8K))) {
    const int w = sh.warps_long != 0 ? sh.warps_long : 4;
    return launch_mv_q_w<Q, 4>(w, w == 1 ? 1 : 2, ps, n, aq, asc, s);
  }
  if (sh.warps == 0) {
    const bool split = nc <= 2 || (nc <= 4 && !Q::kQ8K);
    if (nc <= 2) return launch_mv_q_w<Q, 2>(2, 2, ps, n, aq, asc, s);
    // Q4_0 over a K of up to 4096 (q/k/v/o, gate/up) takes its rows' parts before the columns'
    // codes: on the H200 at 4 columns, 3584 x 18944 33.6 against 38.1 us, but 18944 x 3584 42.3
    // against 38.2 (and Q8_0 slower on every shape: 18944 x 3584 61.0 against 39.6), so only there
    // (docs/PERFORMANCE.md session 21).
    if constexpr (is_q4_0<Q>::value)
      if (nc <= 4 && ps[0].K <= 4096) return launch_mv_q_w<Q, 4, true>(2, 2, ps, n, aq, asc, s);
    if (nc <= 4) return launch_mv_q_w<Q, 4>(split ? 2 : 1, split ? 2 : 1, ps, n, aq, asc, s);
    return launch_mv_q_w<Q, 8>(1, 1, ps, n, aq, asc, s);
  }
  const int rows_g = sh.rows == 0 ? (fill ? 2 : 1) : sh.rows;
  if (nc <= 2) return launch_mv_q_w<Q, 2>(sh.warps, rows_g, ps, n, aq, asc, s);
  if (nc <= 4) return launch_mv_q_w<Q, 4>(sh.warps, rows_g, ps, n, aq, asc, s);
  return launch_mv_q_w<Q, 8>(sh.warps, rows_g, ps, n, aq, asc, s);
}

// Bytes of one activation column's scales in the region quant_q8a / quant_q8k fill (after the
// codes, qs_bytes): Q8K a float a 256-block, Q8A a {d, d·Σq} pair a 32-block.
inline int64_t act_scale_bytes(DType w, int64_t K) { return mv_act_format(w) == ActFmt::Q8K ? K / 256 * 4 : K / 32 * 8; }

// Planes p (one plane) restricted to its activation columns [c0, c0 + nc): the output and the
// addend's columns moved on (an addend of one column is broadcast); a launch a chunk.
inline Planes mv_col_chunk(Planes p, int64_t c0, int64_t nc) {
  p.out += c0 * p.o_nb1;
  if (p.c && p.c_ne[1] > 1) p.c += c0 * p.c_nb[1];
  p.ncols = nc;
  return p;
}

// Planes p (one plane) as planes of `chunk` of its activation columns each, the last holding the rest
// (Planes::cols_total): every plane the one weight matrix, plane z's columns from z·chunk, its
// output and addend columns moved on as far (an addend of one column is broadcast). The mat-vec
// runs every chunk in one launch, each column's sums as a launch of that chunk alone gives them.
inline Planes mv_col_planes(Planes p, int64_t chunk) {
  const int64_t n = (p.ncols + chunk - 1) / chunk;
  p.cols_total = p.ncols;
  p.ncols = chunk;
  p.n_planes = n;
  p.ne2 = n;
  p.r2 = n;  // (plane z's weights: z / r2 = 0)
  p.r3 = 1;
  p.o_nb2 = chunk * p.o_nb1;
  p.o_nb3 = 0;
  if (p.c && p.c_ne[1] > 1) {
    p.c_ne[1] = chunk;
    p.c_ne[2] = n;
    p.c_nb[2] = chunk * p.c_nb[1];
  }
  return p;
}

// Whether p's columns can run as column chunks (mv_col_chunk, mv_col_planes): one plane, no expert ids, an
// addend of one column (broadcast) or of all.
inline bool mv_col_chunkable(const Planes& p) {
  return p.n_planes == 1 && !p.ids && (!p.c || p.c_ne[1] == 1 || p.c_ne[1] == p.ncols);
}

// Whether the mat-vec takes p: aligned, at most kMaxMvCols columns, or (batch-invariant
// launches) any number of columns a chunk at a time.
inline bool mv_q_takes(const Planes& p, bool invariant) {
  if (mv_q_aligned(p)) return true;
  return invariant && planes_aligned(p, weight_align(p.wtype)) && mv_col_chunkable(p);
}

template <class Q>
cudaError_t launch_mv_q_cols(const Planes* ps, int n, const uint8_t* act, int64_t cols, const MvShape& sh,
                             cudaStream_t s) {
  const int64_t K = ps[0].K, nc = ps[0].ncols;
  const auto* aq = reinterpret_cast<const int8_t*>(act);
  const uint8_t* asc = act + qs_bytes(K, cols);
  // (4 warps a group: built for up to 4 columns)
  const int64_t chunk = sh.invariant && mv_q_invariant_warps(sh, mv_rows(ps, n)) == 4 ? 4 : kMaxMvCols;
  if (nc <= chunk) return launch_mv_q_warp<Q>(ps, n, aq, asc, sh, s);
  if (!sh.invariant || ps[0].n_planes != 1) return cudaErrorInvalidValue;
  Planes part[kMaxMvBatch];
  if (sh.invariant_planes) {
    for (int i = 0; i < n; i++) part[i] = mv_col_planes(ps[i], chunk);
    return launch_mv_q_warp<Q>(part, n, aq, asc, sh, s);
  }
  const int64_t sb = act_scale_bytes(ps[0].wtype, K);
  for (int64_t c0 = 0; c0 < nc; c0 += chunk) {
    const int64_t m = nc - c0 < chunk ? nc - c0 : chunk;
    for (int i = 0; i < n; i++) part[i] = mv_col_chunk(ps[i], c0, m);
    if (cudaError_t e = launch_mv_q_warp<Q>(part, n, aq + c0 * K, asc + c0 * sb, sh, s); e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

// Weights ps[0..n) (1 <= n <= kMaxMvBatch; one dtype, K, column count and plane count, each
// mv_q_takes) against the region quant_q8a/q8k filled for `cols` activation columns, in one
// launch (batch-invariant: one a chunk of columns).
inline cudaError_t launch_mv_q(const Planes* in, int n, const uint8_t* act, int64_t cols, bool wide, const MvShape& sh,
                               cudaStream_t s) {
  if (n < 1 || n > kMaxMvBatch) return cudaErrorInvalidValue;
  Planes ps[kMaxMvBatch];
  int live = 0;
  for (int i = 0; i < n; i++) {
    if (in[i].wtype != in[0].wtype || in[i].K != in[0].K || in[i].ncols != in[0].ncols ||
        in[i].n_planes != in[0].n_planes)
      return cudaErrorInvalidValue;
    if (in[i].M > 0) ps[live++] = in[i];
  }
  n = live;
  if (n == 0 || ps[0].n_planes <= 0 || ps[0].ncols <= 0) return cudaSuccess;
  switch (ps[0].wtype) {
    case DType::Q4_0:
      return wide ? launch_mv_q_cols<PQ4_0<true>>(ps, n, act, cols, sh, s) : launch_mv_q_cols<PQ4_0<false>>(ps, n, act, cols, sh, s);
    case DType::Q4_1: return launch_mv_q_cols<PQ4_1>(ps, n, act, cols, sh, s);
    case DType::Q5_0: return launch_mv_q_cols<PQ5_0>(ps, n, act, cols, sh, s);
    case DType::Q5_1: return launch_mv_q_cols<PQ5_1>(ps, n, act, cols, sh, s);
    case DType::Q8_0:
      return wide ? launch_mv_q_cols<PQ8_0<true>>(ps, n, act, cols, sh, s) : launch_mv_q_cols<PQ8_0<false>>(ps, n, act, cols, sh, s);
    case DType::Q2_K: return launch_mv_q_cols<PQ2_K>(ps, n, act, cols, sh, s);
    case DType::Q3_K: return launch_mv_q_cols<PQ3_K>(ps, n, act, cols, sh, s);
    case DType::Q4_K: return launch_mv_q_cols<PQ45_K<false>>(ps, n, act, cols, sh, s);
    case DType::Q5_K: return launch_mv_q_cols<PQ45_K<true>>(ps, n, act, cols, sh, s);
    case DType::Q6_K:
      return wide ? launch_mv_q_cols<PQ6_Ks>(ps, n, act, cols, sh, s) : launch_mv_q_cols<PQ6_K>(ps, n, act, cols, sh, s);
    case DType::IQ4_NL:
      return wide ? launch_mv_q_cols<PIQ4_NL<true>>(ps, n, act, cols, sh, s)
                  : launch_mv_q_cols<PIQ4_NL<false>>(ps, n, act, cols, sh, s);
    case DType::IQ4_XS: return launch_mv_q_cols<PIQ4_XS>(ps, n, act, cols, sh, s);
    case DType::MXFP4: return launch_mv_q_cols<PMXFP4>(ps, n, act, cols, sh, s);
    default: return cudaErrorInvalidValue;
  }
}

// ---- the q/k/v product with its RoPE and cache-store epilogue (MvRope) ---------------------------
// On the launch shapes launch_mv_q_warp takes by default for the column count, each group a RoPE
// pair (R = 2 where the default takes 1 row: the same sums, in pairs). Only the default shape
// (MvShape{}), wide loads and the weight types of q/k/v in the common files; otherwise the caller
// runs the products and the four nodes apart (mv_rope_supported false).
inline bool mv_rope_supported(DType t, bool wide, const MvShape& sh) {
  const bool shape = sh.warps1 == 1 && (sh.rows1 == 0 || sh.rows1 == 2) && sh.warps == 0 && sh.rows == 0 &&
                     sh.warps_long == 0;
  const bool type = t == DType::Q4_0 || t == DType::Q8_0 || t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K ||
                    t == DType::IQ4_NL || t == DType::IQ4_XS;
  return shape && type && wide;
}

template <class Q>
cudaError_t launch_mv_q_rope_t(const Planes* ps, int n, const uint8_t* act, int64_t cols, const MvShape& sh, cudaStream_t s,
                               const MvRope& e) {
  const auto* aq = reinterpret_cast<const int8_t*>(act);
  const void* asc = act + qs_bytes(ps[0].K, cols);
  const int64_t nc = ps[0].ncols;
  const int split = sh.split;
  // (batch-invariant: a warp a RoPE pair for every column count, as for one column; at most
  // kMaxMvCols columns, matmul_qkv_rope_ready)
  if (sh.invariant && nc > 1) {
    if (nc <= 2) return launch_mv_q_nc<Q, 2, 2, 1, false, MvRope>(ps, n, aq, asc, s, e);
    if (nc <= 4) return launch_mv_q_nc<Q, 4, 2, 1, false, MvRope>(ps, n, aq, asc, s, e);
    return launch_mv_q_nc<Q, 8, 2, 1, false, MvRope>(ps, n, aq, asc, s, e);
  }
  // (MvShape::split 2: Q4_0's 3-4 columns over a K of up to 4096 on the column-split mat-vec too)
  if constexpr (is_q4_0<Q>::value)
    if (split == 2 && nc > 2 && nc <= 4 && ps[0].K <= 4096) return launch_mv_q_split<Q, 2, 2, MvRope>(ps, n, aq, asc, s, e);
  if (nc <= 1) return launch_mv_q_nc<Q, 1, 2, 1, false, MvRope>(ps, n, aq, asc, s, e);
  if (nc <= 2) return launch_mv_q_nc<Q, 2, 2, 2, false, MvRope>(ps, n, aq, asc, s, e);
  if (nc <= 4) {
    if constexpr (!Q::kQ8K) {
      if (ps[0].K > 4096) return launch_mv_q_nc<Q, 4, 2, 4, false, MvRope>(ps, n, aq, asc, s, e);
      if constexpr (is_q4_0<Q>::value) return launch_mv_q_nc<Q, 4, 2, 2, true, MvRope>(ps, n, aq, asc, s, e);
      return launch_mv_q_nc<Q, 4, 2, 2, false, MvRope>(ps, n, aq, asc, s, e);
    } else {
      return launch_mv_q_nc<Q, 4, 2, 1, false, MvRope>(ps, n, aq, asc, s, e);
    }
  }
  return launch_mv_q_nc<Q, 8, 2, 1, false, MvRope>(ps, n, aq, asc, s, e);
}

// As launch_mv_q, with the epilogue; cudaErrorNotSupported (nothing launched) unless
// mv_rope_supported.
inline cudaError_t launch_mv_q_rope(const Planes* in, int n, const uint8_t* act, int64_t cols, bool wide, const MvShape& sh,
                                    cudaStream_t s, const MvRope& e) {
  if (n < 1 || n > kMaxMvBatch) return cudaErrorInvalidValue;
  if (!mv_rope_supported(in[0].wtype, wide, sh)) return cudaErrorNotSupported;
  for (int i = 0; i < n; i++)
    if (in[i].wtype != in[0].wtype || in[i].K != in[0].K || in[i].ncols != in[0].ncols || in[i].n_planes != 1 ||
        in[i].M <= 0 || in[i].ncols > kMaxMvCols)
      return cudaErrorInvalidValue;
  switch (in[0].wtype) {
    case DType::Q4_0: return launch_mv_q_rope_t<PQ4_0<true>>(in, n, act, cols, sh, s, e);
    case DType::Q8_0: return launch_mv_q_rope_t<PQ8_0<true>>(in, n, act, cols, sh, s, e);
    case DType::Q4_K: return launch_mv_q_rope_t<PQ45_K<false>>(in, n, act, cols, sh, s, e);
    case DType::Q5_K: return launch_mv_q_rope_t<PQ45_K<true>>(in, n, act, cols, sh, s, e);
    case DType::Q6_K: return launch_mv_q_rope_t<PQ6_Ks>(in, n, act, cols, sh, s, e);
    case DType::IQ4_NL: return launch_mv_q_rope_t<PIQ4_NL<true>>(in, n, act, cols, sh, s, e);
    case DType::IQ4_XS: return launch_mv_q_rope_t<PIQ4_XS>(in, n, act, cols, sh, s, e);
    default: return cudaErrorNotSupported;
  }
}

}  // namespace minfer::cuda::mm
