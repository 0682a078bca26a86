// AVX2 dot products and value accumulation for attention.cpp (keys/values F32, F16, BF16 or Q8_0).
// Tails go through the same vector arithmetic on zero-padded copies (Q8_0 rows, whole blocks,
// have none).
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "../common/program_format.h"

namespace minfer::cpu::attn_avx2 {

using program::DType;

static inline int64_t esize(DType t) { return t == DType::F32 ? 4 : 2; }

// 8 values of dtype t starting at element i of p (which must have 8 readable elements).
static inline __m256 load8(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::Q8_0: {
      // i is a multiple of 8: codes i % 32 .. +7 of block i / 32.
      const uint8_t* blk = static_cast<const uint8_t*>(p) + (i / 32) * 34;
      uint16_t h;
      std::memcpy(&h, blk, 2);
      const __m256 q = _mm256_cvtepi32_ps(
          _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + (i % 32)))));
      return _mm256_mul_ps(q, _mm256_set1_ps(_cvtsh_ss(h)));
    }
    case DType::F16:
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(p) + i)));
    case DType::BF16:
      return _mm256_castsi256_ps(_mm256_slli_epi32(
          _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(p) + i))),
          16));
    default:
      return _mm256_loadu_ps(static_cast<const float*>(p) + i);
  }
}

static inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float dot(const float* q, const void* k, DType kt, int64_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load8(k, kt, i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), load8(k, kt, i + 8), s1);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load8(k, kt, i), s0);
  if (i < n) {
    alignas(32) float tq[8] = {0};
    alignas(32) uint8_t tk[32] = {0};
    std::memcpy(tq, q + i, (n - i) * 4);
    std::memcpy(tk, static_cast<const uint8_t*>(k) + i * esize(kt), (n - i) * esize(kt));
    s1 = _mm256_fmadd_ps(_mm256_load_ps(tq), load8(tk, kt, 0), s1);
  }
  return hsum(_mm256_add_ps(s0, s1));
}

// dot(q, k[r], kt, n) for r = 0..3, bit for bit (the same accumulators and order per row), with
// each q vector loaded once for the four rows.
template <DType kt>
static void dot4_t(const float* q, const void* const* k, int64_t n, float* out) {
  __m256 s0[4], s1[4];
  for (int r = 0; r < 4; r++) s0[r] = s1[r] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 q0 = _mm256_loadu_ps(q + i), q1 = _mm256_loadu_ps(q + i + 8);
    for (int r = 0; r < 4; r++) {
      s0[r] = _mm256_fmadd_ps(q0, load8(k[r], kt, i), s0[r]);
      s1[r] = _mm256_fmadd_ps(q1, load8(k[r], kt, i + 8), s1[r]);
    }
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 q0 = _mm256_loadu_ps(q + i);
    for (int r = 0; r < 4; r++) s0[r] = _mm256_fmadd_ps(q0, load8(k[r], kt, i), s0[r]);
  }
  if (i < n) {
    alignas(32) float tq[8] = {0};
    std::memcpy(tq, q + i, (n - i) * 4);
    const __m256 q0 = _mm256_load_ps(tq);
    for (int r = 0; r < 4; r++) {
      alignas(32) uint8_t tk[32] = {0};
      std::memcpy(tk, static_cast<const uint8_t*>(k[r]) + i * esize(kt), (n - i) * esize(kt));
      s1[r] = _mm256_fmadd_ps(q0, load8(tk, kt, 0), s1[r]);
    }
  }
  for (int r = 0; r < 4; r++) out[r] = hsum(_mm256_add_ps(s0[r], s1[r]));
}

void dot4(const float* q, const void* const* k, DType kt, int64_t n, float* out) {
  switch (kt) {
    case DType::F16: return dot4_t<DType::F16>(q, k, n, out);
    case DType::BF16: return dot4_t<DType::BF16>(q, k, n, out);
    case DType::Q8_0: return dot4_t<DType::Q8_0>(q, k, n, out);
    default: return dot4_t<DType::F32>(q, k, n, out);
  }
}

// axpby(acc, 1, v[r], vt, b[r], n) for r = 0..3 in order, bit for bit, loading and storing acc once.
template <DType vt>
static void axpy4_t(float* acc, const void* const* v, const float* b, int64_t n) {
  const __m256 b0 = _mm256_set1_ps(b[0]), b1 = _mm256_set1_ps(b[1]), b2 = _mm256_set1_ps(b[2]),
               b3 = _mm256_set1_ps(b[3]);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 y = _mm256_loadu_ps(acc + i);
    y = _mm256_fmadd_ps(load8(v[0], vt, i), b0, y);
    y = _mm256_fmadd_ps(load8(v[1], vt, i), b1, y);
    y = _mm256_fmadd_ps(load8(v[2], vt, i), b2, y);
    y = _mm256_fmadd_ps(load8(v[3], vt, i), b3, y);
    _mm256_storeu_ps(acc + i, y);
  }
  if (i < n) {
    alignas(32) float ta[8] = {0};
    std::memcpy(ta, acc + i, (n - i) * 4);
    __m256 y = _mm256_load_ps(ta);
    const __m256 bs[4] = {b0, b1, b2, b3};
    for (int r = 0; r < 4; r++) {
      alignas(32) uint8_t tv[32] = {0};
      std::memcpy(tv, static_cast<const uint8_t*>(v[r]) + i * esize(vt), (n - i) * esize(vt));
      y = _mm256_fmadd_ps(load8(tv, vt, 0), bs[r], y);
    }
    _mm256_store_ps(ta, y);
    std::memcpy(acc + i, ta, (n - i) * 4);
  }
}

void axpy4(float* acc, const void* const* v, DType vt, const float* b, int64_t n) {
  switch (vt) {
    case DType::F16: return axpy4_t<DType::F16>(acc, v, b, n);
    case DType::BF16: return axpy4_t<DType::BF16>(acc, v, b, n);
    case DType::Q8_0: return axpy4_t<DType::Q8_0>(acc, v, b, n);
    default: return axpy4_t<DType::F32>(acc, v, b, n);
  }
}

void axpby(float* acc, float a, const void* v, DType vt, float b, int64_t n) {
  const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 y = _mm256_loadu_ps(acc + i);
    _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(load8(v, vt, i), vb, a == 1.0f ? y : _mm256_mul_ps(y, va)));
  }
  if (i < n) {
    alignas(32) float ta[8] = {0};
    alignas(32) uint8_t tv[32] = {0};
    std::memcpy(ta, acc + i, (n - i) * 4);
    std::memcpy(tv, static_cast<const uint8_t*>(v) + i * esize(vt), (n - i) * esize(vt));
    const __m256 y = _mm256_load_ps(ta);
    _mm256_store_ps(ta, _mm256_fmadd_ps(load8(tv, vt, 0), vb, a == 1.0f ? y : _mm256_mul_ps(y, va)));
    std::memcpy(acc + i, ta, (n - i) * 4);
  }
}

}  // namespace minfer::cpu::attn_avx2
#endif
