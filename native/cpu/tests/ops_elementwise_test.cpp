// ADD, MUL, SCALE, SILU, GELU, TANH, GELU_ERF, SWIGLU, GEGLU, RMS_NORM, NORM, RMS_NORM_MUL and SOFTMAX against float64
// references: odd sizes, one row, many rows, broadcasting, permuted and padded views, every SIMD
// level this CPU has, 1 and 3 threads.
#include "ops_test_util.h"

using namespace t;

namespace {

struct Layout {
  const char* name;
  std::initializer_list<int> perm;
  std::initializer_list<int64_t> pad;
};
const Layout kLayouts[] = {
    {"contiguous", {0, 1, 2, 3}, {0, 0, 0, 0}},
    {"padded", {0, 1, 2, 3}, {3, 1, 0, 2}},
    {"permuted", {1, 0, 2, 3}, {0, 0, 0, 0}},
    {"permuted3", {2, 0, 3, 1}, {1, 0, 0, 0}},
};

const int64_t kShapes[][4] = {{1, 1, 1, 1}, {7, 3, 2, 1}, {33, 5, 1, 2}, {16, 1, 1, 1}, {4099, 2, 1, 1}, {64, 9, 3, 1}};

double silu(double x) { return x / (1 + std::exp(-x)); }
double gelu(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }
// x·Φ(x); test_gelu_erf checks it against published values of Φ.
double gelu_erf(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
// GELU_ERF's bound: about 10 float ulp (the SIMD polynomial measures under 8).
constexpr double kGeluErfRtol = 6e-7, kGeluErfAtol = 1e-37;

void test_binary_unary(std::mt19937& rng) {
  for (auto& sh : kShapes) {
    for (const Layout& L : kLayouts) {
      for (SimdLevel simd : simd_levels()) {
        for (int nth : {1, 3}) {
          TT a(DType::F32, {sh[0], sh[1], sh[2], sh[3]}, L.perm, L.pad);
          a.fill_random(rng, -6, 6);
          // b: same shape, row vector, scalar, broadcast in dims 1-3.
          const int64_t bshapes[][4] = {{sh[0], sh[1], sh[2], sh[3]}, {sh[0], 1, 1, 1}, {1, 1, 1, 1}, {sh[0], 1, sh[2], 1},
                                        {1, sh[1], 1, sh[3]}};
          for (auto& bs : bshapes) {
            TT b(DType::F32, {bs[0], bs[1], bs[2], bs[3]}, L.perm, L.pad);
            b.fill_random(rng, -3, 3);
            for (Op op : {Op::ADD, Op::MUL}) {
              TT o(DType::F32, {sh[0], sh[1], sh[2], sh[3]}, L.perm, L.pad);
              o.fill_nan();
              const char* e = run_op(op, {&a, &b}, {&o}, {}, simd, nth);
              EXPECT(!e, "add/mul refused: %s", e);
              auto what = fmt("%s %s b[%lld,%lld,%lld,%lld] %s %s nth=%d", op == Op::ADD ? "add" : "mul", L.name,
                              (long long)bs[0], (long long)bs[1], (long long)bs[2], (long long)bs[3], sname(simd),
                              "", nth);
              expect_all(what.c_str(), o, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
                const double x = a.get(i0, i1, i2, i3), y = b.get(i0 % bs[0], i1 % bs[1], i2 % bs[2], i3 % bs[3]);
                return static_cast<double>(op == Op::ADD ? static_cast<float>(x + y) : static_cast<float>(x * y));
              }, 0, 0);  // exact: one float operation
            }
          }
          {
            TT o(DType::F32, {sh[0], sh[1], sh[2], sh[3]}, L.perm, L.pad);
            o.fill_nan();
            EXPECT(!run_op(Op::SCALE, {&a}, {&o}, {f32w(0.37f), f32w(-1.25f)}, simd, nth), "scale refused");
            expect_all(fmt("scale %s %s", L.name, sname(simd)).c_str(), o,
                       [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) { return a.get(i0, i1, i2, i3) * 0.37 - 1.25; },
                       1e-6, 1e-6);
          }
          for (Op op : {Op::SILU, Op::GELU, Op::TANH}) {
            TT o(DType::F32, {sh[0], sh[1], sh[2], sh[3]}, L.perm, L.pad);
            o.fill_nan();
            const char* name = op == Op::SILU ? "silu" : op == Op::GELU ? "gelu" : "tanh";
            EXPECT(!run_op(op, {&a}, {&o}, {}, simd, nth), "%s refused", name);
            expect_all(fmt("%s %s %s", name, L.name, sname(simd)).c_str(), o,
                       [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
                         const double x = a.get(i0, i1, i2, i3);
                         return op == Op::SILU ? silu(x) : op == Op::GELU ? gelu(x) : std::tanh(x);
                       },
                       2e-7, 8e-7);
          }
          {
            TT o(DType::F32, {sh[0], sh[1], sh[2], sh[3]}, L.perm, L.pad);
            o.fill_nan();
            EXPECT(!run_op(Op::GELU_ERF, {&a}, {&o}, {}, simd, nth), "gelu_erf refused");
            expect_all(fmt("gelu_erf %s %s", L.name, sname(simd)).c_str(), o,
                       [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) { return gelu_erf(a.get(i0, i1, i2, i3)); },
                       kGeluErfAtol, kGeluErfRtol);
          }
          for (Op op : {Op::SWIGLU, Op::GEGLU}) {
            TT up(DType::F32, {sh[0], sh[1], sh[2], sh[3]}, L.perm, L.pad);
            up.fill_random(rng);
            TT o(DType::F32, {sh[0], sh[1], sh[2], sh[3]}, L.perm, L.pad);
            o.fill_nan();
            const char* name = op == Op::SWIGLU ? "swiglu" : "geglu";
            EXPECT(!run_op(op, {&a, &up}, {&o}, {}, simd, nth), "%s refused", name);
            expect_all(fmt("%s %s %s", name, L.name, sname(simd)).c_str(), o,
                       [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
                         const double x = a.get(i0, i1, i2, i3);
                         return (op == Op::SWIGLU ? silu(x) : gelu(x)) * up.get(i0, i1, i2, i3);
                       },
                       2e-7, 8e-7);
          }
        }
      }
    }
  }
  // Extreme inputs: silu/gelu of large magnitudes stay finite and correct.
  for (SimdLevel simd : simd_levels()) {
    const float xs[] = {-1000, -100, -88.5f, -87, -20, -1e-8f, 0, 1e-8f, 20, 87, 88.5f, 100, 1000, 3.4e38f, -3.4e38f,
                        0.5f, -0.5f};
    const int n = sizeof xs / sizeof xs[0];
    TT a(DType::F32, {n}), o(DType::F32, {n}), g(DType::F32, {n}), th(DType::F32, {n}), up(DType::F32, {n}),
        gg(DType::F32, {n});
    for (int i = 0; i < n; i++) {
      a.set(i, 0, 0, 0, xs[i]);
      up.set(i, 0, 0, 0, 0.75);
    }
    EXPECT(!run_op(Op::SILU, {&a}, {&o}, {}, simd, 1), "silu");
    EXPECT(!run_op(Op::GELU, {&a}, {&g}, {}, simd, 1), "gelu");
    EXPECT(!run_op(Op::TANH, {&a}, {&th}, {}, simd, 1), "tanh");
    EXPECT(!run_op(Op::GEGLU, {&a, &up}, {&gg}, {}, simd, 1), "geglu");
    for (int i = 0; i < n; i++) {
      const double x = xs[i];
      const double ws = x < -700 ? -0.0 : silu(x), wg = x < -700 ? -0.0 : gelu(x);
      EXPECT(close(o.get(i), ws, 1e-30, 2e-6), "silu(%g) %s = %g, want %g", x, sname(simd), o.get(i), ws);
      EXPECT(close(g.get(i), wg, 1e-30, 2e-6), "gelu(%g) %s = %g, want %g", x, sname(simd), g.get(i), wg);
      // tanh saturates to exactly ±1 and keeps tiny values (and their sign).
      EXPECT(close(th.get(i), std::tanh(x), 1e-30, 2e-7), "tanh(%g) %s = %.9g, want %.9g", x, sname(simd), th.get(i),
             std::tanh(x));
      EXPECT(std::signbit(th.get(i)) == std::signbit(x), "tanh(%g) %s has the wrong sign", x, sname(simd));
      // geglu is gelu's value times up, bit for bit as GELU then MUL compute it.
      EXPECT(static_cast<float>(gg.get(i)) == static_cast<float>(g.get(i)) * 0.75f, "geglu(%g) %s = %.9g, gelu·0.75 = %.9g",
             x, sname(simd), gg.get(i), static_cast<double>(static_cast<float>(g.get(i)) * 0.75f));
    }
    // NaN stays NaN.
    {
      TT nan_in(DType::F32, {20}), nan_out(DType::F32, {20});
      nan_in.fill_random(rng);
      nan_in.set(3, 0, 0, 0, NAN);
      nan_in.set(17, 0, 0, 0, NAN);
      EXPECT(!run_op(Op::TANH, {&nan_in}, {&nan_out}, {}, simd, 1), "tanh");
      EXPECT(std::isnan(nan_out.get(3)) && std::isnan(nan_out.get(17)) && !std::isnan(nan_out.get(4)),
             "tanh %s: NaN must stay NaN", sname(simd));
    }
  }
  // Refusals name what they lack.
  {
    TT a(DType::F16, {8}), b(DType::F32, {8}), o(DType::F32, {8}), b3(DType::F32, {3});
    const char* e = run_op(Op::ADD, {&a, &b}, {&o}, {});
    EXPECT(e && std::strstr(e, "F16"), "add of F16 should be refused naming F16, got %s", e ? e : "null");
    TT a2(DType::F32, {8});
    e = run_op(Op::MUL, {&a2, &b3}, {&o}, {});
    EXPECT(e && std::strstr(e, "broadcast"), "mul with b [3] over [8] should be refused, got %s", e ? e : "null");
    e = run_op(Op::SILU, {&a}, {&o}, {});
    EXPECT(e && std::strstr(e, "silu: a must be F32, got F16"), "silu refusal: %s", e ? e : "null");
    e = run_op(Op::TANH, {&a}, {&o}, {});
    EXPECT(e && std::strstr(e, "tanh: a must be F32, got F16"), "tanh refusal: %s", e ? e : "null");
    e = run_op(Op::GELU_ERF, {&a}, {&o}, {});
    EXPECT(e && std::strstr(e, "gelu_erf: a must be F32, got F16"), "gelu_erf refusal: %s", e ? e : "null");
    e = run_op(Op::GEGLU, {&a2, &b3}, {&o}, {});
    EXPECT(e && std::strstr(e, "geglu: gate and up must have the same shape"), "geglu refusal: %s", e ? e : "null");
  }
}

// GELU_ERF (transformers' "gelu"): the reference against published values of the normal CDF Φ,
// then every SIMD level over a dense sweep of [-16, 16], tiny and huge inputs, NaN.
void test_gelu_erf() {
  // x, Φ(x) (standard normal tables, to 17 digits).
  const double table[][2] = {{0.5, 0.69146246127401310}, {1, 0.84134474606854295}, {2, 0.97724986805182079},
                             {3, 0.99865010196836991},   {-0.5, 0.30853753872598690}, {-1, 0.15865525393145705},
                             {-3, 1.3498980316300945e-3}, {-5, 2.8665157187919391e-7}, {-10, 7.6198530241605261e-24}};
  const int nt = sizeof table / sizeof table[0];
  for (auto& r : table)
    EXPECT(close(gelu_erf(r[0]), r[0] * r[1], 0, 1e-14), "reference gelu_erf(%g) = %.17g, want %.17g", r[0],
           gelu_erf(r[0]), r[0] * r[1]);
  std::vector<float> xs;
  for (int i = -16 * 512; i <= 16 * 512; i++) xs.push_back(i / 512.0f + 1.0f / 4096);
  for (float x : {1e-8f, -1e-8f, 1e-30f, -1e-30f, 13.25f, -13.25f, -1000.0f, -3.4e38f}) xs.push_back(x);
  const int first_table = static_cast<int>(xs.size());
  for (auto& r : table) xs.push_back(static_cast<float>(r[0]));
  // Exact where float can be: gelu(±0) = ±0, large positive x unchanged.
  const int zero = static_cast<int>(xs.size());
  for (float x : {0.0f, -0.0f, 1000.0f, 3.4e38f}) xs.push_back(x);
  const int n = static_cast<int>(xs.size());
  for (SimdLevel simd : simd_levels()) {
    TT a(DType::F32, {n}), o(DType::F32, {n});
    for (int i = 0; i < n; i++) a.set(i, 0, 0, 0, xs[i]);
    o.fill_nan();
    EXPECT(!run_op(Op::GELU_ERF, {&a}, {&o}, {}, simd, 1), "gelu_erf");
    double worst_ulp = 0;
    for (int i = 0; i < n; i++) {
      const double x = xs[i], want = gelu_erf(x), got = o.get(i);
      EXPECT(close(got, want, kGeluErfAtol, kGeluErfRtol), "gelu_erf(%.9g) %s = %.9g, want %.9g", x, sname(simd), got,
             want);
      const float fw = static_cast<float>(std::fabs(want));
      if (fw > 1e-37f) worst_ulp = std::max(worst_ulp, std::fabs(got - want) / (std::nextafter(fw, INFINITY) - fw));
    }
    for (int i = 0; i < nt; i++) {
      const double x = table[i][0], got = o.get(first_table + i);
      EXPECT(close(got, x * table[i][1], 0, kGeluErfRtol), "gelu_erf(%g) %s = %.9g, table %.9g", x, sname(simd), got,
             x * table[i][1]);
    }
    EXPECT(o.get(zero) == 0 && !std::signbit(o.get(zero)) && o.get(zero + 1) == 0 && std::signbit(o.get(zero + 1)),
           "gelu_erf(±0) %s = %g, %g", sname(simd), o.get(zero), o.get(zero + 1));
    EXPECT(o.get(zero + 2) == 1000.0 && o.get(zero + 3) == static_cast<double>(3.4e38f),
           "gelu_erf of large x %s = %g, %g", sname(simd), o.get(zero + 2), o.get(zero + 3));
    std::printf("gelu_erf %s: worst %.2f ulp over %d inputs\n", sname(simd), worst_ulp, n);
    EXPECT(worst_ulp <= 6, "gelu_erf %s: %.2f ulp from the exact value (measured at most 4)", sname(simd), worst_ulp);
    TT nan_in(DType::F32, {20}), nan_out(DType::F32, {20});
    for (int i = 0; i < 20; i++) nan_in.set(i, 0, 0, 0, i - 9.5);
    nan_in.set(3, 0, 0, 0, NAN);
    EXPECT(!run_op(Op::GELU_ERF, {&nan_in}, {&nan_out}, {}, simd, 1), "gelu_erf");
    EXPECT(std::isnan(nan_out.get(3)) && !std::isnan(nan_out.get(4)), "gelu_erf %s: NaN must stay NaN", sname(simd));
  }
}

void test_norms(std::mt19937& rng) {
  for (auto& sh : kShapes) {
    for (const Layout& L : kLayouts) {
      for (SimdLevel simd : simd_levels()) {
        for (int nth : {1, 3}) {
          TT a(DType::F32, {sh[0], sh[1], sh[2], sh[3]}, L.perm, L.pad);
          a.fill_random(rng, -3, 5);  // non-zero mean
          const float eps = 1e-5f;
          auto row_stats = [&](int64_t i1, int64_t i2, int64_t i3, double* mean, double* var, double* ms) {
            double s = 0, s2 = 0;
            for (int64_t i = 0; i < sh[0]; i++) {
              s += a.get(i, i1, i2, i3);
              s2 += a.get(i, i1, i2, i3) * a.get(i, i1, i2, i3);
            }
            *mean = s / sh[0];
            *ms = s2 / sh[0];
            double v = 0;
            for (int64_t i = 0; i < sh[0]; i++) v += (a.get(i, i1, i2, i3) - *mean) * (a.get(i, i1, i2, i3) - *mean);
            *var = v / sh[0];
          };
          {
            TT o(DType::F32, {sh[0], sh[1], sh[2], sh[3]}, L.perm, L.pad);
            o.fill_nan();
            EXPECT(!run_op(Op::RMS_NORM, {&a}, {&o}, {f32w(eps)}, simd, nth), "rms_norm refused");
            expect_all(fmt("rms_norm %s %s nth=%d", L.name, sname(simd), nth).c_str(), o,
                       [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
                         double m, v, ms;
                         row_stats(i1, i2, i3, &m, &v, &ms);
                         return a.get(i0, i1, i2, i3) / std::sqrt(ms + eps);
                       },
                       1e-6, 2e-6);
          }
          {
            TT o(DType::F32, {sh[0], sh[1], sh[2], sh[3]}, L.perm, L.pad);
            o.fill_nan();
            EXPECT(!run_op(Op::NORM, {&a}, {&o}, {f32w(eps)}, simd, nth), "norm refused");
            expect_all(fmt("norm %s %s nth=%d", L.name, sname(simd), nth).c_str(), o,
                       [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
                         double m, v, ms;
                         row_stats(i1, i2, i3, &m, &v, &ms);
                         return (a.get(i0, i1, i2, i3) - m) / std::sqrt(v + eps);
                       },
                       2e-5, 2e-5);  // the mean is rounded to float once
          }
          const int64_t wshapes[][4] = {{sh[0], 1, 1, 1}, {sh[0], sh[1], 1, sh[3]}};
          for (auto& ws : wshapes) {
            TT w(DType::F32, {ws[0], ws[1], ws[2], ws[3]}, L.perm, L.pad);
            w.fill_random(rng);
            TT o(DType::F32, {sh[0], sh[1], sh[2], sh[3]}, L.perm, L.pad);
            o.fill_nan();
            EXPECT(!run_op(Op::RMS_NORM_MUL, {&a, &w}, {&o}, {f32w(eps)}, simd, nth), "rms_norm_mul refused");
            expect_all(fmt("rms_norm_mul %s %s nth=%d", L.name, sname(simd), nth).c_str(), o,
                       [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
                         double m, v, ms;
                         row_stats(i1, i2, i3, &m, &v, &ms);
                         return a.get(i0, i1, i2, i3) / std::sqrt(ms + eps) *
                                w.get(i0, i1 % ws[1], i2 % ws[2], i3 % ws[3]);
                       },
                       1e-6, 3e-6);
          }
        }
      }
    }
  }
  {
    TT a(DType::F32, {8, 2}), w(DType::F32, {4}), o(DType::F32, {8, 2});
    const char* e = run_op(Op::RMS_NORM_MUL, {&a, &w}, {&o}, {f32w(1e-5f)});
    EXPECT(e != nullptr, "rms_norm_mul with a short weight must be refused");
  }
}

void test_softmax(std::mt19937& rng) {
  const int64_t shapes[][4] = {{1, 1, 1, 1}, {7, 3, 2, 1}, {33, 5, 4, 2}, {4099, 2, 1, 1}, {32, 4, 6, 1}};
  for (auto& sh : shapes) {
    for (const Layout& L : kLayouts) {
      for (SimdLevel simd : simd_levels()) {
        for (DType md : {DType::F32, DType::F16}) {
          for (float max_bias : {0.0f, 8.0f}) {
            TT a(DType::F32, {sh[0], sh[1], sh[2], sh[3]}, L.perm, L.pad);
            a.fill_random(rng, -10, 10);
            // mask with extra rows, broadcast over dims 2 and 3; -inf in places, one row fully -inf.
            TT m(md, {sh[0], sh[1] + 2, 1, 1});
            std::uniform_real_distribution<double> u(-3, 1);
            m.each([&](int64_t i0, int64_t i1, int64_t, int64_t) {
              double v = u(rng);
              if ((i0 * 7 + i1 * 3) % 5 == 0) v = -INFINITY;
              if (i1 == 1) v = -INFINITY;  // a fully hidden row
              m.set(i0, i1, 0, 0, v);
            });
            const float scale = 0.125f;
            const uint32_t nh = static_cast<uint32_t>(sh[2]);
            const uint32_t nl2 = 1u << static_cast<uint32_t>(std::floor(std::log2(nh)));
            auto slope = [&](int64_t h) {
              if (max_bias <= 0) return 1.0;
              const double m0 = std::pow(2.0, -max_bias / nl2), m1 = std::pow(2.0, -(max_bias / 2.0) / nl2);
              return h < nl2 ? std::pow(m0, h + 1) : std::pow(m1, 2 * (h - nl2) + 1);
            };
            for (bool with_mask : {false, true}) {
              TT o(DType::F32, {sh[0], sh[1], sh[2], sh[3]}, L.perm, L.pad);
              o.fill_nan();
              std::vector<TT*> ins{&a};
              if (with_mask) ins.push_back(&m);
              EXPECT(!run_op(Op::SOFTMAX, ins, {&o}, {f32w(scale), f32w(max_bias)}, simd, 3), "softmax refused");
              expect_all(fmt("softmax %s %s mask=%d %s maxBias=%g", L.name, sname(simd), with_mask, dname(md), max_bias).c_str(), o,
                         [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
                           std::vector<double> w(sh[0]);
                           double mx = -INFINITY;
                           for (int64_t i = 0; i < sh[0]; i++) {
                             w[i] = static_cast<double>(static_cast<float>(a.get(i, i1, i2, i3)) * scale) +
                                    (with_mask ? slope(i2) * m.get(i, i1, 0, 0) : 0.0);
                             mx = std::max(mx, w[i]);
                           }
                           if (mx == -INFINITY) return 0.0;
                           double s = 0;
                           for (double x : w) s += std::exp(x - mx);
                           return std::exp(w[i0] - mx) / s;
                         },
                         1e-8, 2e-6);
            }
          }
        }
      }
    }
  }
  // Rows sum to 1.
  TT a(DType::F32, {1000, 3});
  a.fill_random(rng, -30, 30);
  TT o(DType::F32, {1000, 3});
  for (SimdLevel simd : simd_levels()) {
    EXPECT(!run_op(Op::SOFTMAX, {&a}, {&o}, {f32w(1.0f), f32w(0.0f)}, simd, 2), "softmax");
    for (int r = 0; r < 3; r++) {
      double s = 0;
      for (int i = 0; i < 1000; i++) s += o.get(i, r);
      EXPECT(std::fabs(s - 1) < 1e-5, "softmax row %d sums to %.9g (%s)", r, s, sname(simd));
    }
  }
}

}  // namespace

int main() {
  std::mt19937 rng(1234);
  test_binary_unary(rng);
  test_gelu_erf();
  test_norms(rng);
  test_softmax(rng);
  return finish("ops_elementwise_test");
}
