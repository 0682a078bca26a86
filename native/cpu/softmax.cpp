// SOFTMAX: per row of a (F32), out = softmax(a*scale + slope*mask) with an optional mask
// (F32 or F16 [ne0, >= ne1 rows], broadcast over a's dims 2 and 3) and ALiBi slopes per head
// (a's dim 2) when maxBias > 0, as ggml defines them. The sum is accumulated in double and the
// result normalised; a row whose every entry is -inf gives zeros.
#include <cmath>
#include <cstdio>
#include <vector>

#include "../common/contract_softmax.h"
#include "../common/fp16.h"
#include "kernel.h"

namespace minfer::cpu {

namespace ew_scalar {
void scale_row(float* o, const float* a, float s, float bias, int64_t n);
float max_row(const float* x, int64_t n);
double exp_sub_sum_row(float* o, const float* x, float m, int64_t n);
}  // namespace ew_scalar
#if defined(__x86_64__) || defined(_M_X64)
namespace ew_avx2 {
void scale_row(float* o, const float* a, float s, float bias, int64_t n);
float max_row(const float* x, int64_t n);
double exp_sub_sum_row(float* o, const float* x, float m, int64_t n);
}  // namespace ew_avx2
namespace ew_avx512 {
void scale_row(float* o, const float* a, float s, float bias, int64_t n);
float max_row(const float* x, int64_t n);
double exp_sub_sum_row(float* o, const float* x, float m, int64_t n);
}  // namespace ew_avx512
#define SM_DISPATCH(level, fn, ...)                                      \
  ((level) == SimdLevel::AVX512 ? ew_avx512::fn(__VA_ARGS__)             \
   : (level) == SimdLevel::AVX2 ? ew_avx2::fn(__VA_ARGS__)               \
                                : ew_scalar::fn(__VA_ARGS__))
#else
#define SM_DISPATCH(level, fn, ...) ew_scalar::fn(__VA_ARGS__)
#endif

namespace {

using program::DType;
using program::Op;
namespace P = program::param::SOFTMAX;

void run_softmax(const NodeArgs& args, int, int ith, int nth) {
  const Tensor *a = args.in[0], *o = args.out[0];
  const Tensor* mask = args.n_inputs == 2 ? args.in[1] : nullptr;
  const float scale = param_f32(args, P::scale);
  const float max_bias = param_f32(args, P::maxBias);
  const int64_t ne0 = a->ne[0], n1 = a->ne[1], n2 = a->ne[2], n3 = a->ne[3];

  // ALiBi: head h gets m0^(h+1) for the first 2^floor(log2(nHead)) heads, then m1^(2(h-n)+1).
  const uint32_t n_head = static_cast<uint32_t>(n2);
  const uint32_t n_head_log2 = n_head ? 1u << static_cast<uint32_t>(std::floor(std::log2(static_cast<double>(n_head)))) : 1;
  const float m0 = std::pow(2.0f, -max_bias / n_head_log2);
  const float m1 = std::pow(2.0f, -(max_bias / 2.0f) / n_head_log2);

  std::vector<float> w(ne0), e(ne0);
  int64_t r0, r1;
  split_range(n1 * n2 * n3, ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++) {
    const int64_t i1 = r % n1, i2 = (r / n1) % n2, i3 = r / (n1 * n2);
    const float slope = max_bias > 0.0f
                            ? (i2 < n_head_log2 ? std::pow(m0, static_cast<float>(i2 + 1))
                                                : std::pow(m1, static_cast<float>(2 * (i2 - n_head_log2) + 1)))
                            : 1.0f;
    const uint8_t* src = a->data + i1 * a->nb[1] + i2 * a->nb[2] + i3 * a->nb[3];
    for (int64_t i = 0; i < ne0; i++) w[i] = *reinterpret_cast<const float*>(src + i * a->nb[0]) * scale;
    if (mask) {
      const uint8_t* mr = mask->data + i1 * mask->nb[1] + (i2 % mask->ne[2]) * mask->nb[2] + (i3 % mask->ne[3]) * mask->nb[3];
      if (mask->dtype == DType::F16) {
        for (int64_t i = 0; i < ne0; i++) w[i] += slope * fp16_to_f32(*reinterpret_cast<const uint16_t*>(mr + i * mask->nb[0]));
      } else {
        for (int64_t i = 0; i < ne0; i++) w[i] += slope * *reinterpret_cast<const float*>(mr + i * mask->nb[0]);
      }
    }
    uint8_t* dst = o->data + i1 * o->nb[1] + i2 * o->nb[2] + i3 * o->nb[3];
    float* y = o->nb[0] == 4 ? reinterpret_cast<float*>(dst) : e.data();
    const float mx = SM_DISPATCH(args.simd, max_row, w.data(), ne0);
    if (mx == -INFINITY) {
      for (int64_t i = 0; i < ne0; i++) y[i] = 0.0f;
    } else {
      const double sum = SM_DISPATCH(args.simd, exp_sub_sum_row, y, w.data(), mx, ne0);
      SM_DISPATCH(args.simd, scale_row, y, y, static_cast<float>(1.0 / sum), 0.0f, ne0);
    }
    if (y == e.data())
      for (int64_t i = 0; i < ne0; i++) *reinterpret_cast<float*>(dst + i * o->nb[0]) = y[i];
  }
}

const Registrar softmax_kernel(Op::SOFTMAX, {contract::check_softmax, no_scratch, 1, run_softmax});

}  // namespace
}  // namespace minfer::cpu
