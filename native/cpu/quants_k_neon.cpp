// NEON (AArch64) dot products of the 256-element super-block types against ActQ8K activations:
// the K-quants Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and the ternary TQ1_0, TQ2_0.
//
// Each weight block is decoded once, with NEON, into a Decoded block: its 256 small integer codes
// as int8 (Q2_K 0..3, Q3_K q+4 in 0..7, Q4_K 0..15, Q5_K 0..31, Q6_K q+32 in 0..63, ternary t−1)
// and, per 16-element group g, an integer scale sc[g] and offset weight mn[g]. Every column then
// takes the sixteen 16-element integer dots of the codes with its activation codes (widening
// multiplies: baseline NEON, no dotprod extension) and forms
//   sumi = Σ_g sc[g]·dot_g,   summ = Σ_g mn[g]·bsums[g]
// which are exactly the scalar kernels' integer sums (quants.cpp, quants_ternary.cpp; no overflow:
// |sumi|, |summ| < 2^29). The per-block float scaling is the scalar kernel's expression, in its
// order, with contraction off, so every result is bit-identical to the scalar kernel's.
#if defined(__aarch64__)
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <arm_neon.h>

#include "../common/fp16.h"
#include "quants_internal.h"

namespace minfer::cpu::q {
#include "quants_neon_util.h"
namespace {

constexpr int kQ2KBytes = 84;   // { u8 scales[16]; u8 qs[64]; f16 d; f16 dmin }
constexpr int kQ3KBytes = 110;  // { u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d }
constexpr int kQ4KBytes = 144;  // { f16 d; f16 dmin; u8 scales[12]; u8 qs[128] }
constexpr int kQ5KBytes = 176;  // { f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128] }
constexpr int kQ6KBytes = 210;  // { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d }
constexpr int kTq1Bytes = 54;   // { u8 qs[48]; u8 qh[4]; f16 d }
constexpr int kTq2Bytes = 66;   // { u8 qs[64]; f16 d }


inline void store_codes(int8_t* v, uint8x16_t u) { vst1q_s8(v, vreinterpretq_s8_u8(u)); }

// One decoded super-block (see the file comment).
struct alignas(16) Decoded {
  int8_t v[256];
  int32_t sc[16];
  int32_t mn[16];
};

// sumi and summ (file comment) of decoded block b against activation block a.
inline void block_sums(const Decoded& b, const BlockQ8K& a, int* sumi, int* summ) {
  int32x4_t si = vdupq_n_s32(0);
  for (int k = 0; k < 4; k++) {
    int32x4_t p[4];
    for (int j = 0; j < 4; j++) {
      const int g = 4 * k + j;
      p[j] = dot_i8(vdupq_n_s32(0), vld1q_s8(b.v + 16 * g), vld1q_s8(a.qs + 16 * g));
    }
    // Lane j: the full 16-element dot of group 4k + j.
    const int32x4_t dots = vpaddq_s32(vpaddq_s32(p[0], p[1]), vpaddq_s32(p[2], p[3]));
    si = vmlaq_s32(si, dots, vld1q_s32(b.sc + 4 * k));
  }
  int32x4_t sm = vdupq_n_s32(0);
  for (int k = 0; k < 2; k++) {
    const int16x8_t bs = vld1q_s16(a.bsums + 8 * k);
    sm = vmlaq_s32(sm, vmovl_s16(vget_low_s16(bs)), vld1q_s32(b.mn + 8 * k));
    sm = vmlaq_s32(sm, vmovl_s16(vget_high_s16(bs)), vld1q_s32(b.mn + 8 * k + 4));
  }
  *sumi = vaddvq_s32(si);
  *summ = vaddvq_s32(sm);
}

// ---- code decoders ----

// The 2-bit fields of 64 bytes q in Q2_K's element order: for each half h (bytes 32h..32h+31),
// for shift 0, 2, 4, 6, the 32 fields at that shift (element 128h + 16·shift + m).
inline void two_bit_codes(const uint8_t* q, int8_t* v) {
  const uint8x16_t m3 = vdupq_n_u8(3);
  for (int h = 0; h < 2; h++)
    for (int k = 0; k < 2; k++) {
      const uint8x16_t b = vld1q_u8(q + 32 * h + 16 * k);
      int8_t* dst = v + 128 * h + 16 * k;
      store_codes(dst, vandq_u8(b, m3));
      store_codes(dst + 32, vandq_u8(vshrq_n_u8(b, 2), m3));
      store_codes(dst + 64, vandq_u8(vshrq_n_u8(b, 4), m3));
      store_codes(dst + 96, vshrq_n_u8(b, 6));
    }
}

// Q4_K / Q5_K codes: 32 bytes q per 64 elements, low nibbles first; with Q5_K's qh, bit 2c of
// qh[l] (c = the 64-element chunk) is bit 4 of element 64c + l's code, bit 2c+1 of element 64c+32+l.
inline void nibble_codes(const uint8_t* q, const uint8_t* qh, int8_t* v) {
  const uint8x16_t m4 = vdupq_n_u8(0x0f), b4 = vdupq_n_u8(0x10);
  for (int c = 0; c < 4; c++)
    for (int k = 0; k < 2; k++) {
      const uint8x16_t b = vld1q_u8(q + 32 * c + 16 * k);
      uint8x16_t lo = vandq_u8(b, m4), hi = vshrq_n_u8(b, 4);
      if (qh) {
        const uint8x16_t h = vld1q_u8(qh + 16 * k);
        lo = vorrq_u8(lo, vandq_u8(vtstq_u8(h, vdupq_n_u8(static_cast<uint8_t>(1u << (2 * c)))), b4));
        hi = vorrq_u8(hi, vandq_u8(vtstq_u8(h, vdupq_n_u8(static_cast<uint8_t>(2u << (2 * c)))), b4));
      }
      store_codes(v + 64 * c + 16 * k, lo);
      store_codes(v + 64 * c + 32 + 16 * k, hi);
    }
}

// Both groups of 32-element sub-block j get its scale and min (Q4_K / Q5_K: 6 bits each).
inline void k4_scales(const uint8_t* packed, Decoded& b) {
  for (int j = 0; j < 8; j++) {
    int sc, mn;
    scale_min_k4(j, packed, &sc, &mn);
    b.sc[2 * j] = b.sc[2 * j + 1] = sc;
    b.mn[2 * j] = b.mn[2 * j + 1] = mn;
  }
}

// Ternary types: every group scale 1, no offset term (the codes already are t − 1).
inline void unit_scales(Decoded& b) {
  for (int g = 0; g < 16; g++) {
    b.sc[g] = 1;
    b.mn[g] = 0;
  }
}

// Sixteen TQ1_0 digits minus 1: lane m is digit n of byte m, where pow3 lane m holds 3^n. The
// byte times 3^n modulo 256 drops the n leading base-3 digits; the next is ⌊3·that/256⌋ (0..2).
inline int8x16_t trits(uint8x16_t bytes, uint8x16_t pow3) {
  const uint8x16_t shifted = vmulq_u8(bytes, pow3);
  const uint8x8_t lo = vshrn_n_u16(vmull_u8(vget_low_u8(shifted), vdup_n_u8(3)), 8);
  const uint8x8_t hi = vshrn_n_u16(vmull_high_u8(shifted, vdupq_n_u8(3)), 8);
  return vsubq_s8(vreinterpretq_s8_u8(vcombine_u8(lo, hi)), vdupq_n_s8(1));
}

void decode_q2_k(const uint8_t* x, Decoded& b) {
  two_bit_codes(x + 16, b.v);
  for (int g = 0; g < 16; g++) {
    b.sc[g] = x[g] & 0x0f;
    b.mn[g] = x[g] >> 4;
  }
}

// Q3_K: code = 2-bit field | (hmask bit << 2), i.e. q + 4; the −4 goes through the offset term.
void decode_q3_k(const uint8_t* x, Decoded& b) {
  two_bit_codes(x + 32, b.v);
  const uint8x16_t b2 = vdupq_n_u8(4);
  for (int k = 0; k < 2; k++) {
    const uint8x16_t hm = vld1q_u8(x + 16 * k);
    for (int bit = 0; bit < 8; bit++) {  // hmask bit `bit` belongs to elements 32·bit + 16k + m
      int8_t* dst = b.v + 32 * bit + 16 * k;
      const uint8x16_t high = vandq_u8(vtstq_u8(hm, vdupq_n_u8(static_cast<uint8_t>(1u << bit))), b2);
      store_codes(dst, vorrq_u8(vreinterpretq_u8_s8(vld1q_s8(dst)), high));
    }
  }
  int8_t sc[16];
  scales_q3k(x + 96, sc);
  for (int g = 0; g < 16; g++) {
    b.sc[g] = sc[g];
    b.mn[g] = 4 * sc[g];
  }
}

void decode_q4_k(const uint8_t* x, Decoded& b) {
  nibble_codes(x + 16, nullptr, b.v);
  k4_scales(x + 4, b);
}

void decode_q5_k(const uint8_t* x, Decoded& b) {
  nibble_codes(x + 48, x + 16, b.v);
  k4_scales(x + 4, b);
}

// Q6_K: code = low nibble (ql) | 2 high bits (qh) << 4, i.e. q + 32; the −32 via the offset term.
// Half h: ql bytes A = ql[64h + l], B = ql[64h + 32 + l], qh byte C = qh[32h + l] (l < 32) give
// elements 128h + l (A low, C bits 0-1), +32 (B low, C bits 2-3), +64 (A high, C bits 4-5),
// +96 (B high, C bits 6-7).
void decode_q6_k(const uint8_t* x, Decoded& b) {
  const uint8x16_t m4 = vdupq_n_u8(0x0f), m30 = vdupq_n_u8(0x30);
  for (int h = 0; h < 2; h++)
    for (int k = 0; k < 2; k++) {
      const uint8x16_t A = vld1q_u8(x + 64 * h + 16 * k);
      const uint8x16_t B = vld1q_u8(x + 64 * h + 32 + 16 * k);
      const uint8x16_t C = vld1q_u8(x + 128 + 32 * h + 16 * k);
      int8_t* dst = b.v + 128 * h + 16 * k;
      store_codes(dst, vorrq_u8(vandq_u8(A, m4), vandq_u8(vshlq_n_u8(C, 4), m30)));
      store_codes(dst + 32, vorrq_u8(vandq_u8(B, m4), vandq_u8(vshlq_n_u8(C, 2), m30)));
      store_codes(dst + 64, vorrq_u8(vshrq_n_u8(A, 4), vandq_u8(C, m30)));
      store_codes(dst + 96, vorrq_u8(vshrq_n_u8(B, 4), vandq_u8(vshrq_n_u8(C, 2), m30)));
    }
  const auto* sc = reinterpret_cast<const int8_t*>(x + 192);
  for (int g = 0; g < 16; g++) {
    b.sc[g] = sc[g];
    b.mn[g] = 32 * sc[g];
  }
}

// TQ1_0: qs[0..31] five digits each (digit n of byte m: element 32n + m), qs[32..47] five each
// (element 160 + 16n + m), qh[0..3] four each (element 240 + 4n + m).
void decode_tq1_0(const uint8_t* x, Decoded& b) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  for (int n = 0; n < 5; n++) {
    const uint8x16_t p = vdupq_n_u8(kPow3[n]);
    vst1q_s8(b.v + 32 * n, trits(vld1q_u8(x), p));
    vst1q_s8(b.v + 32 * n + 16, trits(vld1q_u8(x + 16), p));
    vst1q_s8(b.v + 160 + 16 * n, trits(vld1q_u8(x + 32), p));
  }
  // The four qh bytes repeated four times; lane 4n + m takes digit n of qh[m].
  static constexpr uint8_t kQhPow3[16] = {1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27};
  const uint8x16_t qh = vreinterpretq_u8_u32(vdupq_n_u32(rd32(x + 48)));
  vst1q_s8(b.v + 240, trits(qh, vld1q_u8(kQhPow3)));
  unit_scales(b);
}

// TQ2_0: Q2_K's 2-bit layout, code t − 1.
void decode_tq2_0(const uint8_t* x, Decoded& b) {
  two_bit_codes(x, b.v);
  for (int j = 0; j < 256; j += 16) vst1q_s8(b.v + j, vsubq_s8(vld1q_s8(b.v + j), vdupq_n_s8(1)));
  unit_scales(b);
}

// ---- per-block float scaling: the scalar kernels' expressions ----

// Q2_K, Q4_K, Q5_K: da·(d·sumi − dmin·summ), d and dmin the f16 pair at byte kD.
template <int kD>
float scale_d_dmin(const uint8_t* x, float da, int sumi, int summ) {
  const float d = f16_at(x + kD), dmin = f16_at(x + kD + 2);
  return da * (d * static_cast<float>(sumi) - dmin * static_cast<float>(summ));
}

// Q3_K, Q6_K: d·da·(sumi − summ) (the offset term removes the code bias).
template <int kD>
float scale_biased(const uint8_t* x, float da, int sumi, int summ) {
  return f16_at(x + kD) * da * static_cast<float>(sumi - summ);
}

// TQ1_0, TQ2_0: sumi·(d·da).
template <int kD>
float scale_ternary(const uint8_t* x, float da, int sumi, int) {
  return static_cast<float>(sumi) * (f16_at(x + kD) * da);
}

using DecodeFn = void (*)(const uint8_t*, Decoded&);
using ScaleFn = float (*)(const uint8_t*, float, int, int);

// The vec_dot (quants_internal.h contract) of a type of kBytes-byte super-blocks.
template <int kBytes, DecodeFn Decode, ScaleFn Scale>
void vec_dot_k(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  const int64_t nb = n / 256;
  const auto* x = static_cast<const uint8_t*>(w);
  float s[kMaxCols] = {};
  Decoded b;
  for (int64_t i = 0; i < nb; i++, x += kBytes) {
    Decode(x, b);
    for (int c = 0; c < nc; c++) {
      const BlockQ8K& a = reinterpret_cast<const BlockQ8K*>(static_cast<const uint8_t*>(act) + c * act_stride)[i];
      int sumi, summ;
      block_sums(b, a, &sumi, &summ);
      s[c] += Scale(x, a.d, sumi, summ);
    }
  }
  for (int c = 0; c < nc; c++) out[c] = s[c];
}

}  // namespace

