// The polynomial behind the SIMD GELU_ERF row functions (elementwise_avx2.cpp,
// elementwise_avx512.cpp); the scalar row function calls std::erfc in double instead.
//
// gelu_erf(x) = x·Φ(x), Φ the standard normal CDF. For u = |x|:
//   Φ(−u) = exp(−u²/2) · t · R(t),  t = 1 / (1 + u/4),
// R a degree-9 polynomial in t (coefficients below, lowest first), fitted by Chebyshev-weighted least
// squares on the relative error against erfc computed to 40 digits (mpmath) over u in [0, 14];
// its own relative error is below 9e-9. Φ(x) = 1 − Φ(−x) for x ≥ 0; Φ(−u) is taken as 0 from
// u = 14 on (it is below 1e-44 there). In float, with u² carried with its rounding error, the
// result is within 4 ulp of the exact value over [−16, 16] (ops_elementwise_test measures it).
#pragma once

namespace minfer::cpu::gelu_erf_poly {

constexpr float kClamp = 14.0f;
constexpr int kDegree = 9;
constexpr float kR[kDegree + 1] = {
    9.974689782e-02f, 9.951195121e-02f, 9.535507113e-02f,  7.274776697e-02f, 8.449400961e-02f,
    1.674013212e-02f, 2.359231561e-02f, 5.528492853e-02f, -6.433728337e-02f, 1.686420850e-02f,
};

}  // namespace minfer::cpu::gelu_erf_poly
