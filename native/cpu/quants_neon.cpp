// NEON (AArch64) dot products of the float types (F32, F16, BF16) and the 32-element block types
// against ActQ8A (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0), the Q8A activation quantizer, and neon_vec_dot,
// the lookup of every NEON kernel (the K-quants and ternary types are in quants_k_neon.cpp, IQ4_NL,
// IQ4_XS and MXFP4 in quants_iq_neon.cpp, the grid i-quants in quants_iq.cpp). Types without a
// NEON kernel use the scalar code.
//
// The block kernels decode each weight block once to int8 codes, take exact integer dots with
// every column's activation codes (widening multiplies: baseline NEON, no dotprod extension) and
// scale them with the scalar kernel's float expression in its order (contraction off), so they are
// bit-identical to quants.cpp's. The float kernels sum in a different order (vector lanes).
#if defined(__aarch64__)
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <arm_neon.h>

#include <cmath>
#include <cstring>

#include "../common/fp16.h"
#include "quants_internal.h"

namespace minfer::cpu::q {
#include "quants_neon_util.h"

// Kernels of quants_k_neon.cpp and quants_iq_neon.cpp.
#define MINFER_NEON_DOT(name) void vec_dot_##name##_neon(int64_t, const void*, const void*, size_t, int, float*);
MINFER_NEON_DOT(q2_k)
MINFER_NEON_DOT(q3_k)
MINFER_NEON_DOT(q4_k)
MINFER_NEON_DOT(q5_k)
MINFER_NEON_DOT(q6_k)
MINFER_NEON_DOT(tq1_0)
MINFER_NEON_DOT(tq2_0)
MINFER_NEON_DOT(iq4_nl)
MINFER_NEON_DOT(iq4_xs)
MINFER_NEON_DOT(mxfp4)
// quants_iq.cpp: the grid i-quants (scalar decoding, NEON integer sums)
MINFER_NEON_DOT(iq2_xxs)
MINFER_NEON_DOT(iq2_xs)
MINFER_NEON_DOT(iq2_s)
MINFER_NEON_DOT(iq3_xxs)
MINFER_NEON_DOT(iq3_s)
MINFER_NEON_DOT(iq1_s)
MINFER_NEON_DOT(iq1_m)
#undef MINFER_NEON_DOT

namespace {


// ---- 32-element blocks: codes v[0] (elements 0..15), v[1] (16..31) ----

// Unsigned 4-bit codes of the 16 bytes at q: element j in byte j's low nibble, j + 16 in its high.
inline void nibbles(const uint8_t* q, int8x16_t v[2]) {
  const uint8x16_t b = vld1q_u8(q);
  v[0] = vreinterpretq_s8_u8(vandq_u8(b, vdupq_n_u8(0x0f)));
  v[1] = vreinterpretq_s8_u8(vshrq_n_u8(b, 4));
}

// Byte j: 16 where bit j of `bits` (16 bits) is set, else 0.
inline int8x16_t bit4_of(uint32_t bits) {
  static constexpr uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t bytes = vcombine_u8(vdup_n_u8(static_cast<uint8_t>(bits & 0xff)),
                                       vdup_n_u8(static_cast<uint8_t>((bits >> 8) & 0xff)));
  return vreinterpretq_s8_u8(vandq_u8(vtstq_u8(bytes, vld1q_u8(kBit)), vdupq_n_u8(0x10)));
}

// Q5_0 / Q5_1 codes 0..31: nibbles at q, bit 4 of element j from bit j of the 32-bit qh at h.
inline void nibbles5(const uint8_t* q, const uint8_t* h, int8x16_t v[2]) {
  nibbles(q, v);
  const uint32_t qh = rd32(h);
  v[0] = vorrq_s8(v[0], bit4_of(qh & 0xffff));
  v[1] = vorrq_s8(v[1], bit4_of(qh >> 16));
}

void codes_q4_0(const uint8_t* x, int8x16_t v[2]) { nibbles(x + 2, v); }
void codes_q4_1(const uint8_t* x, int8x16_t v[2]) { nibbles(x + 4, v); }
void codes_q5_0(const uint8_t* x, int8x16_t v[2]) { nibbles5(x + 6, x + 2, v); }
void codes_q5_1(const uint8_t* x, int8x16_t v[2]) { nibbles5(x + 8, x + 4, v); }
void codes_q8_0(const uint8_t* x, int8x16_t v[2]) {
  v[0] = vld1q_s8(reinterpret_cast<const int8_t*>(x + 2));
  v[1] = vld1q_s8(reinterpret_cast<const int8_t*>(x + 18));
}

// Per-block float scaling of the integer dot isum (quants.cpp's expressions; a.s = a.d·Σa).
float scale_q4_0(const uint8_t* x, const BlockQ8A& a, int isum) {
  return f16_at(x) * (a.d * static_cast<float>(isum) - 8.0f * a.s);
}
float scale_q5_0(const uint8_t* x, const BlockQ8A& a, int isum) {
  return f16_at(x) * (a.d * static_cast<float>(isum) - 16.0f * a.s);
}
// Q4_1, Q5_1: d·da·isum + m·s_a.
float scale_d_m(const uint8_t* x, const BlockQ8A& a, int isum) {
  const float d = f16_at(x), m = f16_at(x + 2);
  return d * a.d * static_cast<float>(isum) + m * a.s;
}
float scale_q8_0(const uint8_t* x, const BlockQ8A& a, int isum) {
  return f16_at(x) * a.d * static_cast<float>(isum);
}

using CodesFn = void (*)(const uint8_t*, int8x16_t[2]);
using ScaleFn = float (*)(const uint8_t*, const BlockQ8A&, int);

// The vec_dot (quants_internal.h contract) of a 32-element type of kBytes-byte blocks.
template <int kBytes, CodesFn Codes, ScaleFn Scale>
void vec_dot_q32(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  const int64_t nb = n / 32;
  const auto* x = static_cast<const uint8_t*>(w);
  float s[kMaxCols] = {};
  int8x16_t v[2];
  for (int64_t i = 0; i < nb; i++, x += kBytes) {
    Codes(x, v);
    for (int c = 0; c < nc; c++) {
      const BlockQ8A& a = reinterpret_cast<const BlockQ8A*>(static_cast<const uint8_t*>(act) + c * act_stride)[i];
      const int32x4_t acc = dot_i8(dot_i8(vdupq_n_s32(0), v[0], vld1q_s8(a.qs)), v[1], vld1q_s8(a.qs + 16));
      s[c] += Scale(x, a, vaddvq_s32(acc));
    }
  }
  for (int c = 0; c < nc; c++) out[c] = s[c];
}

}  // namespace

void vec_dot_f32_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  const auto* x = static_cast<const float*>(w);
  for (int c = 0; c < nc; c++) {
    const auto* a = reinterpret_cast<const float*>(static_cast<const uint8_t*>(act) + c * act_stride);
    float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      acc0 = vfmaq_f32(acc0, vld1q_f32(x + i), vld1q_f32(a + i));
      acc1 = vfmaq_f32(acc1, vld1q_f32(x + i + 4), vld1q_f32(a + i + 4));
    }
    float s = vaddvq_f32(vaddq_f32(acc0, acc1));
    for (; i < n; i++) s += x[i] * a[i];
    out[c] = s;
  }
}