void vec_dot_q2_k_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  vec_dot_k<kQ2KBytes, decode_q2_k, scale_d_dmin<80>>(n, w, act, act_stride, nc, out);
}
void vec_dot_q3_k_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  vec_dot_k<kQ3KBytes, decode_q3_k, scale_biased<108>>(n, w, act, act_stride, nc, out);
}
void vec_dot_q4_k_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  vec_dot_k<kQ4KBytes, decode_q4_k, scale_d_dmin<0>>(n, w, act, act_stride, nc, out);
}
void vec_dot_q5_k_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  vec_dot_k<kQ5KBytes, decode_q5_k, scale_d_dmin<0>>(n, w, act, act_stride, nc, out);
}
void vec_dot_q6_k_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  vec_dot_k<kQ6KBytes, decode_q6_k, scale_biased<208>>(n, w, act, act_stride, nc, out);
}
void vec_dot_tq1_0_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  vec_dot_k<kTq1Bytes, decode_tq1_0, scale_ternary<52>>(n, w, act, act_stride, nc, out);
}
void vec_dot_tq2_0_neon(int64_t n, const void* w, const void* act, size_t act_stride, int nc, float* out) {
  vec_dot_k<kTq2Bytes, decode_tq2_0, scale_ternary<64>>(n, w, act, act_stride, nc, out);
}

}  // namespace minfer::cpu::q
#endif  // __aarch64__
