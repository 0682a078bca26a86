// ATTENTION against a float64 reference (mask F32/F16 or spans, GQA, softcap, K/V F32/F16/BF16/Q8_0 as
// non-contiguous views of a cell-major cache, odd head sizes, hdv != hd) and the batch-invariance
// property: the same query alone and inside a batch with extra masked/out-of-span cells gives
// bit-identical output.
#include <cstring>

#include "ops_test_util.h"

namespace ops_test {
extern std::vector<std::string> g_reports;
}

// The attention kernel's four-row helpers (attention_avx2.cpp, attention_avx512.cpp) and their
// one-row counterparts, which they must equal bit for bit.
#define ROW_HELPERS                                                                         \
  float dot(const float* q, const void* k, minfer::program::DType kt, int64_t n);            \
  void axpby(float* acc, float a, const void* v, minfer::program::DType vt, float b, int64_t n); \
  void dot4(const float* q, const void* const* k, minfer::program::DType kt, int64_t n, float* out); \
  void axpy4(float* acc, const void* const* v, minfer::program::DType vt, const float* b, int64_t n);
#if defined(__x86_64__)
namespace minfer::cpu::attn_avx2 {
ROW_HELPERS
}
namespace minfer::cpu::attn_avx512 {
ROW_HELPERS
}
#endif

using namespace t;