void vec_dot_f16_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  const auto* x = static_cast<const uint8_t*>(w);
  for (int c = 0; c < nc; c++) {
    const auto* a = reinterpret_cast<const float*>(static_cast<const uint8_t*>(act) + c * act_stride);
    float32x4_t acc = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      uint16_t h[4];
      std::memcpy(h, x + 2 * i, 8);
      const float32x4_t wf = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h)));
      acc = vfmaq_f32(acc, wf, vld1q_f32(a + i));
    }
    float s = vaddvq_f32(acc);
    for (; i < n; i++) s += f16_at(x + 2 * i) * a[i];
    out[c] = s;
  }
}

void vec_dot_bf16_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  const auto* x = static_cast<const uint8_t*>(w);
  for (int c = 0; c < nc; c++) {
    const auto* a = reinterpret_cast<const float*>(static_cast<const uint8_t*>(act) + c * act_stride);
    float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      // bf16 is the top half of an f32: widen each 16-bit lane by shifting it up 16 bits.
      const uint16x8_t h = vreinterpretq_u16_u8(vld1q_u8(x + 2 * i));
      const float32x4_t lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
      const float32x4_t hi = vreinterpretq_f32_u32(vshll_high_n_u16(h, 16));
      acc0 = vfmaq_f32(acc0, lo, vld1q_f32(a + i));
      acc1 = vfmaq_f32(acc1, hi, vld1q_f32(a + i + 4));
    }
    float s = vaddvq_f32(vaddq_f32(acc0, acc1));
    for (; i < n; i++) s += bf16_to_f32(rd16(x + 2 * i)) * a[i];
    out[c] = s;
  }
}

