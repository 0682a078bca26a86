// ARGSORT (I32 indices that sort each row of a F32, ascending or descending; stable: equal values
// keep index order) and TOP_K (I32 [k, rows]: the indices of the k largest values of each row,
// largest first, ties by lower index). NaN orders above +inf (first when descending).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "kernel.h"
#include "kernel_util.h"

namespace minfer::cpu {
namespace {

using program::DType;
using program::Op;

using program::dtype_name;


// Strict "x < y" with NaN above everything (a total order, so sorting stays well defined).
inline bool less(float x, float y) {
  if (std::isnan(x)) return false;
  if (std::isnan(y)) return true;
  return x < y;
}

const char* check_common(const NodeArgs& args, const char* op) {
  if (args.n_inputs != 1 || args.n_outputs != 1)
    return fail("%s: takes 1 input and 1 output, got %d and %d", op, args.n_inputs, args.n_outputs);
  if (args.in[0]->dtype != DType::F32) return fail("%s: a must be F32, got %s", op, dtype_name(args.in[0]->dtype));
  if (args.out[0]->dtype != DType::I32)
    return fail("%s: the output must be I32, got %s", op, dtype_name(args.out[0]->dtype));
  if (args.in[0]->ne[0] > INT32_MAX) return fail("%s: rows longer than 2^31 - 1", op);
  for (int i = 1; i < 4; i++)
    if (args.in[0]->ne[i] != args.out[0]->ne[i]) return fail("%s: the output must have a's rows", op);
  return nullptr;
}

const char* check_argsort(const NodeArgs& args) {
  if (const char* e = check_common(args, "argsort")) return e;
  if (args.out[0]->ne[0] != args.in[0]->ne[0]) return fail("argsort: the output must have a's shape");
  return nullptr;
}

const char* check_top_k(const NodeArgs& args) {
  if (const char* e = check_common(args, "top_k")) return e;
  const int k = param_i32(args, program::param::TOP_K::k);
  if (k < 1 || k > args.in[0]->ne[0])
    return fail("top_k: k = %d must be 1-%lld", k, (long long)args.in[0]->ne[0]);
  if (args.out[0]->ne[0] != k) return fail("top_k: the output rows must have k = %d entries", k);
  return nullptr;
}

template <bool kTopK>
void run_sort(const NodeArgs& args, int, int ith, int nth) {
  const Tensor *a = args.in[0], *o = args.out[0];
  const int64_t n = a->ne[0], n1 = a->ne[1], n2 = a->ne[2];
  const bool desc = kTopK || param_i32(args, 0) != 0;
  const int64_t k = kTopK ? param_i32(args, program::param::TOP_K::k) : n;
  std::vector<float> x(n);
  std::vector<int32_t> idx(n);
  int64_t r0, r1;
  split_range(n1 * n2 * a->ne[3], ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++) {
    const int64_t i1 = r % n1, i2 = (r / n1) % n2, i3 = r / (n1 * n2);
    const uint8_t* src = a->data + i1 * a->nb[1] + i2 * a->nb[2] + i3 * a->nb[3];
    for (int64_t i = 0; i < n; i++) x[i] = *reinterpret_cast<const float*>(src + i * a->nb[0]);
    std::iota(idx.begin(), idx.end(), 0);
    // Ties broken by index makes the order total, so unstable algorithms give the stable result.
    auto cmp = [&](int32_t p, int32_t q) {
      if (desc ? less(x[q], x[p]) : less(x[p], x[q])) return true;
      if (desc ? less(x[p], x[q]) : less(x[q], x[p])) return false;
      return p < q;
    };
    if (kTopK && k < n) std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), cmp);
    else std::sort(idx.begin(), idx.end(), cmp);
    uint8_t* dst = o->data + i1 * o->nb[1] + i2 * o->nb[2] + i3 * o->nb[3];
    for (int64_t i = 0; i < k; i++) *reinterpret_cast<int32_t*>(dst + i * o->nb[0]) = idx[i];
  }
}

const Registrar argsort_kernel(Op::ARGSORT, {check_argsort, no_scratch, 1, run_sort<false>});
const Registrar top_k_kernel(Op::TOP_K, {check_top_k, no_scratch, 1, run_sort<true>});

}  // namespace
}  // namespace minfer::cpu
