// Element-wise kernels: ADD, MUL (b broadcast over a by ggml's rule: b.ne[i] divides a.ne[i]),
// SCALE (a*scale + bias), SILU, GELU (tanh approximation), TANH, SWIGLU (silu(gate) * up),
// GEGLU (gelu(gate) * up), GELU_ERF (the exact gelu, 0.5 a (1 + erf(a / sqrt 2))).
// All F32. Rows are split across threads; a row whose operands are contiguous goes through the
// row functions below (scalar here, AVX2/AVX-512 in elementwise_avx2.cpp / elementwise_avx512.cpp),
// anything else through a strided element loop.
#include <cmath>
#include <cstdio>

#include "../common/contract_elementwise.h"
#include "kernel.h"

namespace minfer::cpu {

// Row functions shared with softmax.cpp (exp_sub_sum_row) and defined per instruction set.
namespace ew_scalar {
void add_row(float* o, const float* a, const float* b, int64_t n);
void mul_row(float* o, const float* a, const float* b, int64_t n);
void scale_row(float* o, const float* a, float s, float bias, int64_t n);
void silu_row(float* o, const float* a, int64_t n);
void gelu_row(float* o, const float* a, int64_t n);
void swiglu_row(float* o, const float* g, const float* u, int64_t n);
void tanh_row(float* o, const float* a, int64_t n);
void geglu_row(float* o, const float* g, const float* u, int64_t n);
void gelu_erf_row(float* o, const float* a, int64_t n);
float max_row(const float* x, int64_t n);
double exp_sub_sum_row(float* o, const float* x, float m, int64_t n);
}  // namespace ew_scalar
#if defined(__x86_64__) || defined(_M_X64)
namespace ew_avx2 {
void add_row(float* o, const float* a, const float* b, int64_t n);
void mul_row(float* o, const float* a, const float* b, int64_t n);
void scale_row(float* o, const float* a, float s, float bias, int64_t n);
void silu_row(float* o, const float* a, int64_t n);
void gelu_row(float* o, const float* a, int64_t n);
void swiglu_row(float* o, const float* g, const float* u, int64_t n);
void tanh_row(float* o, const float* a, int64_t n);
void geglu_row(float* o, const float* g, const float* u, int64_t n);
void gelu_erf_row(float* o, const float* a, int64_t n);
float max_row(const float* x, int64_t n);
double exp_sub_sum_row(float* o, const float* x, float m, int64_t n);
}  // namespace ew_avx2
namespace ew_avx512 {
void add_row(float* o, const float* a, const float* b, int64_t n);
void mul_row(float* o, const float* a, const float* b, int64_t n);
void scale_row(float* o, const float* a, float s, float bias, int64_t n);
void silu_row(float* o, const float* a, int64_t n);
void gelu_row(float* o, const float* a, int64_t n);
void swiglu_row(float* o, const float* g, const float* u, int64_t n);
void tanh_row(float* o, const float* a, int64_t n);
void geglu_row(float* o, const float* g, const float* u, int64_t n);
void gelu_erf_row(float* o, const float* a, int64_t n);
float max_row(const float* x, int64_t n);
double exp_sub_sum_row(float* o, const float* x, float m, int64_t n);
}  // namespace ew_avx512
#define EW_DISPATCH(level, fn, ...)                                        \
  ((level) == SimdLevel::AVX512 ? ew_avx512::fn(__VA_ARGS__)               \
   : (level) == SimdLevel::AVX2 ? ew_avx2::fn(__VA_ARGS__)                 \
                                : ew_scalar::fn(__VA_ARGS__))
#else
#define EW_DISPATCH(level, fn, ...) ew_scalar::fn(__VA_ARGS__)
#endif

namespace ew_scalar {
static inline float silu1(float x) { return x / (1.0f + std::exp(-x)); }
// gelu(x) = 0.5 x (1 + tanh(y)) = x * sigmoid(2y), y = sqrt(2/pi) (x + 0.044715 x^3).
static inline float gelu1(float x) {
  const float y = 0.7978845608028654f * x * (1.0f + 0.044715f * x * x);
  return x / (1.0f + std::exp(-2.0f * y));
}
void add_row(float* o, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = a[i] + b[i];
}
void mul_row(float* o, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = a[i] * b[i];
}
void scale_row(float* o, const float* a, float s, float bias, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = a[i] * s + bias;
}
void silu_row(float* o, const float* a, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = silu1(a[i]);
}
void gelu_row(float* o, const float* a, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = gelu1(a[i]);
}
void swiglu_row(float* o, const float* g, const float* u, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = silu1(g[i]) * u[i];
}
void tanh_row(float* o, const float* a, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = std::tanh(a[i]);
}
void geglu_row(float* o, const float* g, const float* u, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = gelu1(g[i]) * u[i];
}
// x·Φ(x) with Φ(x) = erfc(−x/√2)/2: erfc keeps the negative tail's relative precision, which
// 1 + erf(x/√2) would cancel away; in double, the only rounding that shows is the last, to float.
void gelu_erf_row(float* o, const float* a, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    const double x = a[i];
    o[i] = static_cast<float>(0.5 * x * std::erfc(-x * 0.70710678118654752440));
  }
}
float max_row(const float* x, int64_t n) {
  float m = -INFINITY;
  for (int64_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
  return m;
}
double exp_sub_sum_row(float* o, const float* x, float m, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) {
    const float e = std::exp(x[i] - m);
    o[i] = e;
    s += e;
  }
  return s;
}
}  // namespace ew_scalar

