// ARGSORT (I32 indices that sort each row of a F32, ascending or descending; stable: equal values
// keep index order) and TOP_K (I32 [k, rows]: the indices of the k largest values of each row,
// largest first, ties by lower index: one pass over the row with a bounded heap). NaN orders above
// +inf (first when descending); -0 and +0 tie.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "../common/contract_sort.h"
#include "kernel.h"

namespace minfer::cpu {
namespace {

using program::Op;

// Strict "x < y" with NaN above everything (a total order, so sorting stays well defined).
inline bool less(float x, float y) {
  if (std::isnan(x)) return false;
  if (std::isnan(y)) return true;
  return x < y;
}

// "(v, i) ranks below (w, j)": a smaller value (NaN above everything), or an equal one at a
// higher index. The order TOP_K keeps; a total order over the (value, index) pairs of a row.
inline bool worse(float v, int32_t i, float w, int32_t j) {
  if (less(v, w)) return true;
  if (less(w, v)) return false;
  return i > j;
}

// A bounded min-heap of the k best (value, index) pairs seen so far; the root is the worst kept.
struct TopKHeap {
  std::vector<float> v;
  std::vector<int32_t> id;
  int64_t size = 0;

  explicit TopKHeap(int64_t k) : v(k), id(k) {}

  void sift_down(int64_t c, int64_t n, float x, int32_t ix) {
    for (;;) {
      int64_t w = 2 * c + 1;
      if (w >= n) break;
      if (w + 1 < n && worse(v[w + 1], id[w + 1], v[w], id[w])) w++;
      if (!worse(v[w], id[w], x, ix)) break;
      v[c] = v[w];
      id[c] = id[w];
      c = w;
    }
    v[c] = x;
    id[c] = ix;
  }

  void push(float x, int32_t ix) {  // while size < k
    int64_t c = size++;
    while (c > 0) {
      const int64_t p = (c - 1) / 2;
      if (!worse(x, ix, v[p], id[p])) break;
      v[c] = v[p];
      id[c] = id[p];
      c = p;
    }
    v[c] = x;
    id[c] = ix;
  }

  // Sorts the kept pairs best first in place (pops the worst to the back).
  void sort() {
    for (int64_t end = size - 1; end > 0; end--) {
      const float x = v[end];
      const int32_t ix = id[end];
      v[end] = v[0];
      id[end] = id[0];
      sift_down(0, end, x, ix);
    }
  }
};

// TOP_K of one row x[0..n) (element stride `stride` bytes) into heap (sorted best first). One pass:
// a value enters only when it beats the root, which an index scan in increasing order makes rare;
// blocks of 16 are tested at once (branch-free, so the compiler vectorizes the test).
void top_k_row(const uint8_t* src, int64_t stride, int64_t n, TopKHeap& h) {
  const int64_t k = static_cast<int64_t>(h.v.size());
  h.size = 0;
  auto at = [&](int64_t i) { return *reinterpret_cast<const float*>(src + i * stride); };
  int64_t i = 0;
  for (; i < k; i++) h.push(at(i), static_cast<int32_t>(i));
  auto offer = [&](float x, int64_t ix) {
    // Equal to the root at a higher index ranks below it: only a better pair enters. !(x <= root)
    // (larger, or a NaN on either side) is the cheap filter; the exact order decides.
    if (!(x <= h.v[0]) && worse(h.v[0], h.id[0], x, static_cast<int32_t>(ix)))
      h.sift_down(0, k, x, static_cast<int32_t>(ix));
  };
  if (stride == sizeof(float)) {
    const float* x = reinterpret_cast<const float*>(src);
    constexpr int64_t B = 16;
    for (; i + B <= n; i += B) {
      const float root = h.v[0];
      int hit = 0;
      // !(x <= root): larger than the root, or NaN (either side) — the rare case, checked exactly.
      for (int64_t j = 0; j < B; j++) hit |= !(x[i + j] <= root);
      if (hit)
        for (int64_t j = 0; j < B; j++) offer(x[i + j], i + j);
    }
  }
  for (; i < n; i++) offer(at(i), i);
  h.sort();
}

template <bool kTopK>
void run_sort(const NodeArgs& args, int, int ith, int nth) {
  const Tensor *a = args.in[0], *o = args.out[0];
  const int64_t n = a->ne[0], n1 = a->ne[1], n2 = a->ne[2];
  const bool desc = kTopK || param_i32(args, 0) != 0;
  const int64_t k = kTopK ? param_i32(args, program::param::TOP_K::k) : n;
  int64_t r0, r1;
  split_range(n1 * n2 * a->ne[3], ith, nth, &r0, &r1);
  if (r0 >= r1) return;
  if constexpr (kTopK) {
    TopKHeap h(k);
    for (int64_t r = r0; r < r1; r++) {
      const int64_t i1 = r % n1, i2 = (r / n1) % n2, i3 = r / (n1 * n2);
      top_k_row(a->data + i1 * a->nb[1] + i2 * a->nb[2] + i3 * a->nb[3], a->nb[0], n, h);
      uint8_t* dst = o->data + i1 * o->nb[1] + i2 * o->nb[2] + i3 * o->nb[3];
      for (int64_t i = 0; i < k; i++) *reinterpret_cast<int32_t*>(dst + i * o->nb[0]) = h.id[i];
    }
    return;
  }
  std::vector<float> x(n);
  std::vector<int32_t> idx(n);
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
    std::sort(idx.begin(), idx.end(), cmp);
    uint8_t* dst = o->data + i1 * o->nb[1] + i2 * o->nb[2] + i3 * o->nb[3];
    for (int64_t i = 0; i < k; i++) *reinterpret_cast<int32_t*>(dst + i * o->nb[0]) = idx[i];
  }
}

const Registrar argsort_kernel(Op::ARGSORT, {contract::check_argsort, no_scratch, 1, run_sort<false>});
const Registrar top_k_kernel(Op::TOP_K, {contract::check_top_k, no_scratch, 1, run_sort<true>});

}  // namespace
}  // namespace minfer::cpu
