// Device-side dequantization of every weight dtype the CPU backend dequantizes (F32, F16, BF16,
// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K), bit-exact to
// native/cpu/quants.cpp: the same float operations in the same order, each rounded on its own
// (explicit __fmul_rn / __fadd_rn / __fsub_rn so that nvcc never fuses d*q - m into an FMA).
//
//   dequant32(t, row, i0, out)   elements i0..i0+31 of a row (i0 a multiple of 32) into out[0..31]
//   dequant_elem(t, row, i)      element i of a row
//   has_dequant(t)               whether the two above support t
//
// `row` points at the row's first byte; blocks are read byte by byte (rows of 18/22-byte blocks
// are only 2-byte aligned), so these are for generic paths; the mat-vec fast paths in
// ops/matvec_q.cuh read blocks with wide loads themselves.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "../common/program_format.h"

namespace minfer::cuda {

// ---- block geometry ------------------------------------------------------------------------------

constexpr int kQ4_0Bytes = 18, kQ4_1Bytes = 20, kQ5_0Bytes = 22, kQ5_1Bytes = 24, kQ8_0Bytes = 34;
constexpr int kQ2_KBytes = 84, kQ3_KBytes = 110, kQ4_KBytes = 144, kQ5_KBytes = 176, kQ6_KBytes = 210;

__host__ __device__ inline bool has_dequant(program::DType t) {
  switch (t) {
    case program::DType::F32:
    case program::DType::F16:
    case program::DType::BF16:
    case program::DType::Q4_0:
    case program::DType::Q4_1:
    case program::DType::Q5_0:
    case program::DType::Q5_1:
    case program::DType::Q8_0:
    case program::DType::Q2_K:
    case program::DType::Q3_K:
    case program::DType::Q4_K:
    case program::DType::Q5_K:
    case program::DType::Q6_K:
      return true;
    default:
      return false;
  }
}

// Elements per block (1 for plain types, 0 for unsupported) and bytes per block.
__host__ __device__ inline int qblock_elems(program::DType t) {
  switch (t) {
    case program::DType::F32:
    case program::DType::F16:
    case program::DType::BF16: return 1;
    case program::DType::Q4_0:
    case program::DType::Q4_1:
    case program::DType::Q5_0:
    case program::DType::Q5_1:
    case program::DType::Q8_0: return 32;
    case program::DType::Q2_K:
    case program::DType::Q3_K:
    case program::DType::Q4_K:
    case program::DType::Q5_K:
    case program::DType::Q6_K: return 256;
    default: return 0;
  }
}
__host__ __device__ inline int qblock_bytes(program::DType t) {
  switch (t) {
    case program::DType::F32: return 4;
    case program::DType::F16:
    case program::DType::BF16: return 2;
    case program::DType::Q4_0: return kQ4_0Bytes;
    case program::DType::Q4_1: return kQ4_1Bytes;
    case program::DType::Q5_0: return kQ5_0Bytes;
    case program::DType::Q5_1: return kQ5_1Bytes;
    case program::DType::Q8_0: return kQ8_0Bytes;
    case program::DType::Q2_K: return kQ2_KBytes;
    case program::DType::Q3_K: return kQ3_KBytes;
    case program::DType::Q4_K: return kQ4_KBytes;
    case program::DType::Q5_K: return kQ5_KBytes;
    case program::DType::Q6_K: return kQ6_KBytes;
    default: return 0;
  }
}

// ---- byte readers ----------------------------------------------------------------------------------

__device__ inline uint32_t qrd16(const uint8_t* p) { return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8); }
__device__ inline uint32_t qrd32(const uint8_t* p) { return qrd16(p) | (qrd16(p + 2) << 16); }
__device__ inline float qh2f(const uint8_t* p) { return __half2float(__ushort_as_half(static_cast<unsigned short>(qrd16(p)))); }
__device__ inline float qbf2f(const uint8_t* p) { return __uint_as_float(qrd16(p) << 16); }

// Q4_K/Q5_K packed 6-bit scale and min j (0..7) of the 12 bytes at q.
__device__ inline void q_scale_min_k4(int j, const uint8_t* q, int* sc, int* mn) {
  if (j < 4) {
    *sc = q[j] & 63;
    *mn = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 15) | ((q[j - 4] >> 6) << 4);
    *mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}
