// Row normalisations: RMS_NORM (x / sqrt(mean(x^2) + eps)), NORM ((x - mean) / sqrt(var + eps)),
// RMS_NORM_MUL (rms_norm(x) * w, w broadcast over rows by ggml's rule with w.ne[0] == x.ne[0]).
// Sums are accumulated in double; the per-row scale is rounded to float once.
#include <cmath>
#include <cstdio>
#include <vector>

#include "../common/contract_norm.h"
#include "kernel.h"

namespace minfer::cpu {

#define NORM_ROW_FUNCS                                                               \
  double sum_row(const float* x, int64_t n);                                         \
  double sum_sq_row(const float* x, int64_t n);                                      \
  double sum_sq_centered_row(const float* x, float mean, int64_t n);                 \
  void sub_scale_row(float* o, const float* x, float mean, float s, int64_t n);      \
  void scale_mul_row(float* o, const float* x, float s, const float* w, int64_t n);

namespace norm_scalar { NORM_ROW_FUNCS }
#if defined(__x86_64__) || defined(_M_X64)
namespace norm_avx2 { NORM_ROW_FUNCS }
namespace norm_avx512 { NORM_ROW_FUNCS }
#define NORM_DISPATCH(level, fn, ...)                                    \
  ((level) == SimdLevel::AVX512 ? norm_avx512::fn(__VA_ARGS__)           \
   : (level) == SimdLevel::AVX2 ? norm_avx2::fn(__VA_ARGS__)             \
                                : norm_scalar::fn(__VA_ARGS__))
#else
#define NORM_DISPATCH(level, fn, ...) norm_scalar::fn(__VA_ARGS__)
#endif

namespace norm_scalar {
double sum_row(const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += x[i];
  return s;
}
double sum_sq_row(const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += static_cast<double>(x[i]) * x[i];
  return s;
}
double sum_sq_centered_row(const float* x, float mean, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) {
    const float d = x[i] - mean;
    s += static_cast<double>(d) * d;
  }
  return s;
}
void sub_scale_row(float* o, const float* x, float mean, float s, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = (x[i] - mean) * s;
}
void scale_mul_row(float* o, const float* x, float s, const float* w, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = (x[i] * s) * w[i];
}
}  // namespace norm_scalar

namespace {

using program::Op;

enum class Kind { Rms, Norm, RmsMul };

inline const float* row_ptr(const Tensor* t, int64_t i1, int64_t i2, int64_t i3) {
  return reinterpret_cast<const float*>(t->data + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3]);
}

template <Kind kKind>
void run_norm(const NodeArgs& args, int, int ith, int nth) {
  const Tensor *a = args.in[0], *o = args.out[0];
  const Tensor* w = kKind == Kind::RmsMul ? args.in[1] : nullptr;
  const float eps = param_f32(args, 0);  // eps is parameter 0 of all three ops
  const int64_t ne0 = a->ne[0], rows = a->ne[1] * a->ne[2] * a->ne[3];
  int64_t r0, r1;
  split_range(rows, ith, nth, &r0, &r1);
  const bool a_c = a->nb[0] == 4, o_c = o->nb[0] == 4, w_c = !w || w->nb[0] == 4;
  std::vector<float> xa, xo, xw;
  if (!a_c) xa.resize(ne0);
  if (!o_c) xo.resize(ne0);
  if (!w_c) xw.resize(ne0);
  for (int64_t r = r0; r < r1; r++) {
    const int64_t i1 = r % a->ne[1], i2 = (r / a->ne[1]) % a->ne[2], i3 = r / (a->ne[1] * a->ne[2]);
    const float* x = row_ptr(a, i1, i2, i3);
    if (!a_c) {
      for (int64_t i = 0; i < ne0; i++)
        xa[i] = *reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(x) + i * a->nb[0]);
      x = xa.data();
    }
    float* y = const_cast<float*>(row_ptr(o, i1, i2, i3));
    float* yw = o_c ? y : xo.data();
    if (kKind == Kind::Norm) {
      const float mean = static_cast<float>(NORM_DISPATCH(args.simd, sum_row, x, ne0) / ne0);
      const double var = NORM_DISPATCH(args.simd, sum_sq_centered_row, x, mean, ne0) / ne0;
      const float s = static_cast<float>(1.0 / std::sqrt(var + eps));
      NORM_DISPATCH(args.simd, sub_scale_row, yw, x, mean, s, ne0);
    } else {
      const double ms = NORM_DISPATCH(args.simd, sum_sq_row, x, ne0) / ne0;
      const float s = static_cast<float>(1.0 / std::sqrt(ms + eps));
      if (kKind == Kind::Rms) {
        NORM_DISPATCH(args.simd, sub_scale_row, yw, x, 0.0f, s, ne0);
      } else {
        const float* wr = row_ptr(w, i1 % w->ne[1], i2 % w->ne[2], i3 % w->ne[3]);
        if (!w_c) {
          for (int64_t i = 0; i < ne0; i++)
            xw[i] = *reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(wr) + i * w->nb[0]);
          wr = xw.data();
        }
        NORM_DISPATCH(args.simd, scale_mul_row, yw, x, s, wr, ne0);
      }
    }
    if (!o_c)
      for (int64_t i = 0; i < ne0; i++) *reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(y) + i * o->nb[0]) = yw[i];
  }
}

const Registrar rms_norm_kernel(Op::RMS_NORM, {contract::check_rms_norm, no_scratch, 1, run_norm<Kind::Rms>});
const Registrar norm_kernel(Op::NORM, {contract::check_norm, no_scratch, 1, run_norm<Kind::Norm>});
const Registrar rms_norm_mul_kernel(Op::RMS_NORM_MUL, {contract::check_rms_norm_mul, no_scratch, 1, run_norm<Kind::RmsMul>});

}  // namespace
}  // namespace minfer::cpu