namespace {

// KV cache stored cell-major ([hd, nCells, nKvHead] physically), viewed as [hd, nKvHead, nKv].
TT make_cache(DType d, int64_t hd, int64_t nkvh, int64_t ncells, std::mt19937& rng) {
  TT c(d, {hd, nkvh, ncells}, {0, 2, 1, 3});
  c.fill_random(rng, -1.5, 1.5);
  return c;
}

// A view of the first n cells of a cache.
TT view_cells(const TT& cache, int64_t n) {
  TT v = cache;
  v.t.data = v.store.data() + v.lead;
  v.t.ne[2] = n;
  return v;
}

double ref_attention(const TT& q, const TT& k, const TT& v, const TT& m, float scale, float softcap, int64_t d,
                     int64_t h, int64_t j) {
  const int64_t nkv = k.t.ne[2], group = q.t.ne[1] / k.t.ne[1], kvh = h / group;
  std::vector<double> s;
  std::vector<int64_t> cells;
  int64_t c0 = 0, c1 = nkv;
  if (m.t.dtype == DType::I32) {
    c0 = std::max<int64_t>(0, static_cast<int64_t>(m.get(0, j)));
    c1 = std::min<int64_t>(nkv, static_cast<int64_t>(m.get(1, j)));
  }
  for (int64_t c = c0; c < c1; c++) {
    double mv = m.t.dtype == DType::I32 ? 0 : m.get(c, j);
    if (mv == -INFINITY) continue;
    double dot = 0;
    for (int64_t i = 0; i < q.t.ne[0]; i++) dot += q.get(i, h, j) * k.get(i, kvh, c);
    double x = dot * scale;
    if (softcap != 0) x = softcap * std::tanh(x / softcap);
    s.push_back(x + mv);
    cells.push_back(c);
  }
  if (s.empty()) return 0;
  double mx = -INFINITY;
  for (double x : s) mx = std::max(mx, x);
  double sum = 0, acc = 0;
  for (size_t n = 0; n < s.size(); n++) {
    const double e = std::exp(s[n] - mx);
    sum += e;
    acc += e * v.get(d, kvh, cells[n]);
  }
  return acc / sum;
}

void test_reference(std::mt19937& rng) {
  struct Case {
    int64_t hd, hdv, nh, nkvh, nkv, nq;
  };
  const Case cases[] = {{64, 64, 4, 2, 37, 5}, {40, 24, 3, 3, 9, 1}, {7, 5, 2, 1, 1, 1}, {128, 128, 8, 1, 70, 3}};
  for (const Case& cs : cases) {
    // (k, v) dtypes, including mixed ones; Q8_0 only where the head sizes are whole blocks.
    const std::pair<DType, DType> kvs[] = {{DType::F32, DType::F16},
                                           {DType::F16, DType::F16},
                                           {DType::BF16, DType::BF16},
                                           {DType::Q8_0, DType::Q8_0},
                                           {DType::Q8_0, DType::F16},
                                           {DType::F32, DType::Q8_0}};
    for (const auto& [kd, vd] : kvs) {
      if ((kd == DType::Q8_0 && cs.hd % 32 != 0) || (vd == DType::Q8_0 && cs.hdv % 32 != 0)) continue;
      TT kc = make_cache(kd, cs.hd, cs.nkvh, cs.nkv + 3, rng);
      TT vc = make_cache(vd, cs.hdv, cs.nkvh, cs.nkv + 3, rng);
      TT k = view_cells(kc, cs.nkv), v = view_cells(vc, cs.nkv);
      TT q(DType::F32, {cs.hd, cs.nh, cs.nq}, {0, 2, 1, 3});  // permuted q
      q.fill_random(rng);
      for (int mk = 0; mk < 3; mk++) {
        // 0: F32 mask, 1: F16 mask (causal + a hidden hole, extra rows), 2: spans.
        TT m = mk == 2 ? TT(DType::I32, {2, cs.nq}) : TT(mk == 0 ? DType::F32 : DType::F16, {cs.nkv, cs.nq + 2});
        if (mk == 2) {
          for (int64_t j = 0; j < cs.nq; j++) {
            m.set(0, j, 0, 0, j == 1 ? cs.nkv : j % 3 == 2 ? 0 : j);  // j==1: empty span
            m.set(1, j, 0, 0, j % 2 ? cs.nkv : cs.nkv - j);
          }
        } else {
          std::uniform_real_distribution<double> u(-1, 0.5);
          m.each([&](int64_t c, int64_t j, int64_t, int64_t) {
            double val = u(rng);
            if (c > cs.nkv - cs.nq + j || (c % 4 == 1 && c != 0)) val = -INFINITY;
            if (j == 2) val = -INFINITY;  // a fully hidden query
            m.set(c, j, 0, 0, val);
          });
        }
        for (float softcap : {0.0f, 5.0f}) {
          for (SimdLevel simd : simd_levels()) {
            const float scale = 1.0f / std::sqrt(static_cast<float>(cs.hd));
            TT o(DType::F32, {cs.hdv, cs.nh, cs.nq});
            o.fill_nan();
            const char* e = run_op(Op::ATTENTION, {&q, &k, &v, &m}, {&o}, {f32w(scale), f32w(softcap)}, simd, 3);
            EXPECT(!e, "attention refused: %s", e);
            expect_all(fmt("attention hd=%lld k=%s v=%s mask=%d softcap=%g %s", (long long)cs.hd, dname(kd), dname(vd),
                           mk, softcap, sname(simd))
                           .c_str(),
                       o, [&](int64_t d, int64_t h, int64_t j, int64_t) {
                         return ref_attention(q, k, v, m, scale, softcap, d, h, j);
                       },
                       2e-6, 2e-5);
          }
        }
      }
    }
  }
}

// The same query alone (nQ = 1, exactly its cells) and inside a batch of 6 queries over a longer
// KV with extra masked cells: bit-identical.
void test_batch_invariance(std::mt19937& rng) {
  const int64_t hd = 72, nh = 4, nkvh = 2, ncells = 50, visible = 23;
  for (DType kd : {DType::F32, DType::F16, DType::BF16}) {
    TT kc = make_cache(kd, hd, nkvh, ncells, rng), vc = make_cache(kd, hd, nkvh, ncells, rng);
    for (SimdLevel simd : simd_levels()) {
      for (bool spans : {false, true}) {
        TT q1(DType::F32, {hd, nh, 1});
        q1.fill_random(rng);
        // Alone: KV view of exactly `visible` cells, everything visible.
        TT k1 = view_cells(kc, visible), v1 = view_cells(vc, visible);
        TT m1 = spans ? TT(DType::I32, {2, 1}) : TT(DType::F32, {visible, 1});
        if (spans) {
          m1.set(0, 0, 0, 0, 0);
          m1.set(1, 0, 0, 0, visible);
        } else {
          m1.each([&](int64_t c, int64_t j, int64_t, int64_t) { m1.set(c, j, 0, 0, 0); });
        }
        TT o1(DType::F32, {hd, nh, 1});
        EXPECT(!run_op(Op::ATTENTION, {&q1, &k1, &v1, &m1}, {&o1}, {f32w(0.11f), f32w(0)}, simd, 1), "alone");
        // Batch: 6 queries, our query at index 3, KV of all 50 cells; its extra cells masked.
        const int64_t nq = 6, at = 3;
        TT qb(DType::F32, {hd, nh, nq});
        qb.fill_random(rng);
        for (int64_t h = 0; h < nh; h++)
          for (int64_t i = 0; i < hd; i++) qb.set(i, h, at, 0, q1.get(i, h, 0));
        TT kb = view_cells(kc, ncells), vb = view_cells(vc, ncells);
        TT mb = spans ? TT(DType::I32, {2, nq}) : TT(DType::F16, {ncells, nq + 1});
        if (spans) {
          for (int64_t j = 0; j < nq; j++) {
            mb.set(0, j, 0, 0, j == at ? 0 : j);
            mb.set(1, j, 0, 0, j == at ? visible : ncells - j);
          }
        } else {
          mb.each([&](int64_t c, int64_t j, int64_t, int64_t) {
            mb.set(c, j, 0, 0, (j == at ? c < visible : c <= 30 + j) ? 0.0 : -INFINITY);
          });
        }
        TT ob(DType::F32, {hd, nh, nq});
        EXPECT(!run_op(Op::ATTENTION, {&qb, &kb, &vb, &mb}, {&ob}, {f32w(0.11f), f32w(0)}, simd, 2), "batch");
        bool same = true;
        for (int64_t h = 0; h < nh; h++)
          same = same && std::memcmp(o1.at(0, h, 0, 0), ob.at(0, h, at, 0), hd * 4) == 0;
        EXPECT(same, "batch invariance broken: k=%s %s spans=%d", dname(kd), sname(simd), spans);
      }
    }
  }
}

void test_refusals() {
  TT q(DType::F16, {8, 2, 1}), k(DType::F32, {8, 1, 4}), v(DType::F32, {8, 1, 4}), m(DType::F32, {4, 1}),
      o(DType::F32, {8, 2, 1});
  const char* e = run_op(Op::ATTENTION, {&q, &k, &v, &m}, {&o}, {f32w(1), f32w(0)});
  EXPECT(e && std::strstr(e, "q must be F32, got F16"), "attention q F16: %s", e ? e : "null");
  TT q2(DType::F32, {8, 3, 1}), o2(DType::F32, {8, 3, 1}), k2(DType::F32, {8, 2, 4}), v2(DType::F32, {8, 2, 4});
  e = run_op(Op::ATTENTION, {&q2, &k2, &v2, &m}, {&o2}, {f32w(1), f32w(0)});
  EXPECT(e && std::strstr(e, "multiple"), "attention 3 heads over 2: %s", e ? e : "null");
  TT mq(DType::Q8_0, {32, 1});
  TT k3(DType::F32, {8, 1, 32}), v3(DType::F32, {8, 1, 32});
  e = run_op(Op::ATTENTION, {&q2, &k3, &v3, &mq}, {&o2}, {f32w(1), f32w(0)});
  EXPECT(e && std::strstr(e, "mask"), "attention Q8_0 mask: %s", e ? e : "null");
}

}  // namespace

