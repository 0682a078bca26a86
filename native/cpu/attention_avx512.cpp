// AVX-512 dot products and value accumulation for attention.cpp (keys/values F32, F16, BF16 or
// Q8_0). Tails use masked loads, so every cell goes through the same arithmetic whatever the batch.
// Q8_0 rows are whole blocks (n % 32 == 0), read 16 codes (half a block) at a time.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "../common/program_format.h"

namespace minfer::cpu::attn_avx512 {

using program::DType;

static inline __mmask16 tail_mask(int64_t rem) { return static_cast<__mmask16>((1u << rem) - 1u); }

// 16 values of dtype t at p + i, as f32; lanes outside `m` are 0.
static inline __m512 load16(const void* p, DType t, int64_t i, __mmask16 m) {
  switch (t) {
    case DType::Q8_0: {
      // i is a multiple of 16: half (i / 16) % 2 of block i / 32.
      const uint8_t* blk = static_cast<const uint8_t*>(p) + (i / 32) * 34;
      uint16_t h;
      std::memcpy(&h, blk, 2);
      const __m512 q = _mm512_cvtepi32_ps(
          _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, blk + 2 + (i % 32))));
      return _mm512_mul_ps(q, _mm512_set1_ps(_cvtsh_ss(h)));
    }
    case DType::F16:
      return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(p) + i));
    case DType::BF16:
      return _mm512_castsi512_ps(
          _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(p) + i)), 16));
    default:
      return _mm512_maskz_loadu_ps(m, static_cast<const float*>(p) + i);
  }
}

float dot(const float* q, const void* k, DType kt, int64_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), load16(k, kt, i, 0xffff), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 16), load16(k, kt, i + 16, 0xffff), s1);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask(n - i);
    s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + i), load16(k, kt, i, m), s0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

// dot() of q with four rows at once (independent chains; each row's arithmetic is dot()'s).
template <DType kt>
static void dot4_t(const float* q, const void* const* k, int64_t n, float* out) {
  __m512 s0[4], s1[4];
  for (int r = 0; r < 4; r++) s0[r] = s1[r] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 q0 = _mm512_loadu_ps(q + i), q1 = _mm512_loadu_ps(q + i + 16);
    for (int r = 0; r < 4; r++) {
      s0[r] = _mm512_fmadd_ps(q0, load16(k[r], kt, i, 0xffff), s0[r]);
      s1[r] = _mm512_fmadd_ps(q1, load16(k[r], kt, i + 16, 0xffff), s1[r]);
    }
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask(n - i);
    const __m512 q0 = _mm512_maskz_loadu_ps(m, q + i);
    for (int r = 0; r < 4; r++) s0[r] = _mm512_fmadd_ps(q0, load16(k[r], kt, i, m), s0[r]);
  }
  for (int r = 0; r < 4; r++) out[r] = _mm512_reduce_add_ps(_mm512_add_ps(s0[r], s1[r]));
}

void dot4(const float* q, const void* const* k, DType kt, int64_t n, float* out) {
  switch (kt) {
    case DType::F16: return dot4_t<DType::F16>(q, k, n, out);
    case DType::BF16: return dot4_t<DType::BF16>(q, k, n, out);
    case DType::Q8_0: return dot4_t<DType::Q8_0>(q, k, n, out);
    default: return dot4_t<DType::F32>(q, k, n, out);
  }
}

// axpby(acc, 1, v[r], vt, b[r], n) for r = 0..3 in order, loading and storing acc once.
template <DType vt>
static void axpy4_t(float* acc, const void* const* v, const float* b, int64_t n) {
  const __m512 b0 = _mm512_set1_ps(b[0]), b1 = _mm512_set1_ps(b[1]), b2 = _mm512_set1_ps(b[2]),
               b3 = _mm512_set1_ps(b[3]);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask(n - i);
    __m512 y = _mm512_maskz_loadu_ps(m, acc + i);
    y = _mm512_fmadd_ps(load16(v[0], vt, i, m), b0, y);
    y = _mm512_fmadd_ps(load16(v[1], vt, i, m), b1, y);
    y = _mm512_fmadd_ps(load16(v[2], vt, i, m), b2, y);
    y = _mm512_fmadd_ps(load16(v[3], vt, i, m), b3, y);
    _mm512_mask_storeu_ps(acc + i, m, y);
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
  const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask(n - i);
    const __m512 x = load16(v, vt, i, m);
    const __m512 y = _mm512_maskz_loadu_ps(m, acc + i);
    _mm512_mask_storeu_ps(acc + i, m, _mm512_fmadd_ps(x, vb, a == 1.0f ? y : _mm512_mul_ps(y, va)));
  }
}

}  // namespace minfer::cpu::attn_avx512
#endif
