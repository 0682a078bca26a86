// AVX2 row functions for elementwise.cpp and softmax.cpp (compiled with -mavx2 -mfma -mf16c).
// Tails use the same vector arithmetic on a zero-padded copy, so results do not depend on where
// a row ends.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "elementwise_erf.h"

namespace minfer::cpu::ew_avx2 {

// exp(x) to about 2 ulp (Cephes-style range reduction and polynomial); 0 below -87.3, inf above 88.72.
static inline __m256 exp_ps(__m256 x) {
  const __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(-87.33654f), _CMP_LT_OQ);
  const __m256 huge = _mm256_cmp_ps(x, _mm256_set1_ps(88.72283f), _CMP_GT_OQ);
  x = _mm256_min_ps(_mm256_set1_ps(88.3762626647949f), x);  // operand order keeps NaN
  x = _mm256_max_ps(_mm256_set1_ps(-87.33654f), x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 r2 = _mm256_mul_ps(r, r);
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.0f));
  // 2^n for n in [-126, 128]: n = 128 overflows to +inf like exp itself would just past 88.72.
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 res = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
  return _mm256_blendv_ps(_mm256_andnot_ps(tiny, res), _mm256_set1_ps(INFINITY), huge);
}

static inline __m256 silu_ps(__m256 x) {
  const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

static inline __m256 gelu_ps(__m256 x) {
  const __m256 x2 = _mm256_mul_ps(x, x);
  const __m256 y = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.7978845608028654f), x),
                                 _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), x2, _mm256_set1_ps(1.0f)));
  const __m256 e = exp_ps(_mm256_mul_ps(_mm256_set1_ps(-2.0f), y));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

// tanh(x) as Cephes' tanhf: x + x^3 P(x^2) below |x| = 0.625, else 1 - 2 / (exp(2|x|) + 1) with
// x's sign (exp overflowing to inf gives exactly ±1); NaN stays NaN.
static inline __m256 tanh_ps(__m256 x) {
  const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
  const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  const __m256 e = exp_ps(_mm256_add_ps(ax, ax));
  const __m256 big = _mm256_or_ps(
      _mm256_sub_ps(_mm256_set1_ps(1.0f), _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f)))),
      sign);
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
  return _mm256_blendv_ps(big, small, _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_LT_OQ));
}

// The exact gelu, x·Φ(x), with Φ(−|x|) = exp(−x²/2)·t·R(t), t = 1/(1 + |x|/4) (elementwise_erf.h).
// x² is split into h + e (FMA) so exp(−h/2)·(1 − e/2) keeps large |x| precise. Φ(−|x|) is 0 from
// |x| = 14 on (it is below 1e-44 there), so huge negative x give −0, not x times a denormal; NaN stays NaN.
static inline __m256 gelu_erf_ps(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  const __m256 u = _mm256_min_ps(ax, _mm256_set1_ps(gelu_erf_poly::kClamp));
  const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(u, _mm256_set1_ps(0.25f), one));
  __m256 r = _mm256_set1_ps(gelu_erf_poly::kR[gelu_erf_poly::kDegree]);
  for (int i = gelu_erf_poly::kDegree - 1; i >= 0; i--) r = _mm256_fmadd_ps(r, t, _mm256_set1_ps(gelu_erf_poly::kR[i]));
  const __m256 h = _mm256_mul_ps(u, u);
  const __m256 e = _mm256_fmsub_ps(u, u, h);
  const __m256 g = exp_ps(_mm256_mul_ps(h, _mm256_set1_ps(-0.5f)));
  __m256 lower = _mm256_mul_ps(_mm256_mul_ps(g, _mm256_mul_ps(r, t)), _mm256_fnmadd_ps(_mm256_set1_ps(0.5f), e, one));
  lower = _mm256_and_ps(lower, _mm256_cmp_ps(ax, _mm256_set1_ps(gelu_erf_poly::kClamp), _CMP_LT_OQ));
  const __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  return _mm256_mul_ps(x, _mm256_blendv_ps(_mm256_sub_ps(one, lower), lower, neg));
}

template <typename F>
static inline void map1(float* o, const float* a, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, f(_mm256_loadu_ps(a + i)));
  if (i < n) {
    alignas(32) float ta[8] = {0}, to[8];
    std::memcpy(ta, a + i, (n - i) * 4);
    _mm256_store_ps(to, f(_mm256_load_ps(ta)));
    std::memcpy(o + i, to, (n - i) * 4);
  }
}

template <typename F>
static inline void map2(float* o, const float* a, const float* b, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, f(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  if (i < n) {
    alignas(32) float ta[8] = {0}, tb[8] = {0}, to[8];
    std::memcpy(ta, a + i, (n - i) * 4);
    std::memcpy(tb, b + i, (n - i) * 4);
    _mm256_store_ps(to, f(_mm256_load_ps(ta), _mm256_load_ps(tb)));
    std::memcpy(o + i, to, (n - i) * 4);
  }
}

void add_row(float* o, const float* a, const float* b, int64_t n) {
  map2(o, a, b, n, [](__m256 x, __m256 y) { return _mm256_add_ps(x, y); });
}
void mul_row(float* o, const float* a, const float* b, int64_t n) {
  map2(o, a, b, n, [](__m256 x, __m256 y) { return _mm256_mul_ps(x, y); });
}
void scale_row(float* o, const float* a, float s, float bias, int64_t n) {
  const __m256 vs = _mm256_set1_ps(s), vb = _mm256_set1_ps(bias);
  map1(o, a, n, [&](__m256 x) { return _mm256_add_ps(_mm256_mul_ps(x, vs), vb); });
}
void silu_row(float* o, const float* a, int64_t n) { map1(o, a, n, silu_ps); }
void gelu_row(float* o, const float* a, int64_t n) { map1(o, a, n, gelu_ps); }
void swiglu_row(float* o, const float* g, const float* u, int64_t n) {
  map2(o, g, u, n, [](__m256 x, __m256 y) { return _mm256_mul_ps(silu_ps(x), y); });
}
void tanh_row(float* o, const float* a, int64_t n) { map1(o, a, n, tanh_ps); }
void geglu_row(float* o, const float* g, const float* u, int64_t n) {
  map2(o, g, u, n, [](__m256 x, __m256 y) { return _mm256_mul_ps(gelu_ps(x), y); });
}
void gelu_erf_row(float* o, const float* a, int64_t n) { map1(o, a, n, gelu_erf_ps); }

float max_row(const float* x, int64_t n) {
  __m256 m = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
  alignas(32) float t[8];
  _mm256_store_ps(t, m);
  float r = t[0];
  for (int k = 1; k < 8; k++) r = t[k] > r ? t[k] : r;
  for (; i < n; i++) r = x[i] > r ? x[i] : r;
  return r;
}

double exp_sub_sum_row(float* o, const float* x, float mx, int64_t n) {
  const __m256 vm = _mm256_set1_ps(mx);
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    _mm256_storeu_ps(o + i, e);
    s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  alignas(32) double t[4];
  _mm256_store_pd(t, _mm256_add_pd(s0, s1));
  double s = (t[0] + t[1]) + (t[2] + t[3]);
  if (i < n) {
    alignas(32) float tx[8], to[8];
    for (int k = 0; k < 8; k++) tx[k] = i + k < n ? x[i + k] : -INFINITY;
    _mm256_store_ps(to, exp_ps(_mm256_sub_ps(_mm256_load_ps(tx), vm)));
    for (int64_t k = 0; k < n - i; k++) {
      o[i + k] = to[k];
      s += to[k];
    }
  }
  return s;
}

}  // namespace minfer::cpu::ew_avx2
#endif
