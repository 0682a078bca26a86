// AVX2 row functions for norm.cpp: sums in double lanes, scaling in float with the same
// operation order as the scalar code.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstdint>

namespace minfer::cpu::norm_avx2 {

static inline double hsum(__m256d a, __m256d b) {
  alignas(32) double t[4];
  _mm256_store_pd(t, _mm256_add_pd(a, b));
  return (t[0] + t[1]) + (t[2] + t[3]);
}

double sum_row(const float* x, int64_t n) {
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  }
  double s = hsum(s0, s1);
  for (; i < n; i++) s += x[i];
  return s;
}
double sum_sq_centered_row(const float* x, float mean, int64_t n) {
  const __m256 vm = _mm256_set1_ps(mean);
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm);
    const __m256d a = _mm256_cvtps_pd(_mm256_castps256_ps128(v)), b = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    s0 = _mm256_fmadd_pd(a, a, s0);
    s1 = _mm256_fmadd_pd(b, b, s1);
  }
  double s = hsum(s0, s1);
  for (; i < n; i++) {
    const float d = x[i] - mean;
    s += static_cast<double>(d) * d;
  }
  return s;
}
double sum_sq_row(const float* x, int64_t n) { return sum_sq_centered_row(x, 0.0f, n); }
void sub_scale_row(float* o, const float* x, float mean, float s, int64_t n) {
  const __m256 vm = _mm256_set1_ps(mean), vs = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), vs));
  for (; i < n; i++) o[i] = (x[i] - mean) * s;
}
void scale_mul_row(float* o, const float* x, float s, const float* w, int64_t n) {
  const __m256 vs = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs), _mm256_loadu_ps(w + i)));
  for (; i < n; i++) o[i] = (x[i] * s) * w[i];
}

}  // namespace minfer::cpu::norm_avx2
#endif
