// Several candidate searches per instruction for the weight quantizers: GCC/Clang vector
// extensions. Each lane does exactly the scalar operations of one candidate, in the same order,
// so the results are bit for bit those of the scalar code; only independent candidates share an
// instruction. Vectors of 2 doubles in the baseline build (SSE2, NEON), of 4 in the AVX2 one.
#pragma once
#include "quantize_weights_js.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"  // 32-byte vectors between inline helpers (AVX2 file only)
#endif

namespace minfer::cpu::qw {

typedef double f64x2 __attribute__((vector_size(16)));
typedef double f64x4 __attribute__((vector_size(32)));

/** The integer vector a double vector converts through (the target converts those lanes natively). */
template <class V>
struct ConvOf;
#if defined(__aarch64__)
template <>
struct ConvOf<f64x2> {
  typedef int64_t type __attribute__((vector_size(16)));
};
#else
template <>
struct ConvOf<f64x2> {
  typedef int32_t type __attribute__((vector_size(8)));
};
#endif
template <>
struct ConvOf<f64x4> {
  typedef int32_t type __attribute__((vector_size(16)));
};

template <class V>
constexpr int kLanes = sizeof(V) / sizeof(double);

template <class V>
inline V splat(double v) {
  V r;
  for (int i = 0; i < kLanes<V>; i++) r[i] = v;
  return r;
}

/** Lane-wise m ? a : b, m from a comparison (all bits set or clear per lane). */
template <class V, class M>
inline V select(M m, V a, V b) {
  return reinterpret_cast<V>((m & reinterpret_cast<M>(a)) | (~m & reinterpret_cast<M>(b)));
}

/** Lane-wise a < b ? a : b and a > b ? a : b (b when either is NaN). */
template <class V>
inline V vmin(V a, V b) {
  return select(a < b, a, b);
}
template <class V>
inline V vmax(V a, V b) {
  return select(a > b, a, b);
}

/** Lane-wise Math.trunc for lanes in [0, 2^31): the floor of a non-negative value. */
template <class V>
inline V vtrunc(V a) {
  return __builtin_convertvector(__builtin_convertvector(a, typename ConvOf<V>::type), V);
}
#if defined(__AVX__)
/** With AVX, one rounding instruction instead of two conversions (same values in that range). */
template <>
inline f64x4 vtrunc(f64x4 a) {
  return __builtin_ia32_roundpd256(a, 3);  // _MM_FROUND_TO_ZERO
}
#endif

/** Lanes c0 … c0 + lanes − 1 of values[0..count), `pad` beyond count. */
template <class V>
inline V load_lanes(const double* values, int c0, int count, double pad) {
  V r;
  for (int i = 0; i < kLanes<V>; i++) r[i] = c0 + i < count ? values[c0 + i] : pad;
  return r;
}

}  // namespace minfer::cpu::qw
