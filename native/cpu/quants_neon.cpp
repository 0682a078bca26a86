// NEON (AArch64) versions of the hottest dot products: f32, f16, Q4_0 and Q8_0 weights, and the
// Q8A activation quantizer. Other weight types use the scalar code on arm64. Each function
// computes what its scalar twin in quants.cpp computes (same blocks, same per-block scaling).
#if defined(__aarch64__)
#include <arm_neon.h>

#include <cmath>
#include <cstring>

#include "../common/fp16.h"
#include "quants_internal.h"

namespace minfer::cpu::q {
namespace {

inline float load_f16(const uint8_t* p) { return fp16_to_f32(rd16(p)); }

inline int32x4_t dot_i8(int32x4_t acc, int8x16_t a, int8x16_t b) {
  // Widening multiply-accumulate (works without the dotprod extension).
  const int16x8_t lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));
  const int16x8_t hi = vmull_s8(vget_high_s8(a), vget_high_s8(b));
  return vpadalq_s16(vpadalq_s16(acc, lo), hi);
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
    for (; i < n; i++) s += load_f16(x + 2 * i) * a[i];
    out[c] = s;
  }
}

void vec_dot_q4_0_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  const int64_t nb = n / 32;
  for (int c = 0; c < nc; c++) {
    const auto* a = reinterpret_cast<const BlockQ8A*>(static_cast<const uint8_t*>(act) + c * act_stride);
    const auto* x = static_cast<const uint8_t*>(w);
    float s = 0.0f;
    for (int64_t i = 0; i < nb; i++, x += 18) {
      const uint8x16_t packed = vld1q_u8(x + 2);
      // Unsigned codes 0..15: low nibbles are elements 0..15, high nibbles 16..31.
      const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(packed, vdupq_n_u8(15)));
      const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(packed, 4));
      int32x4_t acc = vdupq_n_s32(0);
      acc = dot_i8(acc, lo, vld1q_s8(a[i].qs));
      acc = dot_i8(acc, hi, vld1q_s8(a[i].qs + 16));
      const int isum = vaddvq_s32(acc);
      s += load_f16(x) * (a[i].d * static_cast<float>(isum) - 8.0f * a[i].s);
    }
    out[c] = s;
  }
}

void vec_dot_q8_0_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  const int64_t nb = n / 32;
  for (int c = 0; c < nc; c++) {
    const auto* a = reinterpret_cast<const BlockQ8A*>(static_cast<const uint8_t*>(act) + c * act_stride);
    const auto* x = static_cast<const uint8_t*>(w);
    float s = 0.0f;
    for (int64_t i = 0; i < nb; i++, x += 34) {
      int32x4_t acc = vdupq_n_s32(0);
      acc = dot_i8(acc, vld1q_s8(reinterpret_cast<const int8_t*>(x + 2)), vld1q_s8(a[i].qs));
      acc = dot_i8(acc, vld1q_s8(reinterpret_cast<const int8_t*>(x + 18)), vld1q_s8(a[i].qs + 16));
      s += load_f16(x) * a[i].d * static_cast<float>(vaddvq_s32(acc));
    }
    out[c] = s;
  }
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

}  // namespace minfer::cpu::q
#endif  // __aarch64__