// Q3_K's signed scale i (0..15, bias removed) from the 12 bytes at q.
__device__ inline int q_scale_q3k(int i, const uint8_t* q) {
  const int low = i < 8 ? (q[i] & 15) : (q[i - 8] >> 4);
  const int high = (q[8 + (i % 4)] >> (2 * (i / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// ---- one element ------------------------------------------------------------------------------------
// Element j (0..blocksize-1) of the block at s. The K-quants lay a super-block of 256 out as eight
// chunks of 32 (c = j / 32, l = j % 32); the formulas below are quants.cpp's loops unrolled to that.

__device__ inline float deq_block_elem(program::DType t, const uint8_t* s, int j) {
  using program::DType;
  switch (t) {
    case DType::Q4_0: {
      const int b = s[2 + (j & 15)];
      const int q = j < 16 ? (b & 15) : (b >> 4);
      return __fmul_rn(static_cast<float>(q - 8), qh2f(s));
    }
    case DType::Q4_1: {
      const int b = s[4 + (j & 15)];
      const int q = j < 16 ? (b & 15) : (b >> 4);
      return __fadd_rn(__fmul_rn(static_cast<float>(q), qh2f(s)), qh2f(s + 2));
    }
    case DType::Q5_0: {
      const int b = s[6 + (j & 15)];
      const int q = (j < 16 ? (b & 15) : (b >> 4)) | (((qrd32(s + 2) >> j) & 1) << 4);
      return __fmul_rn(static_cast<float>(q - 16), qh2f(s));
    }
    case DType::Q5_1: {
      const int b = s[8 + (j & 15)];
      const int q = (j < 16 ? (b & 15) : (b >> 4)) | (((qrd32(s + 4) >> j) & 1) << 4);
      return __fadd_rn(__fmul_rn(static_cast<float>(q), qh2f(s)), qh2f(s + 2));
    }
    case DType::Q8_0:
      return __fmul_rn(static_cast<float>(static_cast<int8_t>(s[2 + j])), qh2f(s));
    case DType::Q2_K: {
      const int c = j >> 5, l = j & 31;
      const int sc = s[2 * c + (l >> 4)];
      const int q = (s[16 + 32 * (c >> 2) + l] >> (2 * (c & 3))) & 3;
      const float dl = __fmul_rn(qh2f(s + 80), static_cast<float>(sc & 15));
      const float ml = __fmul_rn(qh2f(s + 82), static_cast<float>(sc >> 4));
      return __fsub_rn(__fmul_rn(dl, static_cast<float>(q)), ml);
    }
    case DType::Q3_K: {
      const int c = j >> 5, l = j & 31;
      const float dl = __fmul_rn(qh2f(s + 108), static_cast<float>(q_scale_q3k(2 * c + (l >> 4), s + 96)));
      const int q = (s[32 + 32 * (c >> 2) + l] >> (2 * (c & 3))) & 3;
      const int hi = (s[l] >> c) & 1;
      return __fmul_rn(dl, static_cast<float>(q - (hi ? 0 : 4)));
    }
    case DType::Q4_K: {
      const int c = j >> 5, l = j & 31;
      int sc, mn;
      q_scale_min_k4(c, s + 4, &sc, &mn);
      const int b = s[16 + 32 * (c >> 1) + l];
      const int q = (c & 1) ? (b >> 4) : (b & 15);
      const float dl = __fmul_rn(qh2f(s), static_cast<float>(sc));
      const float ml = __fmul_rn(qh2f(s + 2), static_cast<float>(mn));
      return __fsub_rn(__fmul_rn(dl, static_cast<float>(q)), ml);
    }
    case DType::Q5_K: {
      const int c = j >> 5, l = j & 31;
      int sc, mn;
      q_scale_min_k4(c, s + 4, &sc, &mn);
      const int b = s[48 + 32 * (c >> 1) + l];
      const int q = ((c & 1) ? (b >> 4) : (b & 15)) | (((s[16 + l] >> c) & 1) << 4);
      const float dl = __fmul_rn(qh2f(s), static_cast<float>(sc));
      const float ml = __fmul_rn(qh2f(s + 2), static_cast<float>(mn));
      return __fsub_rn(__fmul_rn(dl, static_cast<float>(q)), ml);
    }
    case DType::Q6_K: {
      const int h = j >> 7, r = (j >> 5) & 3, l = j & 31;
      const int lo = (s[64 * h + 32 * (r & 1) + l] >> (4 * (r >> 1))) & 15;
      const int hi = (s[128 + 32 * h + l] >> (2 * r)) & 3;
      const int q = (lo | (hi << 4)) - 32;
      const int sc = static_cast<int8_t>(s[192 + 8 * h + (l >> 4) + 2 * r]);
      return __fmul_rn(__fmul_rn(qh2f(s + 208), static_cast<float>(sc)), static_cast<float>(q));
    }
    default: return __int_as_float(0x7fc00000);  // unsupported: callers check has_dequant
  }
}

__device__ inline float dequant_elem(program::DType t, const uint8_t* row, int64_t i) {
  using program::DType;
  switch (t) {
    case DType::F32: {
      uint32_t u = qrd32(row + 4 * i);
      return __uint_as_float(u);
    }
    case DType::F16: return qh2f(row + 2 * i);
    case DType::BF16: return qbf2f(row + 2 * i);
    default: {
      const int be = qblock_elems(t);
      if (be == 0) return __int_as_float(0x7fc00000);
      const int64_t blk = i / be;
      return deq_block_elem(t, row + blk * qblock_bytes(t), static_cast<int>(i - blk * be));
    }
  }
}

// ---- 32 elements -------------------------------------------------------------------------------------

__device__ inline void dequant32(program::DType t, const uint8_t* row, int64_t i0, float* out) {
  using program::DType;
  switch (t) {
    case DType::F32:
      for (int j = 0; j < 32; j++) out[j] = __uint_as_float(qrd32(row + 4 * (i0 + j)));
      return;
    case DType::F16:
      for (int j = 0; j < 32; j++) out[j] = qh2f(row + 2 * (i0 + j));
      return;
    case DType::BF16:
      for (int j = 0; j < 32; j++) out[j] = qbf2f(row + 2 * (i0 + j));
      return;
    case DType::Q4_0: {
      const uint8_t* s = row + (i0 / 32) * kQ4_0Bytes;
      const float d = qh2f(s);
#pragma unroll
      for (int j = 0; j < 16; j++) {
        const int b = s[2 + j];
        out[j] = __fmul_rn(static_cast<float>((b & 15) - 8), d);
        out[j + 16] = __fmul_rn(static_cast<float>((b >> 4) - 8), d);
      }
      return;
    }
    case DType::Q4_1: {
      const uint8_t* s = row + (i0 / 32) * kQ4_1Bytes;
      const float d = qh2f(s), m = qh2f(s + 2);
#pragma unroll
      for (int j = 0; j < 16; j++) {
        const int b = s[4 + j];
        out[j] = __fadd_rn(__fmul_rn(static_cast<float>(b & 15), d), m);
        out[j + 16] = __fadd_rn(__fmul_rn(static_cast<float>(b >> 4), d), m);
      }
      return;
    }
    case DType::Q5_0: {
      const uint8_t* s = row + (i0 / 32) * kQ5_0Bytes;
      const float d = qh2f(s);
      const uint32_t qh = qrd32(s + 2);
#pragma unroll
      for (int j = 0; j < 16; j++) {
        const int b = s[6 + j];
        const int h0 = ((qh >> j) & 1) << 4, h1 = ((qh >> (j + 16)) & 1) << 4;
        out[j] = __fmul_rn(static_cast<float>((b & 15) + h0 - 16), d);
        out[j + 16] = __fmul_rn(static_cast<float>((b >> 4) + h1 - 16), d);
      }
      return;
    }
    case DType::Q5_1: {
      const uint8_t* s = row + (i0 / 32) * kQ5_1Bytes;
      const float d = qh2f(s), m = qh2f(s + 2);
      const uint32_t qh = qrd32(s + 4);
#pragma unroll
      for (int j = 0; j < 16; j++) {
        const int b = s[8 + j];
        const int h0 = ((qh >> j) & 1) << 4, h1 = ((qh >> (j + 16)) & 1) << 4;
        out[j] = __fadd_rn(__fmul_rn(static_cast<float>((b & 15) + h0), d), m);
        out[j + 16] = __fadd_rn(__fmul_rn(static_cast<float>((b >> 4) + h1), d), m);
      }
      return;
    }
    case DType::Q8_0: {
      const uint8_t* s = row + (i0 / 32) * kQ8_0Bytes;
      const float d = qh2f(s);
#pragma unroll
      for (int j = 0; j < 32; j++) out[j] = __fmul_rn(static_cast<float>(static_cast<int8_t>(s[2 + j])), d);
      return;
    }
    case DType::Q2_K: {
      const uint8_t* s = row + (i0 / 256) * kQ2_KBytes;
      const int c = static_cast<int>((i0 % 256) / 32);
      const float d = qh2f(s + 80), dmin = qh2f(s + 82);
      const uint8_t* q = s + 16 + 32 * (c >> 2);
      const int shift = 2 * (c & 3);
#pragma unroll
      for (int half = 0; half < 2; half++) {
        const int sc = s[2 * c + half];
        const float dl = __fmul_rn(d, static_cast<float>(sc & 15));
        const float ml = __fmul_rn(dmin, static_cast<float>(sc >> 4));
#pragma unroll
        for (int l = 0; l < 16; l++) {
          const int v = (q[16 * half + l] >> shift) & 3;
          out[16 * half + l] = __fsub_rn(__fmul_rn(dl, static_cast<float>(v)), ml);
        }
      }
      return;
    }
    case DType::Q3_K: {
      const uint8_t* s = row + (i0 / 256) * kQ3_KBytes;
      const int c = static_cast<int>((i0 % 256) / 32);
      const float d = qh2f(s + 108);
      const uint8_t* q = s + 32 + 32 * (c >> 2);
      const int shift = 2 * (c & 3);
#pragma unroll
      for (int half = 0; half < 2; half++) {
        const float dl = __fmul_rn(d, static_cast<float>(q_scale_q3k(2 * c + half, s + 96)));
#pragma unroll
        for (int l = 16 * half; l < 16 * half + 16; l++) {
          const int hi = (s[l] >> c) & 1;
          out[l] = __fmul_rn(dl, static_cast<float>(((q[l] >> shift) & 3) - (hi ? 0 : 4)));
        }
      }
      return;
    }
    case DType::Q4_K:
    case DType::Q5_K: {
      const bool five = t == DType::Q5_K;
      const uint8_t* s = row + (i0 / 256) * (five ? kQ5_KBytes : kQ4_KBytes);
      const int c = static_cast<int>((i0 % 256) / 32);
      int sc, mn;
      q_scale_min_k4(c, s + 4, &sc, &mn);
      const float dl = __fmul_rn(qh2f(s), static_cast<float>(sc));
      const float ml = __fmul_rn(qh2f(s + 2), static_cast<float>(mn));
      const uint8_t* q = s + (five ? 48 : 16) + 32 * (c >> 1);
      const int nshift = 4 * (c & 1);
#pragma unroll
      for (int l = 0; l < 32; l++) {
        int v = (q[l] >> nshift) & 15;
        if (five) v |= ((s[16 + l] >> c) & 1) << 4;
        out[l] = __fsub_rn(__fmul_rn(dl, static_cast<float>(v)), ml);
      }
      return;
    }
    case DType::Q6_K: {
      const uint8_t* s = row + (i0 / 256) * kQ6_KBytes;
      const int c = static_cast<int>((i0 % 256) / 32);
      const int h = c >> 2, r = c & 3;
      const float d = qh2f(s + 208);
      const uint8_t* ql = s + 64 * h + 32 * (r & 1);
      const uint8_t* qh = s + 128 + 32 * h;
      const int lshift = 4 * (r >> 1), hshift = 2 * r;
#pragma unroll
      for (int half = 0; half < 2; half++) {
        const int sc = static_cast<int8_t>(s[192 + 8 * h + half + 2 * r]);
        const float dl = __fmul_rn(d, static_cast<float>(sc));
#pragma unroll
        for (int l = 16 * half; l < 16 * half + 16; l++) {
          const int v = (((ql[l] >> lshift) & 15) | (((qh[l] >> hshift) & 3) << 4)) - 32;
          out[l] = __fmul_rn(dl, static_cast<float>(v));
        }
      }
      return;
    }
    default:
      for (int j = 0; j < 32; j++) out[j] = __int_as_float(0x7fc00000);
      return;
  }
}

}  // namespace minfer::cuda