namespace {

using program::DType;
using program::Op;

inline float* f32_at(const Tensor* t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return reinterpret_cast<float*>(t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3]);
}

inline int64_t n_rows(const Tensor* t) { return t->ne[1] * t->ne[2] * t->ne[3]; }

inline void row_coords(const Tensor* t, int64_t r, int64_t* i1, int64_t* i2, int64_t* i3) {
  *i1 = r % t->ne[1];
  r /= t->ne[1];
  *i2 = r % t->ne[2];
  *i3 = r / t->ne[2];
}

// ---- ADD / MUL ----

template <bool kMul>
void run_binary(const NodeArgs& args, int, int ith, int nth) {
  const Tensor *a = args.in[0], *b = args.in[1], *o = args.out[0];
  int64_t r0, r1;
  split_range(n_rows(a), ith, nth, &r0, &r1);
  const int64_t ne0 = a->ne[0];
  const bool a_c = a->nb[0] == 4, o_c = o->nb[0] == 4, b_c = b->nb[0] == 4;
  for (int64_t r = r0; r < r1; r++) {
    int64_t i1, i2, i3;
    row_coords(a, r, &i1, &i2, &i3);
    const float* ar = f32_at(a, 0, i1, i2, i3);
    const float* br = f32_at(b, 0, i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3]);
    float* orow = f32_at(o, 0, i1, i2, i3);
    if (a_c && o_c && b->ne[0] == ne0 && b_c) {
      if (kMul) EW_DISPATCH(args.simd, mul_row, orow, ar, br, ne0);
      else EW_DISPATCH(args.simd, add_row, orow, ar, br, ne0);
    } else if (a_c && o_c && b->ne[0] == 1) {
      if (kMul) EW_DISPATCH(args.simd, scale_row, orow, ar, br[0], 0.0f, ne0);
      else EW_DISPATCH(args.simd, scale_row, orow, ar, 1.0f, br[0], ne0);
    } else {
      const int64_t bn = b->ne[0];
      for (int64_t i = 0; i < ne0; i++) {
        const float x = *reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(ar) + i * a->nb[0]);
        const float y = *reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(br) + (i % bn) * b->nb[0]);
        *reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(orow) + i * o->nb[0]) = kMul ? x * y : x + y;
      }
    }
  }
}

// ---- unary: SCALE, SILU, GELU, TANH, GELU_ERF ----

enum class Unary { Scale, Silu, Gelu, Tanh, GeluErf };

