// NEON (AArch64) dot products of the non-linear 4-bit formats IQ4_NL, MXFP4 (32-element blocks
// against ActQ8A) and IQ4_XS (256-element super-blocks against ActQ8K).
//
// A 4-bit code selects one of 16 int8 levels (kvalues_iq4nl, or kvalues_mxfp4: the E2M1 values
// doubled); one vqtbl1q_s8 turns 16 codes into their levels. Each weight block is decoded once and
// used for all nc columns; per 32 elements the integer dot with the activation codes is exact, and
// the float scaling is the scalar kernel's (quants_iq4.cpp) expression in its order, contraction
// off, so every result is bit-identical to the scalar kernel's.
#if defined(__aarch64__)
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <arm_neon.h>

#include <cstring>

#include "../common/fp16.h"
#include "../common/iq_grids.h"
#include "quants_internal.h"

namespace minfer::cpu::q {
#include "quants_neon_util.h"
namespace {

constexpr int kIq4NlBytes = 18;   // { f16 d; u8 qs[16] }
constexpr int kIq4XsBytes = 136;  // { f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128] }
constexpr int kMxfp4Bytes = 17;   // { u8 e; u8 qs[16] }


// The levels of one 16-byte nibble group (element j in byte j's low nibble, j + 16 in its high
// one): v[0] elements 0..15, v[1] elements 16..31. Both indices are < 16, the table's width.
inline void levels32(int8x16_t table, const uint8_t* qs, int8x16_t v[2]) {
  const uint8x16_t b = vld1q_u8(qs);
  v[0] = vqtbl1q_s8(table, vandq_u8(b, vdupq_n_u8(0x0f)));
  v[1] = vqtbl1q_s8(table, vshrq_n_u8(b, 4));
}

// Σ v·a over 32 elements.
inline int dot32(const int8x16_t v[2], const int8_t* a) {
  const int32x4_t acc = dot_i8(dot_i8(vdupq_n_s32(0), v[0], vld1q_s8(a)), v[1], vld1q_s8(a + 16));
  return vaddvq_s32(acc);
}

// IQ4_NL: d_w·d_a·Σ; MXFP4: d_a·2^(e−128)·Σ (the scalar kernels' products, in their order).
float scale_iq4_nl(const uint8_t* x, float da, int isum) { return f16_at(x) * da * static_cast<float>(isum); }
float scale_mxfp4(const uint8_t* x, float da, int isum) { return da * e8m0_half(x[0]) * static_cast<float>(isum); }

using ScaleFn = float (*)(const uint8_t*, float, int);

// vec_dot of a 32-element type whose block is kBytes bytes, nibbles at byte kQs, levels `table`.
template <int kBytes, int kQs, const int8_t* Table, ScaleFn Scale>
void vec_dot_nl32(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  const int64_t nb = n / 32;
  const auto* x = static_cast<const uint8_t*>(w);
  const int8x16_t table = vld1q_s8(Table);
  float s[kMaxCols] = {};
  int8x16_t v[2];
  for (int64_t i = 0; i < nb; i++, x += kBytes) {
    levels32(table, x + kQs, v);
    for (int c = 0; c < nc; c++) {
      const BlockQ8A& a = reinterpret_cast<const BlockQ8A*>(static_cast<const uint8_t*>(act) + c * act_stride)[i];
      s[c] += Scale(x, a.d, dot32(v, a.qs));
    }
  }
  for (int c = 0; c < nc; c++) out[c] = s[c];
}

}  // namespace

void vec_dot_iq4_nl_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  vec_dot_nl32<kIq4NlBytes, 2, quant::kvalues_iq4nl, scale_iq4_nl>(n, w, act, act_stride, nc, out);
}

void vec_dot_mxfp4_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  vec_dot_nl32<kMxfp4Bytes, 1, quant::kvalues_mxfp4, scale_mxfp4>(n, w, act, act_stride, nc, out);
}

// IQ4_XS: per 32-element sub-block (d_w·d_a)·scale·Σ level·a, accumulated in float in sub-block
// order, as the scalar kernel does.
void vec_dot_iq4_xs_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  const int64_t nb = n / 256;
  const auto* x = static_cast<const uint8_t*>(w);
  const int8x16_t table = vld1q_s8(quant::kvalues_iq4nl);
  float s[kMaxCols] = {};
  int8x16_t v[8][2];
  float ls[8];
  for (int64_t i = 0; i < nb; i++, x += kIq4XsBytes) {
    for (int ib = 0; ib < 8; ib++) {
      levels32(table, x + 8 + 16 * ib, v[ib]);
      ls[ib] = static_cast<float>(iq4xs_scale(x, ib));
    }
    const float d = f16_at(x);
    for (int c = 0; c < nc; c++) {
      const BlockQ8K& a = reinterpret_cast<const BlockQ8K*>(static_cast<const uint8_t*>(act) + c * act_stride)[i];
      const float dd = d * a.d;
      float sb = s[c];
      for (int ib = 0; ib < 8; ib++) sb += (dd * ls[ib]) * static_cast<float>(dot32(v[ib], a.qs + 32 * ib));
      s[c] = sb;
    }
  }
  for (int c = 0; c < nc; c++) out[c] = s[c];
}

}  // namespace minfer::cpu::q
#endif  // __aarch64__
