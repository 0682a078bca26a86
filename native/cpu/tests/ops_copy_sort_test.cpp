// CPY, SET_ROWS, CONCAT, ARGSORT and TOP_K against straightforward references: every dtype pair,
// non-contiguous source and destination, Q8_0 destinations, out-of-range SET_ROWS indices.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops_test_util.h"

namespace ops_test {
extern std::vector<std::string> g_reports;
}

using namespace t;

namespace {

double round_to(DType d, double x) {
  switch (d) {
    case DType::F16: return minfer::fp16_to_f32(minfer::f32_to_fp16(static_cast<float>(x)));
    case DType::BF16: return minfer::bf16_to_f32(minfer::f32_to_bf16(static_cast<float>(x)));
    case DType::I32: return x;
    default: return static_cast<float>(x);
  }
}

// Values of t in row-major element order.
std::vector<double> linear(const TT& t) {
  std::vector<double> v;
  t.each([&](int64_t a, int64_t b, int64_t c, int64_t d) { v.push_back(t.get(a, b, c, d)); });
  return v;
}

// The f32 values of a Q8_0 tensor's rows (dequantized).
std::vector<float> q8_rows(const TT& t) {
  std::vector<float> out(t.n());
  for (int64_t r = 0; r < t.t.ne[1] * t.t.ne[2] * t.t.ne[3]; r++) {
    const int64_t i1 = r % t.t.ne[1], i2 = (r / t.t.ne[1]) % t.t.ne[2], i3 = r / (t.t.ne[1] * t.t.ne[2]);
    minfer::cpu::dequantize_row(DType::Q8_0, t.at(0, i1, i2, i3), out.data() + r * t.t.ne[0], t.t.ne[0]);
  }
  return out;
}
std::vector<float> q8_expected(const std::vector<double>& vals, int64_t ne0) {
  std::vector<float> f(vals.begin(), vals.end()), out(vals.size());
  std::vector<uint8_t> blk(ne0 / 32 * 34);
  for (size_t r = 0; r < vals.size() / ne0; r++) {
    minfer::cpu::quantize_row(DType::Q8_0, f.data() + r * ne0, blk.data(), ne0);
    minfer::cpu::dequantize_row(DType::Q8_0, blk.data(), out.data() + r * ne0, ne0);
  }
  return out;
}

void test_cpy(std::mt19937& rng) {
  const DType floats[] = {DType::F32, DType::F16, DType::BF16};
  for (DType sd : floats) {
    for (DType dd : {DType::F32, DType::F16, DType::BF16, DType::Q8_0}) {
      for (SimdLevel simd : simd_levels()) {
        // src [8, 3, 4] permuted -> dst [32, 3] (padded when plain); src [64, 2] -> dst [64, 2] (same rows).
        for (int shape = 0; shape < 3; shape++) {
          TT src = shape == 0 ? TT(sd, {8, 3, 4}, {1, 2, 0, 3}) : shape == 1 ? TT(sd, {64, 2}, {0, 1}, {5, 0}) : TT(sd, {96, 1, 2}, {0, 2, 1, 3});
          src.fill_random(rng, -4, 4);
          TT dst = dd == DType::Q8_0 ? (shape == 0 ? TT(dd, {32, 3}) : shape == 1 ? TT(dd, {64, 2}, {0, 1}, {1, 0}) : TT(dd, {32, 6}))
                   : shape == 0      ? TT(dd, {32, 3}, {0, 1}, {3, 1})
                   : shape == 1      ? TT(dd, {64, 2}, {1, 0})
                                     : TT(dd, {12, 16});
          dst.fill_nan();
          const char* e = run_op(Op::CPY, {&src}, {&dst}, {}, simd, 2);
          EXPECT(!e, "cpy %s->%s refused: %s", dname(sd), dname(dd), e);
          const std::vector<double> want = linear(src);
          if (dd == DType::Q8_0) {
            const std::vector<float> got = q8_rows(dst), exp = q8_expected(want, dst.t.ne[0]);
            EXPECT(got == exp, "cpy %s->Q8_0 shape %d differs from quantize_row", dname(sd), shape);
          } else {
            const std::vector<double> got = linear(dst);
            int bad = 0;
            for (size_t i = 0; i < want.size(); i++)
              if (got[i] != round_to(dd, want[i])) bad++;
            EXPECT(bad == 0, "cpy %s->%s shape %d: %d wrong", dname(sd), dname(dd), shape, bad);
          }
          EXPECT(dst.canaries_intact(), "cpy wrote outside dst");
        }
      }
    }
  }
  // I32 -> I32 exact, strided.
  TT si(DType::I32, {5, 4}, {1, 0}), di(DType::I32, {20});
  si.each([&](int64_t a, int64_t b, int64_t, int64_t) { si.set(a, b, 0, 0, a * 1000003 + b); });
  EXPECT(!run_op(Op::CPY, {&si}, {&di}, {}), "cpy i32");
  EXPECT(linear(si) == linear(di), "cpy I32 not exact");
  TT q(DType::Q8_0, {32}), f(DType::F32, {32});
  const char* e = run_op(Op::CPY, {&q}, {&f}, {});
  EXPECT(e && std::strstr(e, "Q8_0"), "cpy from Q8_0 should be refused: %s", e ? e : "null");
  TT f5(DType::F32, {5});
  e = run_op(Op::CPY, {&f}, {&f5}, {});
  EXPECT(e && std::strstr(e, "count"), "cpy count mismatch: %s", e ? e : "null");
}

void test_set_rows(std::mt19937& rng) {
  for (DType dd : {DType::F32, DType::F16, DType::BF16, DType::Q8_0}) {
    for (int nth : {1, 3}) {
      const int64_t ne0 = dd == DType::Q8_0 ? 64 : 13, nrows = 10, n = 6;
      TT dst = dd == DType::Q8_0 ? TT(dd, {ne0, nrows}) : TT(dd, {ne0, nrows}, {0, 1}, {2, 0});
      TT before(DType::F32, {ne0, nrows});
      if (dd == DType::Q8_0) {
        TT tmp(DType::F32, {ne0, nrows});
        tmp.fill_random(rng);
        EXPECT(!run_op(Op::CPY, {&tmp}, {&dst}, {}), "init");
      } else {
        dst.fill_random(rng);
      }
      TT src(DType::F32, {ne0, n}, {1, 0});  // permuted src
      src.fill_random(rng);
      TT idx(DType::I32, {n});
      const int32_t ids[n] = {3, 0, 9, -1, 3, 10};  // 3 twice (the later wins), -1 and 10 out of range
      for (int i = 0; i < n; i++) idx.set(i, 0, 0, 0, ids[i]);
      const std::vector<float> old = dd == DType::Q8_0 ? q8_rows(dst) : std::vector<float>();
      std::vector<double> oldp = dd == DType::Q8_0 ? std::vector<double>() : linear(dst);
      ops_test::g_reports.clear();
      const char* e = run_op(Op::SET_ROWS, {&dst, &src, &idx}, {&dst}, {}, SimdLevel::Scalar, nth);
      EXPECT(!e, "set_rows %s refused: %s", dname(dd), e);
      EXPECT(ops_test::g_reports.size() == 1 && std::strstr(ops_test::g_reports[0].c_str(), "-1"),
             "set_rows: expected one report naming index -1, got %zu", ops_test::g_reports.size());
      EXPECT(dst.canaries_intact(), "set_rows wrote outside dst");
      // Expected rows.
      std::vector<double> want(ne0 * nrows);
      for (int64_t r = 0; r < nrows; r++)
        for (int64_t i = 0; i < ne0; i++) want[r * ne0 + i] = dd == DType::Q8_0 ? old[r * ne0 + i] : oldp[r * ne0 + i];
      std::vector<bool> written(nrows, false);
      for (int s = 0; s < n; s++) {
        if (ids[s] < 0 || ids[s] >= nrows) continue;
        written[ids[s]] = true;
        for (int64_t i = 0; i < ne0; i++) want[ids[s] * ne0 + i] = src.get(i, s);
      }
      if (dd == DType::Q8_0) {
        const std::vector<float> got = q8_rows(dst);
        std::vector<double> wr;
        for (int64_t r = 0; r < nrows; r++) {
          std::vector<double> row(want.begin() + r * ne0, want.begin() + (r + 1) * ne0);
          std::vector<float> exp = written[r] ? q8_expected(row, ne0) : std::vector<float>(row.begin(), row.end());
          EXPECT(std::equal(exp.begin(), exp.end(), got.begin() + r * ne0), "set_rows Q8_0 row %lld", (long long)r);
        }
      } else {
        const std::vector<double> got = linear(dst);
        int bad = 0;
        for (size_t i = 0; i < want.size(); i++)
          if (got[i] != round_to(dd, want[i])) bad++;
        EXPECT(bad == 0, "set_rows %s nth=%d: %d wrong", dname(dd), nth, bad);
      }
    }
  }
  // Broadcast idx over dims 2/3: dst [4, 5, 2], src [4, 2, 2], idx [2, 1].
  TT dst(DType::F32, {4, 5, 2}), src(DType::F32, {4, 2, 2}), idx(DType::I32, {2, 1});
  dst.fill_random(rng);
  src.fill_random(rng);
  idx.set(0, 0, 0, 0, 4);
  idx.set(1, 0, 0, 0, 1);
  TT old = dst;
  old.t.data = old.store.data() + old.lead;
  EXPECT(!run_op(Op::SET_ROWS, {&dst, &src, &idx}, {&dst}, {}, SimdLevel::Scalar, 2), "set_rows 3d");
  expect_all("set_rows 3d", dst, [&](int64_t a, int64_t b, int64_t c, int64_t) {
    return b == 4 ? src.get(a, 0, c) : b == 1 ? src.get(a, 1, c) : old.get(a, b, c);
  }, 0, 0);
}

void test_concat(std::mt19937& rng) {
  for (DType d : {DType::F32, DType::F16, DType::BF16, DType::I32}) {
    for (int dim = 0; dim < 4; dim++) {
      int64_t na[4] = {5, 3, 2, 2}, nb[4] = {5, 3, 2, 2};
      nb[dim] = dim == 0 ? 7 : 1;
      TT a(d, {na[0], na[1], na[2], na[3]}, {1, 0, 2, 3});
      TT b(d, {nb[0], nb[1], nb[2], nb[3]}, {0, 1, 2, 3}, {1, 0, 0, 0});
      a.fill_random(rng, -100, 100);
      b.fill_random(rng, -100, 100);
      int64_t no[4] = {na[0], na[1], na[2], na[3]};
      no[dim] += nb[dim];
      TT o(d, {no[0], no[1], no[2], no[3]});
      EXPECT(!run_op(Op::CONCAT, {&a, &b}, {&o}, {i32w(dim)}, SimdLevel::Scalar, 3), "concat refused");
      expect_all(fmt("concat %s dim %d", dname(d), dim).c_str(), o, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        int64_t c[4] = {i0, i1, i2, i3};
        if (c[dim] < na[dim]) return a.get(c[0], c[1], c[2], c[3]);
        c[dim] -= na[dim];
        return b.get(c[0], c[1], c[2], c[3]);
      }, 0, 0);
    }
  }
  TT a(DType::F32, {4}), b(DType::F16, {4}), o(DType::F32, {8});
  const char* e = run_op(Op::CONCAT, {&a, &b}, {&o}, {i32w(0)});
  EXPECT(e && std::strstr(e, "same dtype"), "concat mixed dtypes: %s", e ? e : "null");
}

