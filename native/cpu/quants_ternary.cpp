// Scalar kernels of the ternary formats TQ1_0 and TQ2_0 (ggml-common.h block_tq1_0, block_tq2_0;
// 256 elements per block): every element is a digit t ∈ {0, 1, 2} standing for (t − 1)·d.
//
// deq_* follow packages/gguf/src/quant/ternary.ts (same element order; (t − 1)·d is exact), so
// they give the same floats bit for bit.
// vec_dot_*_scalar against ActQ8K: per super-block Σ (t − 1)·a in integers, then × d_w·d_a in
// float, as ggml's reference vec_dots do. Each weight block is decoded once to its 256 signed
// digits and used for all nc columns.
//
// Baseline file: no SIMD here; contraction off so that the float products round as written.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "../common/fp16.h"
#include "quants_internal.h"

namespace minfer::cpu::q {

namespace {

constexpr int kTq1Bytes = 54;  // { u8 qs[48]; u8 qh[4]; f16 d }
constexpr int kTq2Bytes = 66;  // { u8 qs[64]; f16 d }

constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};

// Digit n (0 = most significant) of the base-3 number a TQ1_0 byte packs. The byte holds the
// packed number as a fraction of 3^5 in units of 1/256 (rounded up), so multiplying by 3^n modulo
// 256 drops the n leading digits and the next one is ⌊3·byte'/256⌋ ∈ {0, 1, 2} for any byte.
inline int trit(uint8_t byte, int n) {
  const unsigned shifted = (static_cast<unsigned>(byte) * kPow3[n]) & 0xffu;
  return static_cast<int>((shifted * 3u) >> 8);
}

// TQ1_0's 256 digits as t − 1 ∈ {−1, 0, 1}, in element order: qs[0..31] hold five digits each,
// digit n of byte m is element 32n + m (0..159); qs[32..47] likewise 16 at a time, element
// 160 + 16n + m (160..239); qh[0..3] four digits each, digit n of qh[m] is element 240 + 4n + m.
inline void tq1_digits(const uint8_t* x, int8_t* v) {
  static constexpr int kRuns[3][3] = {{0, 32, 5}, {32, 16, 5}, {48, 4, 4}};  // start, count, digits
  for (const auto& r : kRuns)
    for (int n = 0; n < r[2]; n++)
      for (int m = 0; m < r[1]; m++) *v++ = static_cast<int8_t>(trit(x[r[0] + m], n) - 1);
}

// TQ2_0's 256 2-bit digits as t − 1, in Q2_K's order: for each half h (bytes 32h..32h+31), for
// shift 0, 2, 4, 6, 32 elements from bits [shift, shift+2). The unused digit 3 gives 2.
inline void tq2_digits(const uint8_t* x, int8_t* v) {
  for (int h = 0; h < 2; h++)
    for (int shift = 0; shift < 8; shift += 2)
      for (int m = 0; m < 32; m++) *v++ = static_cast<int8_t>(((x[32 * h + m] >> shift) & 0x03) - 1);
}

inline int dot256(const int8_t* v, const int8_t* a) {
  int s = 0;
  for (int j = 0; j < 256; j++) s += v[j] * a[j];
  return s;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Dequantizers.

void deq_tq1_0(const uint8_t* s, float* y, int64_t nb) {
  int8_t v[256];
  for (int64_t i = 0; i < nb; i++, s += kTq1Bytes, y += 256) {
    const float d = f16_at(s + 52);
    tq1_digits(s, v);
    for (int j = 0; j < 256; j++) y[j] = static_cast<float>(v[j]) * d;
  }
}

void deq_tq2_0(const uint8_t* s, float* y, int64_t nb) {
  int8_t v[256];
  for (int64_t i = 0; i < nb; i++, s += kTq2Bytes, y += 256) {
    const float d = f16_at(s + 64);
    tq2_digits(s, v);
    for (int j = 0; j < 256; j++) y[j] = static_cast<float>(v[j]) * d;
  }
}

// ------------------------------------------------------------------------------------------------
// Scalar vec_dots.

#define ACT(T, c) reinterpret_cast<const T*>(static_cast<const uint8_t*>(act) + (c) * act_stride)

void vec_dot_tq1_0_scalar(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                          float* out) {
  const int64_t nb = n / 256;
  const auto* x = static_cast<const uint8_t*>(w);
  float s[kMaxCols] = {};
  int8_t v[256];
  for (int64_t i = 0; i < nb; i++, x += kTq1Bytes) {
    tq1_digits(x, v);
    const float d = f16_at(x + 52);
    for (int c = 0; c < nc; c++) {
      const BlockQ8K& a = ACT(BlockQ8K, c)[i];
      s[c] += static_cast<float>(dot256(v, a.qs)) * (d * a.d);
    }
  }
  for (int c = 0; c < nc; c++) out[c] = s[c];
}

void vec_dot_tq2_0_scalar(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                          float* out) {
  const int64_t nb = n / 256;
  const auto* x = static_cast<const uint8_t*>(w);
  float s[kMaxCols] = {};
  int8_t v[256];
  for (int64_t i = 0; i < nb; i++, x += kTq2Bytes) {
    tq2_digits(x, v);
    const float d = f16_at(x + 64);
    for (int c = 0; c < nc; c++) {
      const BlockQ8K& a = ACT(BlockQ8K, c)[i];
      s[c] += static_cast<float>(dot256(v, a.qs)) * (d * a.d);
    }
  }
  for (int c = 0; c < nc; c++) out[c] = s[c];
}

#undef ACT

}  // namespace minfer::cpu::q