// A span outside [0, nKv) (or ending before it starts) is reported, not clamped: the execute fails.
void test_bad_spans(std::mt19937& rng) {
  const int64_t hd = 32, nh = 2, nkv = 8;
  TT kc = make_cache(DType::F16, hd, 1, nkv, rng), vc = make_cache(DType::F16, hd, 1, nkv, rng);
  const int32_t bad[][2] = {{-1, 4}, {0, nkv + 1}, {5, 3}};
  for (const auto& b : bad) {
    TT q(DType::F32, {hd, nh, 1});
    q.fill_random(rng);
    TT k = view_cells(kc, nkv), v = view_cells(vc, nkv);
    TT m(DType::I32, {2, 1});
    m.set(0, 0, 0, 0, b[0]);
    m.set(1, 0, 0, 0, b[1]);
    TT o(DType::F32, {hd, nh, 1});
    ops_test::g_reports.clear();
    EXPECT(!run_op(Op::ATTENTION, {&q, &k, &v, &m}, {&o}, {f32w(0.2f), f32w(0)}, SimdLevel::Scalar, 1), "checked");
    EXPECT(ops_test::g_reports.size() == 1 && std::strstr(ops_test::g_reports[0].c_str(), "span"),
           "span [%d, %d) of %lld cells: expected one report, got %zu", b[0], b[1], (long long)nkv,
           ops_test::g_reports.size());
  }
}