void test_sort(std::mt19937& rng) {
  for (int64_t n : {1, 2, 7, 100, 1025}) {
    TT a(DType::F32, {n, 3, 2}, {1, 0, 2, 3});
    std::uniform_int_distribution<int> u(-5, 5);  // many ties
    a.each([&](int64_t i0, int64_t i1, int64_t i2, int64_t) { a.set(i0, i1, i2, 0, u(rng) * 0.5); });
    for (int desc : {0, 1}) {
      TT o(DType::I32, {n, 3, 2});
      EXPECT(!run_op(Op::ARGSORT, {&a}, {&o}, {i32w(desc)}, SimdLevel::Scalar, 2), "argsort refused");
      for (int64_t r = 0; r < 6; r++) {
        const int64_t i1 = r % 3, i2 = r / 3;
        std::vector<int> want(n);
        std::iota(want.begin(), want.end(), 0);
        std::stable_sort(want.begin(), want.end(), [&](int x, int y) {
          return desc ? a.get(x, i1, i2) > a.get(y, i1, i2) : a.get(x, i1, i2) < a.get(y, i1, i2);
        });
        bool ok = true;
        for (int64_t i = 0; i < n; i++) ok = ok && o.get(i, i1, i2) == want[i];
        EXPECT(ok, "argsort n=%lld desc=%d row %lld", (long long)n, desc, (long long)r);
      }
    }
    for (int64_t k : {int64_t{1}, std::min<int64_t>(n, 3), n}) {
      TT o(DType::I32, {k, 3, 2});
      EXPECT(!run_op(Op::TOP_K, {&a}, {&o}, {i32w(static_cast<int32_t>(k))}, SimdLevel::Scalar, 3), "top_k refused");
      for (int64_t r = 0; r < 6; r++) {
        const int64_t i1 = r % 3, i2 = r / 3;
        std::vector<int> want(n);
        std::iota(want.begin(), want.end(), 0);
        std::stable_sort(want.begin(), want.end(), [&](int x, int y) { return a.get(x, i1, i2) > a.get(y, i1, i2); });
        bool ok = true;
        for (int64_t i = 0; i < k; i++) ok = ok && o.get(i, i1, i2) == want[i];
        EXPECT(ok, "top_k n=%lld k=%lld row %lld", (long long)n, (long long)k, (long long)r);
      }
    }
  }
  TT a(DType::F32, {4}), o(DType::I32, {5});
  const char* e = run_op(Op::TOP_K, {&a}, {&o}, {i32w(5)});
  EXPECT(e && std::strstr(e, "k = 5"), "top_k k > n: %s", e ? e : "null");
}

