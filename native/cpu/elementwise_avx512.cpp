// AVX-512 row functions for elementwise.cpp and softmax.cpp (compiled with -mavx512f -mavx512bw
// -mavx512vl -mavx512dq -mfma -mf16c). Tails use masked loads/stores, so every element goes through
// the same vector arithmetic.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "elementwise_erf.h"

namespace minfer::cpu::ew_avx512 {

// exp(x) to about 2 ulp: n = round(x / ln2), r = x - n ln2 (two-part constant), a degree-6
// polynomial for exp(r), scaled by 2^n with vscalefps (which underflows to 0 for very negative x and overflows to inf past 88.72).
static inline __m512 exp_ps(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(100.0f), x);  // operand order keeps NaN; 2^n overflows to inf past 88.72
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 r2 = _mm512_mul_ps(r, r);
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, r2, r), _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(y, n);
}

static inline __m512 silu_ps(__m512 x) {
  const __m512 e = exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), x));
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

static inline __m512 gelu_ps(__m512 x) {
  const __m512 x2 = _mm512_mul_ps(x, x);
  const __m512 y = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.7978845608028654f), x),
                                 _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), x2, _mm512_set1_ps(1.0f)));
  const __m512 e = exp_ps(_mm512_mul_ps(_mm512_set1_ps(-2.0f), y));
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

// tanh(x) as Cephes' tanhf: x + x^3 P(x^2) below |x| = 0.625, else 1 - 2 / (exp(2|x|) + 1) with
// x's sign (exp overflowing to inf gives exactly ±1); NaN stays NaN.
static inline __m512 tanh_ps(__m512 x) {
  const __m512 ax = _mm512_abs_ps(x);
  const __m512 e = exp_ps(_mm512_add_ps(ax, ax));
  const __m512 mag =
      _mm512_sub_ps(_mm512_set1_ps(1.0f), _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
  const __m512 big = _mm512_castsi512_ps(_mm512_or_si512(
      _mm512_castps_si512(mag), _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN))));
  const __m512 z = _mm512_mul_ps(x, x);
  __m512 p = _mm512_set1_ps(-5.70498872745e-3f);
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(2.06390887954e-2f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-5.37397155531e-2f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.33314422036e-1f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-3.33332819422e-1f));
  const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), x, x);
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.625f), _CMP_LT_OQ), big, small);
}

// The exact gelu, x·Φ(x), with Φ(−|x|) = exp(−x²/2)·t·R(t), t = 1/(1 + |x|/4) (elementwise_erf.h).
// x² is split into h + e (FMA) so exp(−h/2)·(1 − e/2) keeps large |x| precise. Φ(−|x|) is 0 from
// |x| = 14 on (it is below 1e-44 there), so huge negative x give −0, not x times a denormal; NaN stays NaN.
static inline __m512 gelu_erf_ps(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 ax = _mm512_abs_ps(x);
  const __m512 u = _mm512_min_ps(ax, _mm512_set1_ps(gelu_erf_poly::kClamp));
  const __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(u, _mm512_set1_ps(0.25f), one));
  __m512 r = _mm512_set1_ps(gelu_erf_poly::kR[gelu_erf_poly::kDegree]);
  for (int i = gelu_erf_poly::kDegree - 1; i >= 0; i--) r = _mm512_fmadd_ps(r, t, _mm512_set1_ps(gelu_erf_poly::kR[i]));
  const __m512 h = _mm512_mul_ps(u, u);
  const __m512 e = _mm512_fmsub_ps(u, u, h);
  const __m512 g = exp_ps(_mm512_mul_ps(h, _mm512_set1_ps(-0.5f)));
  const __m512 lower = _mm512_maskz_mov_ps(
      _mm512_cmp_ps_mask(ax, _mm512_set1_ps(gelu_erf_poly::kClamp), _CMP_LT_OQ),
      _mm512_mul_ps(_mm512_mul_ps(g, _mm512_mul_ps(r, t)), _mm512_fnmadd_ps(_mm512_set1_ps(0.5f), e, one)));
  const __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  return _mm512_mul_ps(x, _mm512_mask_blend_ps(neg, _mm512_sub_ps(one, lower), lower));
}

static inline __mmask16 tail_mask(int64_t rem) { return static_cast<__mmask16>((1u << rem) - 1u); }

template <typename F>
static inline void map1(float* o, const float* a, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(o + i, f(_mm512_loadu_ps(a + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(o + i, m, f(_mm512_maskz_loadu_ps(m, a + i)));
  }
}

template <typename F>
static inline void map2(float* o, const float* a, const float* b, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(o + i, f(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(o + i, m, f(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

void add_row(float* o, const float* a, const float* b, int64_t n) {
  map2(o, a, b, n, [](__m512 x, __m512 y) { return _mm512_add_ps(x, y); });
}
void mul_row(float* o, const float* a, const float* b, int64_t n) {
  map2(o, a, b, n, [](__m512 x, __m512 y) { return _mm512_mul_ps(x, y); });
}
void scale_row(float* o, const float* a, float s, float bias, int64_t n) {
  const __m512 vs = _mm512_set1_ps(s), vb = _mm512_set1_ps(bias);
  // Not fused, so the result rounds like the scalar a*s + bias.
  map1(o, a, n, [&](__m512 x) { return _mm512_add_ps(_mm512_mul_ps(x, vs), vb); });
}
void silu_row(float* o, const float* a, int64_t n) { map1(o, a, n, silu_ps); }
void gelu_row(float* o, const float* a, int64_t n) { map1(o, a, n, gelu_ps); }
void swiglu_row(float* o, const float* g, const float* u, int64_t n) {
  map2(o, g, u, n, [](__m512 x, __m512 y) { return _mm512_mul_ps(silu_ps(x), y); });
}
void tanh_row(float* o, const float* a, int64_t n) { map1(o, a, n, tanh_ps); }
void geglu_row(float* o, const float* g, const float* u, int64_t n) {
  map2(o, g, u, n, [](__m512 x, __m512 y) { return _mm512_mul_ps(gelu_ps(x), y); });
}
void gelu_erf_row(float* o, const float* a, int64_t n) { map1(o, a, n, gelu_erf_ps); }

float max_row(const float* x, int64_t n) {
  __m512 m = _mm512_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(x + i));
  if (i < n) m = _mm512_mask_max_ps(m, tail_mask(n - i), m, _mm512_maskz_loadu_ps(tail_mask(n - i), x + i));
  return _mm512_reduce_max_ps(m);
}

double exp_sub_sum_row(float* o, const float* x, float mx, int64_t n) {
  const __m512 vm = _mm512_set1_ps(mx);
  __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 e = exp_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
    _mm512_storeu_ps(o + i, e);
    s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    __m512 e = exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vm));
    e = _mm512_maskz_mov_ps(m, e);
    _mm512_mask_storeu_ps(o + i, m, e);
    s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
  }
  return _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
}

}  // namespace minfer::cpu::ew_avx512
#endif