#if defined(__x86_64__)
// dot4 / axpy4 against four dot / axpby(acc, 1, ·) calls: bit-identical at every length (tails
// included) and K/V type, so a query's output does not depend on how its cells group into fours.
template <class Dot, class Axpby, class Dot4, class Axpy4>
void check_rows4(const char* level, Dot dot, Axpby axpby, Dot4 dot4, Axpy4 axpy4, std::mt19937& rng) {
  for (DType d : {DType::F32, DType::F16, DType::BF16, DType::Q8_0}) {
    for (int64_t n : {8, 13, 24, 40, 64, 72, 100, 128}) {
      if (d == DType::Q8_0 && n % 32 != 0) continue;
      TT q(DType::F32, {n}), rows(d, {n, 4}), acc(DType::F32, {n});
      q.fill_random(rng);
      rows.fill_random(rng, -1.5, 1.5);
      acc.fill_random(rng);
      const void* r[4];
      for (int i = 0; i < 4; i++) r[i] = rows.at(0, i, 0, 0);
      float four[4], one[4];
      const float* qf = reinterpret_cast<const float*>(q.at(0, 0, 0, 0));
      dot4(qf, r, d, n, four);
      for (int i = 0; i < 4; i++) one[i] = dot(qf, r[i], d, n);
      EXPECT(std::memcmp(four, one, sizeof four) == 0, "%s dot4 != 4 x dot: %s n=%lld", level, dname(d), (long long)n);
      const float b[4] = {0.3f, -1.7f, 0.011f, 2.5f};
      const float* a0 = reinterpret_cast<const float*>(acc.at(0, 0, 0, 0));
      std::vector<float> a4(a0, a0 + n);
      std::vector<float> a1 = a4;
      axpy4(a4.data(), r, d, b, n);
      for (int i = 0; i < 4; i++) axpby(a1.data(), 1.0f, r[i], d, b[i], n);
      EXPECT(std::memcmp(a4.data(), a1.data(), n * 4) == 0, "%s axpy4 != 4 x axpby: %s n=%lld", level, dname(d),
             (long long)n);
    }
  }
}

void test_rows4(std::mt19937& rng) {
  for (SimdLevel simd : simd_levels()) {
    namespace a2 = minfer::cpu::attn_avx2;
    namespace a5 = minfer::cpu::attn_avx512;
    if (simd == SimdLevel::AVX2) check_rows4("avx2", a2::dot, a2::axpby, a2::dot4, a2::axpy4, rng);
    if (simd == SimdLevel::AVX512) check_rows4("avx512", a5::dot, a5::axpby, a5::dot4, a5::axpy4, rng);
  }
}
#endif

int main() {
  std::mt19937 rng(99);
#if defined(__x86_64__)
  test_rows4(rng);
#endif
  test_reference(rng);
  test_batch_invariance(rng);
  test_refusals();
  test_bad_spans(rng);
  return finish("ops_attention_test");
}
