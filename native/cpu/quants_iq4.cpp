// Scalar kernels of the non-linear 4-bit formats IQ4_NL, IQ4_XS (ggml-common.h block_iq4_nl,
// block_iq4_xs) and MXFP4 (block_mxfp4): a 4-bit code selects one of 16 integer levels
// (kvalues_iq4nl, or kvalues_mxfp4 = the E2M1 values doubled) scaled per block.
//
// deq_* follow packages/gguf/src/quant/iq4.ts and mxfp4.ts operation by operation (each
// intermediate rounded to f32), so they give the same floats bit for bit.
// vec_dot_*_scalar: per block (IQ4_NL, MXFP4: 32 against one ActQ8A block) or sub-block (IQ4_XS:
// 32 of a 256 super-block against ActQ8K), Σ level[code]·a in integers, then scaled in float as
// ggml's reference vec_dots scale it. Each weight block is decoded once to its integer levels and
// used for all nc columns.
//
// Baseline file: no SIMD here; contraction off so that the float products round as written.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cstring>

#include "../common/fp16.h"
#include "../common/iq_grids.h"
#include "quants_internal.h"

namespace minfer::cpu::q {

using quant::kvalues_iq4nl;
using quant::kvalues_mxfp4;

namespace {

constexpr int kIq4NlBytes = 18;   // { f16 d; u8 qs[16] }
constexpr int kIq4XsBytes = 136;  // { f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128] }
constexpr int kMxfp4Bytes = 17;   // { u8 e; u8 qs[16] }

// The 32 integer levels of one 16-byte nibble group (the layout of Q4_0, IQ4_NL, MXFP4 and an
// IQ4_XS sub-block): byte j holds element j in its low nibble and element j + 16 in its high one.
inline void levels32(const uint8_t* qs, const int8_t* table, int8_t* v) {
  for (int j = 0; j < 16; j++) {
    v[j] = table[qs[j] & 0x0f];
    v[j + 16] = table[(qs[j] >> 4) & 0x0f];
  }
}

inline int dot32(const int8_t* v, const int8_t* a) {
  int s = 0;
  for (int j = 0; j < 32; j++) s += v[j] * a[j];
  return s;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Dequantizers.

void deq_iq4_nl(const uint8_t* s, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, s += kIq4NlBytes, y += 32) {
    const float d = f16_at(s);
    for (int j = 0; j < 16; j++) {
      const int b = s[2 + j];
      y[j] = d * static_cast<float>(kvalues_iq4nl[b & 0x0f]);
      y[j + 16] = d * static_cast<float>(kvalues_iq4nl[(b >> 4) & 0x0f]);
    }
  }
}

void deq_iq4_xs(const uint8_t* s, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, s += kIq4XsBytes) {
    const float d = f16_at(s);
    for (int ib = 0; ib < 8; ib++, y += 32) {
      const float dl = d * static_cast<float>(iq4xs_scale(s, ib));
      const uint8_t* q = s + 8 + 16 * ib;
      for (int j = 0; j < 16; j++) {
        y[j] = dl * static_cast<float>(kvalues_iq4nl[q[j] & 0x0f]);
        y[j + 16] = dl * static_cast<float>(kvalues_iq4nl[(q[j] >> 4) & 0x0f]);
      }
    }
  }
}

void deq_mxfp4(const uint8_t* s, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, s += kMxfp4Bytes, y += 32) {
    const float d = e8m0_half(s[0]);
    for (int j = 0; j < 16; j++) {
      const int b = s[1 + j];
      y[j] = static_cast<float>(kvalues_mxfp4[b & 0x0f]) * d;
      y[j + 16] = static_cast<float>(kvalues_mxfp4[(b >> 4) & 0x0f]) * d;
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Scalar vec_dots.

#define ACT(T, c) reinterpret_cast<const T*>(static_cast<const uint8_t*>(act) + (c) * act_stride)

// IQ4_NL · Q8A: per block d_w·d_a·Σ level·a.
void vec_dot_iq4_nl_scalar(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                           float* out) {
  const int64_t nb = n / 32;
  const auto* x = static_cast<const uint8_t*>(w);
  float s[kMaxCols] = {};
  int8_t v[32];
  for (int64_t i = 0; i < nb; i++, x += kIq4NlBytes) {
    levels32(x + 2, kvalues_iq4nl, v);
    const float d = f16_at(x);
    for (int c = 0; c < nc; c++) {
      const BlockQ8A& a = ACT(BlockQ8A, c)[i];
      s[c] += d * a.d * static_cast<float>(dot32(v, a.qs));
    }
  }
  for (int c = 0; c < nc; c++) out[c] = s[c];
}

// MXFP4 · Q8A: per block (d_a·2^(e−128))·Σ level·a, levels the doubled E2M1 values.
void vec_dot_mxfp4_scalar(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                          float* out) {
  const int64_t nb = n / 32;
  const auto* x = static_cast<const uint8_t*>(w);
  float s[kMaxCols] = {};
  int8_t v[32];
  for (int64_t i = 0; i < nb; i++, x += kMxfp4Bytes) {
    levels32(x + 1, kvalues_mxfp4, v);
    const float dh = e8m0_half(x[0]);
    for (int c = 0; c < nc; c++) {
      const BlockQ8A& a = ACT(BlockQ8A, c)[i];
      s[c] += a.d * dh * static_cast<float>(dot32(v, a.qs));
    }
  }
  for (int c = 0; c < nc; c++) out[c] = s[c];
}

// IQ4_XS · Q8K: per 32-element sub-block (d_w·d_a)·(scale − 32)·Σ level·a, accumulated in float.
void vec_dot_iq4_xs_scalar(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                           float* out) {
  const int64_t nb = n / 256;
  const auto* x = static_cast<const uint8_t*>(w);
  float s[kMaxCols] = {};
  int8_t v[256];
  int ls[8];
  for (int64_t i = 0; i < nb; i++, x += kIq4XsBytes) {
    for (int ib = 0; ib < 8; ib++) {
      levels32(x + 8 + 16 * ib, kvalues_iq4nl, v + 32 * ib);
      ls[ib] = iq4xs_scale(x, ib);
    }
    const float d = f16_at(x);
    for (int c = 0; c < nc; c++) {
      const BlockQ8K& a = ACT(BlockQ8K, c)[i];
      const float dd = d * a.d;
      float sb = s[c];
      for (int ib = 0; ib < 8; ib++)
        sb += (dd * static_cast<float>(ls[ib])) * static_cast<float>(dot32(v + 32 * ib, a.qs + 32 * ib));
      s[c] = sb;
    }
  }
  for (int c = 0; c < nc; c++) out[c] = s[c];
}

#undef ACT

}  // namespace minfer::cpu::q