void vec_dot_q4_0_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  vec_dot_q32<18, codes_q4_0, scale_q4_0>(n, w, act, act_stride, nc, out);
}
void vec_dot_q4_1_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  vec_dot_q32<20, codes_q4_1, scale_d_m>(n, w, act, act_stride, nc, out);
}
void vec_dot_q5_0_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  vec_dot_q32<22, codes_q5_0, scale_q5_0>(n, w, act, act_stride, nc, out);
}
void vec_dot_q5_1_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  vec_dot_q32<24, codes_q5_1, scale_d_m>(n, w, act, act_stride, nc, out);
}
void vec_dot_q8_0_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  vec_dot_q32<34, codes_q8_0, scale_q8_0>(n, w, act, act_stride, nc, out);
}

void quantize_q8a_neon(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8A*>(dst);
  for (int64_t i = 0; i < n / 32; i++, x += 32) {
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int j = 0; j < 32; j += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x + j)));
    const float amax = vmaxvq_f32(m);
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int j = 0; j < 32; j++) {
      // Round half to even, as nearbyint does in the scalar version.
      const int v = static_cast<int>(std::nearbyint(x[j] * id));
      y[i].qs[j] = static_cast<int8_t>(v);
      sum += v;
    }
    y[i].d = act_scale_f16(d);
    y[i].s = y[i].d * static_cast<float>(sum);
  }
}

VecDotFn neon_vec_dot(program::DType t) {
  using program::DType;
  switch (t) {
    case DType::F32: return vec_dot_f32_neon;
    case DType::F16: return vec_dot_f16_neon;
    case DType::BF16: return vec_dot_bf16_neon;
    case DType::Q4_0: return vec_dot_q4_0_neon;
    case DType::Q4_1: return vec_dot_q4_1_neon;
    case DType::Q5_0: return vec_dot_q5_0_neon;
    case DType::Q5_1: return vec_dot_q5_1_neon;
    case DType::Q8_0: return vec_dot_q8_0_neon;
    case DType::Q2_K: return vec_dot_q2_k_neon;
    case DType::Q3_K: return vec_dot_q3_k_neon;
    case DType::Q4_K: return vec_dot_q4_k_neon;
    case DType::Q5_K: return vec_dot_q5_k_neon;
    case DType::Q6_K: return vec_dot_q6_k_neon;
    case DType::IQ4_NL: return vec_dot_iq4_nl_neon;
    case DType::IQ4_XS: return vec_dot_iq4_xs_neon;
    case DType::MXFP4: return vec_dot_mxfp4_neon;
    case DType::TQ1_0: return vec_dot_tq1_0_neon;
    case DType::TQ2_0: return vec_dot_tq2_0_neon;
    case DType::IQ2_XXS: return vec_dot_iq2_xxs_neon;
    case DType::IQ2_XS: return vec_dot_iq2_xs_neon;
    case DType::IQ2_S: return vec_dot_iq2_s_neon;
    case DType::IQ3_XXS: return vec_dot_iq3_xxs_neon;
    case DType::IQ3_S: return vec_dot_iq3_s_neon;
    case DType::IQ1_S: return vec_dot_iq1_s_neon;
    case DType::IQ1_M: return vec_dot_iq1_m_neon;
    default: return nullptr;
  }
}

}  // namespace minfer::cpu::q
#endif  // __aarch64__
