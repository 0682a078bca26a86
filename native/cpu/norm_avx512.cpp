// AVX-512 row functions for norm.cpp: sums in double lanes, scaling in float with the same
// operation order as the scalar code.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstdint>

namespace minfer::cpu::norm_avx512 {

static inline __mmask16 tail_mask(int64_t rem) { return static_cast<__mmask16>((1u << rem) - 1u); }
static inline __m512d lo_pd(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
static inline __m512d hi_pd(__m512 v) {
  return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

template <typename F>
static inline double reduce(const float* x, int64_t n, F f) {
  __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) f(_mm512_loadu_ps(x + i), s0, s1);
  if (i < n) f(_mm512_maskz_loadu_ps(tail_mask(n - i), x + i), s0, s1, tail_mask(n - i));
  return _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
}

double sum_row(const float* x, int64_t n) {
  return reduce(x, n, [](__m512 v, __m512d& s0, __m512d& s1, __mmask16 = 0xffff) {
    s0 = _mm512_add_pd(s0, lo_pd(v));
    s1 = _mm512_add_pd(s1, hi_pd(v));
  });
}
double sum_sq_row(const float* x, int64_t n) {
  return reduce(x, n, [](__m512 v, __m512d& s0, __m512d& s1, __mmask16 = 0xffff) {
    const __m512d a = lo_pd(v), b = hi_pd(v);
    s0 = _mm512_fmadd_pd(a, a, s0);
    s1 = _mm512_fmadd_pd(b, b, s1);
  });
}
double sum_sq_centered_row(const float* x, float mean, int64_t n) {
  const __m512 vm = _mm512_set1_ps(mean);
  return reduce(x, n, [&](__m512 v, __m512d& s0, __m512d& s1, __mmask16 m = 0xffff) {
    const __m512 d = _mm512_maskz_sub_ps(m, v, vm);
    const __m512d a = lo_pd(d), b = hi_pd(d);
    s0 = _mm512_fmadd_pd(a, a, s0);
    s1 = _mm512_fmadd_pd(b, b, s1);
  });
}
void sub_scale_row(float* o, const float* x, float mean, float s, int64_t n) {
  const __m512 vm = _mm512_set1_ps(mean), vs = _mm512_set1_ps(s);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(o + i, _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm), vs));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(o + i, m, _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vm), vs));
  }
}
void scale_mul_row(float* o, const float* x, float s, const float* w, int64_t n) {
  const __m512 vs = _mm512_set1_ps(s);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(o + i, _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), vs), _mm512_loadu_ps(w + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(
        o + i, m, _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vs), _mm512_maskz_loadu_ps(m, w + i)));
  }
}

}  // namespace minfer::cpu::norm_avx512
#endif
