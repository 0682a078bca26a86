// ROPE against a float64 reference: normal and neox modes, partial rotation, frequency factors,
// linear scaling and YaRN, one and many tokens, large positions, permuted/padded views.
#include "ops_test_util.h"

using namespace t;

namespace {

struct RopeP {
  int mode, n_dims, n_ctx_orig;
  float base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow;
};

double ref_rope(const TT& a, const TT& pos, const TT* ff, const RopeP& p, int64_t i0, int64_t i1, int64_t i2,
                int64_t i3) {
  if (i0 >= p.n_dims) return a.get(i0, i1, i2, i3);
  const int half = p.n_dims / 2;
  int i, j0, j1;
  if (p.mode == 2) {
    i = static_cast<int>(i0 % half);
    j0 = i;
    j1 = i + half;
  } else {
    i = static_cast<int>(i0 / 2);
    j0 = 2 * i;
    j1 = 2 * i + 1;
  }
  double theta_e = pos.get(i2) * std::pow(static_cast<double>(p.base), -2.0 * i / p.n_dims);
  if (ff) theta_e /= ff->get(i);
  double theta = p.freq_scale * theta_e, mscale = p.attn_factor;
  if (p.ext_factor != 0) {
    auto corr = [&](double nr) { return p.n_dims * std::log(p.n_ctx_orig / (nr * 2 * M_PI)) / (2 * std::log((double)p.base)); };
    const double lo = std::max(0.0, std::floor(corr(p.beta_fast)));
    const double hi = std::min(p.n_dims - 1.0, std::ceil(corr(p.beta_slow)));
    const double y = (i - lo) / std::max(0.001, hi - lo);
    const double mix = (1 - std::min(1.0, std::max(0.0, y))) * p.ext_factor;
    theta = theta * (1 - mix) + theta_e * mix;
    mscale *= 1 + 0.1 * std::log(1.0 / p.freq_scale);
  }
  const double c = std::cos(theta) * mscale, s = std::sin(theta) * mscale;
  const double x0 = a.get(j0, i1, i2, i3), x1 = a.get(j1, i1, i2, i3);
  return i0 == j0 ? x0 * c - x1 * s : x0 * s + x1 * c;
}

}  // namespace

int main() {
  std::mt19937 rng(7);
  const RopeP params[] = {
      {0, 64, 0, 10000, 1, 0, 1, 32, 1},
      {2, 64, 0, 10000, 1, 0, 1, 32, 1},
      {0, 6, 0, 10000, 1, 0, 1, 32, 1},           // partial (head 10)
      {2, 6, 0, 500000, 0.5f, 0, 1, 32, 1},       // partial neox, linear scaling
      {2, 64, 4096, 10000, 0.25f, 1, 1, 32, 1},   // YaRN
      {0, 64, 2048, 1000000, 0.125f, 1, 0.9f, 16, 2},
  };
  for (const RopeP& p : params) {
    const int64_t hd = p.n_dims == 6 ? 10 : 64;
    for (int64_t n_tok : {1, 5}) {
      for (int layout = 0; layout < 3; layout++) {
        for (bool with_ff : {false, true}) {
          const int64_t nh = 3;
          TT a = layout == 0   ? TT(DType::F32, {hd, nh, n_tok})
                 : layout == 1 ? TT(DType::F32, {hd, nh, n_tok}, {0, 2, 1, 3})
                               : TT(DType::F32, {hd, nh, n_tok}, {0, 1, 2, 3}, {2, 1, 0, 0});
          a.fill_random(rng);
          TT pos(DType::I32, {n_tok});
          for (int64_t k = 0; k < n_tok; k++) pos.set(k, 0, 0, 0, k == 0 ? 0 : k * 20011 + 3);  // up to ~80k
          TT ff(DType::F32, {p.n_dims / 2});
          ff.fill_random(rng, 1, 8);
          TT o = layout == 2 ? TT(DType::F32, {hd, nh, n_tok}, {0, 1, 2, 3}, {1, 0, 0, 0}) : TT(DType::F32, {hd, nh, n_tok});
          o.fill_nan();
          std::vector<TT*> ins{&a, &pos};
          if (with_ff) ins.push_back(&ff);
          std::vector<uint32_t> pw{i32w(p.mode), i32w(p.n_dims), i32w(p.n_ctx_orig), f32w(p.base), f32w(p.freq_scale),
                                   f32w(p.ext_factor), f32w(p.attn_factor), f32w(p.beta_fast), f32w(p.beta_slow)};
          for (int nth : {1, 2, 4}) {
            const char* e = run_op(Op::ROPE, ins, {&o}, pw, SimdLevel::Scalar, nth);
            EXPECT(!e, "rope refused: %s", e);
            expect_all(fmt("rope mode=%d nDims=%d ext=%g layout=%d ff=%d nTok=%lld nth=%d", p.mode, p.n_dims,
                           p.ext_factor, layout, with_ff, (long long)n_tok, nth)
                           .c_str(),
                       o, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
                         return ref_rope(a, pos, with_ff ? &ff : nullptr, p, i0, i1, i2, i3);
                       },
                       2e-6, 2e-6);
          }
        }
      }
    }
  }
  // In place (output aliases a).
  {
    TT a(DType::F32, {16, 2, 3});
    a.fill_random(rng);
    TT ref = a;
    ref.t.data = ref.store.data() + ref.lead;
    TT pos(DType::I32, {3});
    for (int k = 0; k < 3; k++) pos.set(k, 0, 0, 0, k + 7);
    std::vector<uint32_t> pw{i32w(0), i32w(16), i32w(0), f32w(10000), f32w(1), f32w(0), f32w(1), f32w(32), f32w(1)};
    EXPECT(!run_op(Op::ROPE, {&a, &pos}, {&a}, pw, SimdLevel::Scalar, 2), "rope in place");
    RopeP p{0, 16, 0, 10000, 1, 0, 1, 32, 1};
    expect_all("rope in place", a, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
      return ref_rope(ref, pos, nullptr, p, i0, i1, i2, i3);
    }, 2e-6, 2e-6);
  }
  // Refusals.
  {
    TT a(DType::F16, {8, 1, 2}), pos(DType::I32, {2}), o(DType::F32, {8, 1, 2});
    std::vector<uint32_t> pw{i32w(0), i32w(8), i32w(0), f32w(10000), f32w(1), f32w(0), f32w(1), f32w(32), f32w(1)};
    const char* e = run_op(Op::ROPE, {&a, &pos}, {&o}, pw);
    EXPECT(e && std::strstr(e, "rope: a must be F32, got F16"), "rope F16: %s", e ? e : "null");
    TT a2(DType::F32, {8, 1, 2});
    pw[1] = i32w(7);
    e = run_op(Op::ROPE, {&a2, &pos}, {&o}, pw);
    EXPECT(e && std::strstr(e, "nDims"), "rope odd nDims: %s", e ? e : "null");
    pw[1] = i32w(8);
    pw[0] = i32w(1);
    e = run_op(Op::ROPE, {&a2, &pos}, {&o}, pw);
    EXPECT(e && std::strstr(e, "mode"), "rope mode 1: %s", e ? e : "null");
  }
  return finish("ops_rope_test");
}