// TOP_K on contiguous rows long enough for the blocked scan: ties (few distinct values), -0 beside
// +0, ±inf, NaN (above +inf), a row that is all one value, and a maximum that comes last; several
// threads. The reference: a stable descending sort with NaN first (lower index first on ties).
void test_top_k_rows(std::mt19937& rng) {
  const int64_t n = 1000, rows = 7;
  TT a(DType::F32, {n, rows});
  std::uniform_int_distribution<int> u(-8, 8);
  std::uniform_int_distribution<int> pick(0, 199);
  const double nan = std::nan(""), inf = INFINITY;
  a.each([&](int64_t i0, int64_t i1, int64_t, int64_t) {
    double v = u(rng) * 0.25;
    const int p = pick(rng);
    if (i1 >= 2 && p == 0) v = nan;
    if (p == 1) v = inf;
    if (p == 2) v = -inf;
    if (p == 3) v = -0.0;
    if (p == 4) v = 0.0;
    if (i1 == 0) v = -1.5;                     // all equal: ids 0, 1, 2, …
    if (i1 == 1) v = i0 == n - 1 ? 9.0 : u(rng) * 0.25;  // the maximum last
    a.set(i0, i1, 0, 0, v);
  });
  auto rank_above = [](double x, double y) {  // x before y (strictly)
    if (std::isnan(y)) return false;
    if (std::isnan(x)) return true;
    return x > y;
  };
  for (int64_t k : {int64_t{1}, int64_t{16}, int64_t{64}, int64_t{333}, n}) {
    for (int threads : {1, 3}) {
      TT o(DType::I32, {k, rows});
      EXPECT(!run_op(Op::TOP_K, {&a}, {&o}, {i32w(static_cast<int32_t>(k))}, SimdLevel::Scalar, threads),
             "top_k refused");
      for (int64_t r = 0; r < rows; r++) {
        std::vector<int> want(n);
        std::iota(want.begin(), want.end(), 0);
        std::stable_sort(want.begin(), want.end(), [&](int x, int y) { return rank_above(a.get(x, r), a.get(y, r)); });
        bool ok = true;
        for (int64_t i = 0; i < k; i++) ok = ok && o.get(i, r) == want[i];
        EXPECT(ok, "top_k rows n=%lld k=%lld threads=%d row %lld", (long long)n, (long long)k, threads, (long long)r);
      }
    }
  }
}

}  // namespace

int main() {
  std::mt19937 rng(5);
  test_cpy(rng);
  test_set_rows(rng);
  test_concat(rng);
  test_sort(rng);
  test_top_k_rows(rng);
  return finish("ops_copy_sort_test");
}