template <Unary kOp>
void run_unary(const NodeArgs& args, int, int ith, int nth) {
  const Tensor *a = args.in[0], *o = args.out[0];
  float s = 1, bias = 0;
  if (kOp == Unary::Scale) {
    s = param_f32(args, program::param::SCALE::scale);
    bias = param_f32(args, program::param::SCALE::bias);
  }
  int64_t r0, r1;
  split_range(n_rows(a), ith, nth, &r0, &r1);
  const int64_t ne0 = a->ne[0];
  const bool contiguous = a->nb[0] == 4 && o->nb[0] == 4;
  for (int64_t r = r0; r < r1; r++) {
    int64_t i1, i2, i3;
    row_coords(a, r, &i1, &i2, &i3);
    const float* ar = f32_at(a, 0, i1, i2, i3);
    float* orow = f32_at(o, 0, i1, i2, i3);
    if (contiguous) {
      if (kOp == Unary::Scale) EW_DISPATCH(args.simd, scale_row, orow, ar, s, bias, ne0);
      else if (kOp == Unary::Silu) EW_DISPATCH(args.simd, silu_row, orow, ar, ne0);
      else if (kOp == Unary::Gelu) EW_DISPATCH(args.simd, gelu_row, orow, ar, ne0);
      else if (kOp == Unary::Tanh) EW_DISPATCH(args.simd, tanh_row, orow, ar, ne0);
      else EW_DISPATCH(args.simd, gelu_erf_row, orow, ar, ne0);
    } else {
      for (int64_t i = 0; i < ne0; i++) {
        const float x = *f32_at(a, i, i1, i2, i3);
        float y;
        if (kOp == Unary::Scale) ew_scalar::scale_row(&y, &x, s, bias, 1);
        else if (kOp == Unary::Silu) ew_scalar::silu_row(&y, &x, 1);
        else if (kOp == Unary::Gelu) ew_scalar::gelu_row(&y, &x, 1);
        else if (kOp == Unary::Tanh) ew_scalar::tanh_row(&y, &x, 1);
        else ew_scalar::gelu_erf_row(&y, &x, 1);
        *f32_at(o, i, i1, i2, i3) = y;
      }
    }
  }
}

// ---- SWIGLU, GEGLU: act(gate) * up ----

template <bool kGelu>
void run_gated(const NodeArgs& args, int, int ith, int nth) {
  const Tensor *g = args.in[0], *u = args.in[1], *o = args.out[0];
  int64_t r0, r1;
  split_range(n_rows(g), ith, nth, &r0, &r1);
  const int64_t ne0 = g->ne[0];
  const bool contiguous = g->nb[0] == 4 && u->nb[0] == 4 && o->nb[0] == 4;
  for (int64_t r = r0; r < r1; r++) {
    int64_t i1, i2, i3;
    row_coords(g, r, &i1, &i2, &i3);
    if (contiguous) {
      float* orow = f32_at(o, 0, i1, i2, i3);
      const float *grow = f32_at(g, 0, i1, i2, i3), *urow = f32_at(u, 0, i1, i2, i3);
      if (kGelu) EW_DISPATCH(args.simd, geglu_row, orow, grow, urow, ne0);
      else EW_DISPATCH(args.simd, swiglu_row, orow, grow, urow, ne0);
    } else {
      for (int64_t i = 0; i < ne0; i++) {
        float* y = f32_at(o, i, i1, i2, i3);
        const float *x = f32_at(g, i, i1, i2, i3), *up = f32_at(u, i, i1, i2, i3);
        if (kGelu) ew_scalar::geglu_row(y, x, up, 1);
        else ew_scalar::swiglu_row(y, x, up, 1);
      }
    }
  }
}

const Registrar add_kernel(Op::ADD, {contract::check_add, no_scratch, 1, run_binary<false>});
const Registrar mul_kernel(Op::MUL, {contract::check_mul, no_scratch, 1, run_binary<true>});
const Registrar scale_kernel(Op::SCALE, {contract::check_scale, no_scratch, 1, run_unary<Unary::Scale>});
const Registrar silu_kernel(Op::SILU, {contract::check_silu, no_scratch, 1, run_unary<Unary::Silu>});
const Registrar gelu_kernel(Op::GELU, {contract::check_gelu, no_scratch, 1, run_unary<Unary::Gelu>});
const Registrar tanh_kernel(Op::TANH, {contract::check_tanh, no_scratch, 1, run_unary<Unary::Tanh>});
const Registrar gelu_erf_kernel(Op::GELU_ERF, {contract::check_gelu_erf, no_scratch, 1, run_unary<Unary::GeluErf>});
const Registrar swiglu_kernel(Op::SWIGLU, {contract::check_gated<false>, no_scratch, 1, run_gated<false>});
const Registrar geglu_kernel(Op::GEGLU, {contract::check_gated<true>, no_scratch, 1, run_gated<true>});

}  // namespace
}  // namespace minfer::cpu
