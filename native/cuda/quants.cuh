// Device-side dequantization of every weight dtype the CPU backend dequantizes (F32, F16, BF16,
// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, the grid i-quants IQ1_S, IQ1_M,
// IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, the level-table types IQ4_NL, IQ4_XS, MXFP4 and the
// ternary TQ1_0, TQ2_0), bit-exact to native/cpu/quants.cpp, quants_iq.cpp, quants_iq4.cpp and
// quants_ternary.cpp: the same float operations in the same order, each rounded on its own
// (explicit __fmul_rn / __fadd_rn / __fsub_rn so that nvcc never fuses d*q - m into an FMA).
// The i-quant tables are native/common/iq_grids.h's, in device global memory (read as name<>[i]).
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

#define MINFER_IQ_GRIDS_DEVICE
#include "../common/iq_grids.h"
#if !MINFER_IQ_GRIDS_ON_DEVICE
#error "iq_grids.h was included before quants.cuh without MINFER_IQ_GRIDS_DEVICE: its tables are host-only"
#endif

namespace minfer::cuda {

// ---- block geometry ------------------------------------------------------------------------------

constexpr int kQ4_0Bytes = 18, kQ4_1Bytes = 20, kQ5_0Bytes = 22, kQ5_1Bytes = 24, kQ8_0Bytes = 34;
constexpr int kQ2_KBytes = 84, kQ3_KBytes = 110, kQ4_KBytes = 144, kQ5_KBytes = 176, kQ6_KBytes = 210;
constexpr int kIQ2_XXSBytes = 66, kIQ2_XSBytes = 74, kIQ2_SBytes = 82, kIQ3_XXSBytes = 98, kIQ3_SBytes = 110;
constexpr int kIQ1_SBytes = 50, kIQ1_MBytes = 56;
constexpr int kIQ4_NLBytes = 18, kIQ4_XSBytes = 136, kMXFP4Bytes = 17, kTQ1_0Bytes = 54, kTQ2_0Bytes = 66;

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
    case program::DType::IQ1_S:
    case program::DType::IQ1_M:
    case program::DType::IQ2_XXS:
    case program::DType::IQ2_XS:
    case program::DType::IQ2_S:
    case program::DType::IQ3_XXS:
    case program::DType::IQ3_S:
    case program::DType::IQ4_NL:
    case program::DType::IQ4_XS:
    case program::DType::MXFP4:
    case program::DType::TQ1_0:
    case program::DType::TQ2_0:
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
    case program::DType::Q8_0:
    case program::DType::IQ4_NL:
    case program::DType::MXFP4: return 32;
    case program::DType::Q2_K:
    case program::DType::Q3_K:
    case program::DType::Q4_K:
    case program::DType::Q5_K:
    case program::DType::Q6_K:
    case program::DType::IQ1_S:
    case program::DType::IQ1_M:
    case program::DType::IQ2_XXS:
    case program::DType::IQ2_XS:
    case program::DType::IQ2_S:
    case program::DType::IQ3_XXS:
    case program::DType::IQ3_S:
    case program::DType::IQ4_XS:
    case program::DType::TQ1_0:
    case program::DType::TQ2_0: return 256;
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
    case program::DType::IQ1_S: return kIQ1_SBytes;
    case program::DType::IQ1_M: return kIQ1_MBytes;
    case program::DType::IQ2_XXS: return kIQ2_XXSBytes;
    case program::DType::IQ2_XS: return kIQ2_XSBytes;
    case program::DType::IQ2_S: return kIQ2_SBytes;
    case program::DType::IQ3_XXS: return kIQ3_XXSBytes;
    case program::DType::IQ3_S: return kIQ3_SBytes;
    case program::DType::IQ4_NL: return kIQ4_NLBytes;
    case program::DType::IQ4_XS: return kIQ4_XSBytes;
    case program::DType::MXFP4: return kMXFP4Bytes;
    case program::DType::TQ1_0: return kTQ1_0Bytes;
    case program::DType::TQ2_0: return kTQ2_0Bytes;
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

// ---- i-quants, MXFP4, ternary (native/cpu/quants_iq.cpp, quants_iq4.cpp, quants_ternary.cpp) -------
// The grid i-quants: a 256-element block is an f16 d, 16 odd scales ls (one per 16 elements) and
// 256 small integers v, w = (d · float(ls·v)) · F for a per-type power of two F; quants_iq.cpp's top
// comment explains why that product order gives ggml's values exactly. A row here is 8 elements
// (8r .. 8r+7, r = 0..31; group g = r / 4 of 32 elements); IqRow holds its grid entry (byte k:
// element 8r + k's magnitude, or for IQ1 its grid value in {-1, 0, 1}), its sign bits, its ls and
// IQ1's offset delta (v = 8·grid + delta). Every table index is masked to the table's width.

struct IqRow {
  uint64_t grid;  // byte k: element k of the row (magnitude; IQ1: signed grid value)
  uint32_t neg;   // bit k: element k negated (not IQ1)
  int ls;         // odd scale of the row's 16 elements
  int delta;      // IQ1: +1 or -1
};

// The f16 scale d of a grid i-quant block (IQ1_M spreads it over the top nibbles of its scales).
__device__ inline float iq_d(program::DType t, const uint8_t* s) {
  if (t == program::DType::IQ1_M) {
    uint32_t bits = 0;
#pragma unroll
    for (int k = 0; k < 4; k++) bits |= (qrd16(s + 48 + 2 * k) >> 12) << (4 * k);
    return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
  }
  return qh2f(s);
}

// The power of two F of a grid i-quant.
__device__ inline float iq_factor(program::DType t) {
  switch (t) {
    case program::DType::IQ3_XXS: return 0.25f;
    case program::DType::IQ3_S: return 1.0f;
    default: return 0.125f;  // IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M
  }
}

// Row r (0..31) of the grid i-quant block at s (layouts: quants_iq.cpp's decode_<type>).
__device__ inline IqRow iq_row(program::DType t, const uint8_t* s, int r) {
  using namespace minfer::quant;
  using program::DType;
  const int g = r >> 2, l = r & 3;
  IqRow o{0, 0, 1, 0};
  switch (t) {
    case DType::IQ2_XXS: {
      const uint8_t* q = s + 2 + 8 * g;
      const uint32_t aux = qrd32(q + 4);
      o.ls = 2 * static_cast<int>(aux >> 28) + 1;
      o.grid = iq2xxs_grid<>[q[l] & 255];
      o.neg = ksigns_iq2xs<>[(aux >> (7 * l)) & 127];
      break;
    }
    case DType::IQ2_XS: {
      const int sc = s[66 + g];
      o.ls = 2 * ((l < 2 ? sc : sc >> 4) & 15) + 1;
      const uint32_t qs = qrd16(s + 2 + 2 * r);
      o.grid = iq2xs_grid<>[qs & 511];
      o.neg = ksigns_iq2xs<>[(qs >> 9) & 127];
      break;
    }
    case DType::IQ2_S: {
      const int sc = s[74 + g];
      o.ls = 2 * ((l < 2 ? sc : sc >> 4) & 15) + 1;
      const uint32_t index = s[2 + r] | (((static_cast<uint32_t>(s[66 + g]) >> (2 * l)) & 3) << 8);
      o.grid = iq2s_grid<>[index & 1023];
      o.neg = s[34 + r];
      break;
    }
    case DType::IQ3_XXS: {
      const uint32_t aux = qrd32(s + 66 + 4 * g);
      o.ls = 2 * static_cast<int>(aux >> 28) + 1;
      const uint8_t* q = s + 2 + 8 * g + 2 * l;
      o.grid = static_cast<uint64_t>(iq3xxs_grid<>[q[0] & 255]) | (static_cast<uint64_t>(iq3xxs_grid<>[q[1] & 255]) << 32);
      o.neg = ksigns_iq2xs<>[(aux >> (7 * l)) & 127];
      break;
    }
    case DType::IQ3_S: {
      o.ls = 2 * ((s[106 + (g >> 1)] >> (4 * (g & 1))) & 15) + 1;
      const uint32_t qh = s[66 + g];
      const int k = 2 * l;
      const uint32_t first = s[2 + 8 * g + k] | (((qh >> k) & 1) << 8);
      const uint32_t second = s[2 + 8 * g + k + 1] | (((qh >> (k + 1)) & 1) << 8);
      o.grid = static_cast<uint64_t>(iq3s_grid<>[first & 511]) | (static_cast<uint64_t>(iq3s_grid<>[second & 511]) << 32);
      o.neg = s[74 + r];
      break;
    }
    case DType::IQ1_S: {
      const uint32_t qh = qrd16(s + 34 + 2 * g);
      o.ls = 2 * static_cast<int>((qh >> 12) & 7) + 1;
      o.delta = (qh & 0x8000u) ? -1 : 1;
      const uint32_t index = s[2 + r] | (((qh >> (3 * l)) & 7) << 8);
      o.grid = iq1s_grid<>[index & 2047];
      break;
    }
    case DType::IQ1_M: {
      const uint32_t sc = qrd16(s + 48 + 2 * (g >> 1));
      o.ls = 2 * static_cast<int>((sc >> (6 * (g & 1) + 3 * (l >> 1))) & 7) + 1;
      const uint32_t nib = (static_cast<uint32_t>(s[32 + 2 * g + (l >> 1)]) >> (4 * (l & 1))) & 15;
      o.delta = (nib & 8) ? -1 : 1;
      const uint32_t index = s[r] | ((nib & 7) << 8);
      o.grid = iq1s_grid<>[index & 2047];
      break;
    }
    default: break;
  }
  return o;
}

// The integer v of element k (0..7) of a row.
__device__ inline int iq_v(program::DType t, const IqRow& o, int k) {
  const int b = static_cast<int>((o.grid >> (8 * k)) & 0xff);
  if (t == program::DType::IQ1_S || t == program::DType::IQ1_M) return 8 * static_cast<int>(static_cast<int8_t>(b)) + o.delta;
  return ((o.neg >> k) & 1) ? -b : b;
}

// (d · float(ls·v)) · F, quants_iq.cpp's deq_blocks.
__device__ inline float iq_value(float d, int ls, int v, float f) {
  return __fmul_rn(__fmul_rn(d, static_cast<float>(ls * v)), f);
}

// IQ4_XS sub-block ib's 6-bit scale, bias removed (quants_iq4.cpp's iq4xs_scale).
__device__ inline int iq4xs_scale(const uint8_t* s, int ib) {
  const int low = (s[4 + (ib >> 1)] >> (4 * (ib & 1))) & 15;
  const int high = static_cast<int>(qrd16(s + 2) >> (2 * ib)) & 3;
  return (low | (high << 4)) - 32;
}

// Half the E8M0 scale, 2^(e-128), from its f32 bits (quants_iq4.cpp's e8m0_half): e = 0, 1 give
// the subnormals 2^-128, 2^-127.
__device__ inline float e8m0_half(uint32_t e) {
  return __uint_as_float(e < 2 ? (0x00200000u << e) : ((e - 1) << 23));
}

// Digit n (0 = most significant) of a TQ1_0 byte's base-3 number (quants_ternary.cpp's trit).
__device__ inline int tq1_trit(uint32_t byte, int n) {
  const uint32_t pow3 = n == 0 ? 1u : n == 1 ? 3u : n == 2 ? 9u : n == 3 ? 27u : 81u;
  return static_cast<int>((((byte * pow3) & 0xffu) * 3u) >> 8);
}

// TQ1_0 element j (0..255) as t - 1: qs[0..31] five digits each (digit n of byte m: element
// 32n + m), qs[32..47] five each (element 160 + 16n + m), qh[0..3] four each (element 240 + 4n + m).
__device__ inline int tq1_elem(const uint8_t* s, int j) {
  if (j < 160) return tq1_trit(s[j & 31], j >> 5) - 1;
  if (j < 240) return tq1_trit(s[32 + ((j - 160) & 15)], (j - 160) >> 4) - 1;
  return tq1_trit(s[48 + ((j - 240) & 3)], (j - 240) >> 2) - 1;
}

// TQ2_0 element j as t - 1: half h = j / 128 (bytes 32h..), bits 2·((j % 128) / 32) of byte j % 32.
__device__ inline int tq2_elem(const uint8_t* s, int j) {
  return ((s[32 * (j >> 7) + (j & 31)] >> (2 * ((j >> 5) & 3))) & 3) - 1;
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
    case DType::IQ1_S:
    case DType::IQ1_M:
    case DType::IQ2_XXS:
    case DType::IQ2_XS:
    case DType::IQ2_S:
    case DType::IQ3_XXS:
    case DType::IQ3_S: {
      const IqRow o = iq_row(t, s, j >> 3);
      return iq_value(iq_d(t, s), o.ls, iq_v(t, o, j & 7), iq_factor(t));
    }
    case DType::IQ4_NL: {
      const int b = s[2 + (j & 15)];
      const int q = j < 16 ? (b & 15) : (b >> 4);
      return __fmul_rn(qh2f(s), static_cast<float>(minfer::quant::kvalues_iq4nl<>[q & 15]));
    }
    case DType::IQ4_XS: {
      const int ib = j >> 5, l = j & 31;
      const int b = s[8 + 16 * ib + (l & 15)];
      const int q = l < 16 ? (b & 15) : (b >> 4);
      const float dl = __fmul_rn(qh2f(s), static_cast<float>(iq4xs_scale(s, ib)));
      return __fmul_rn(dl, static_cast<float>(minfer::quant::kvalues_iq4nl<>[q & 15]));
    }
    case DType::MXFP4: {
      const int b = s[1 + (j & 15)];
      const int q = j < 16 ? (b & 15) : (b >> 4);
      return __fmul_rn(static_cast<float>(minfer::quant::kvalues_mxfp4<>[q & 15]), e8m0_half(s[0]));
    }
    case DType::TQ1_0: return __fmul_rn(static_cast<float>(tq1_elem(s, j)), qh2f(s + 52));
    case DType::TQ2_0: return __fmul_rn(static_cast<float>(tq2_elem(s, j)), qh2f(s + 64));
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
    case DType::IQ1_S:
    case DType::IQ1_M:
    case DType::IQ2_XXS:
    case DType::IQ2_XS:
    case DType::IQ2_S:
    case DType::IQ3_XXS:
    case DType::IQ3_S: {
      const uint8_t* s = row + (i0 / 256) * qblock_bytes(t);
      const int g = static_cast<int>((i0 % 256) / 32);  // the chunk is group g
      const float d = iq_d(t, s), f = iq_factor(t);
#pragma unroll
      for (int l = 0; l < 4; l++) {
        const IqRow o = iq_row(t, s, 4 * g + l);
#pragma unroll
        for (int k = 0; k < 8; k++) out[8 * l + k] = iq_value(d, o.ls, iq_v(t, o, k), f);
      }
      return;
    }
    case DType::IQ4_NL:
    case DType::IQ4_XS:
    case DType::MXFP4: {
      // 16 bytes of nibbles (byte j: element j low, j + 16 high) times a scale: IQ4_NL d·level,
      // IQ4_XS (d·(scale - 32))·level, MXFP4 level·2^(e-128) (quants_iq4.cpp's deq_*)
      const int8_t* table = t == DType::MXFP4 ? minfer::quant::kvalues_mxfp4<> : minfer::quant::kvalues_iq4nl<>;
      const uint8_t* q;
      float dl;
      if (t == DType::IQ4_NL) {
        const uint8_t* s = row + (i0 / 32) * kIQ4_NLBytes;
        dl = qh2f(s);
        q = s + 2;
      } else if (t == DType::IQ4_XS) {
        const uint8_t* s = row + (i0 / 256) * kIQ4_XSBytes;
        const int ib = static_cast<int>((i0 % 256) / 32);
        dl = __fmul_rn(qh2f(s), static_cast<float>(iq4xs_scale(s, ib)));
        q = s + 8 + 16 * ib;
      } else {
        const uint8_t* s = row + (i0 / 32) * kMXFP4Bytes;
        dl = e8m0_half(s[0]);
        q = s + 1;
      }
#pragma unroll
      for (int j = 0; j < 16; j++) {
        const int b = q[j];
        out[j] = __fmul_rn(dl, static_cast<float>(table[b & 15]));
        out[j + 16] = __fmul_rn(dl, static_cast<float>(table[(b >> 4) & 15]));
      }
      return;
    }
    case DType::TQ1_0: {
      const uint8_t* s = row + (i0 / 256) * kTQ1_0Bytes;
      const int j0 = static_cast<int>(i0 % 256);
      const float d = qh2f(s + 52);
#pragma unroll
      for (int j = 0; j < 32; j++) out[j] = __fmul_rn(static_cast<float>(tq1_elem(s, j0 + j)), d);
      return;
    }
    case DType::TQ2_0: {
      const uint8_t* s = row + (i0 / 256) * kTQ2_0Bytes;
      const int c = static_cast<int>((i0 % 256) / 32);
      const uint8_t* q = s + 32 * (c >> 2);
      const int shift = 2 * (c & 3);
      const float d = qh2f(s + 64);
#pragma unroll
      for (int j = 0; j < 32; j++) out[j] = __fmul_rn(static_cast<float>(((q[j] >> shift) & 3) - 1), d);
      return;
    }
    default:
      for (int j = 0; j < 32; j++) out[j] = __int_as_float(0x7fc00000);
      return;
  }
}

}  // namespace minfer::cuda
