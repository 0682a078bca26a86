// Checks the NEON dot products against their scalar twins (AArch64 only). Cross-built and run
// under qemu by check-arm64.sh on x86 machines:  bash native/cpu/tests/check-arm64.sh
//
// For every dtype neon_vec_dot has a kernel for, on random valid weight blocks (random bytes, f16
// scale fields set to modest finite values) and activations quantized by the scalar quantizer, at
// several block counts and nc = 1..4: the integer block types must give the scalar kernel's floats
// bit for bit; F32/F16/BF16 (summed in another order) must agree within 1e-6·Σ|w·a|·√n/4.
// A type listed in kClaimed without a NEON kernel fails the test, and so does a kernel for a type
// this test has no weight-building rule for.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "../../common/fp16.h"
#include "../quants_internal.h"
#include "random_blocks.h"

namespace q = minfer::cpu::q;
using minfer::program::DType;

static int failures = 0;
#define CHECK(c, ...)                    \
  do {                                   \
    if (!(c)) {                          \
      failures++;                        \
      std::printf("FAIL: " __VA_ARGS__); \
      std::printf("\n");                 \
    }                                    \
  } while (0)

// The types the NEON code claims to cover.
static const DType kClaimed[] = {
    DType::F32,  DType::F16,  DType::BF16, DType::Q4_0,   DType::Q4_1,   DType::Q5_0,  DType::Q5_1,
    DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K,   DType::Q5_K,   DType::Q6_K,  DType::IQ4_NL,
    DType::IQ4_XS, DType::MXFP4, DType::TQ1_0, DType::TQ2_0, DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S,
    DType::IQ3_XXS, DType::IQ3_S, DType::IQ1_S, DType::IQ1_M,
};

static bool is_float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// n elements of weights of type t; `vals` gets the f32 values for float types (for Σ|w·a|).
static bool make_weights(DType t, int64_t n, std::mt19937& rng, std::vector<uint8_t>& w, std::vector<float>& vals) {
  const q::WeightTraits& tr = q::weight_traits(t);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  w.assign(static_cast<size_t>(n / tr.block) * tr.type_size, 0);
  if (is_float_type(t)) {
    vals.resize(n);
    for (int64_t i = 0; i < n; i++) {
      float v = nd(rng);
      if (t == DType::F16) v = minfer::fp16_to_f32(minfer::f32_to_fp16(v));
      if (t == DType::BF16) v = minfer::bf16_to_f32(minfer::f32_to_bf16(v));
      vals[i] = v;
      if (t == DType::F32) std::memcpy(&w[4 * i], &v, 4);
      const uint16_t h = t == DType::F16 ? minfer::f32_to_fp16(v) : minfer::f32_to_bf16(v);
      if (t != DType::F32) std::memcpy(&w[2 * i], &h, 2);
    }
    return true;
  }
  if (tr.act == q::ActFormat::F32) return false;  // (no block layout this test knows)
  std::uniform_int_distribution<int> bd(0, 255);
  for (auto& b : w) b = static_cast<uint8_t>(bd(rng));
  for (size_t blk = 0; blk < w.size() / tr.type_size; blk++)
    minfer::cpu::test::set_scale_fields(t, w.data() + blk * tr.type_size, rng);
  return true;
}

static void test_act_quant() {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t n : {32, 64, 256, 4096}) {
    std::vector<float> a(n);
    for (auto& v : a) v = nd(rng);
    for (int j = 0; j < 32; j++) a[j] = (j - 8) * 0.5f;  // exact .5 ties against 1/d
    const size_t bytes = q::act_row_bytes(q::ActFormat::Q8A, n);
    std::vector<uint8_t> qa(bytes), qb(bytes, 0xcd);
    q::quantize_q8a_scalar(a.data(), qa.data(), n);
    q::quantize_q8a_neon(a.data(), qb.data(), n);
    CHECK(std::memcmp(qa.data(), qb.data(), bytes) == 0, "q8a n=%lld differs", (long long)n);
  }
}

// NEON vs scalar for type t at every block count and nc; returns the cases run.
static int test_type(DType t, q::VecDotFn neon, std::mt19937& rng) {
  const q::WeightTraits& tr = q::weight_traits(t);
  const char* name = minfer::program::dtype_name(t);
  CHECK(tr.supported && tr.dot[0], "%s: no scalar kernel", name);
  CHECK(tr.dot[1] == neon, "%s: weight_traits dot[1] is not neon_vec_dot's kernel", name);
  if (!tr.supported || !tr.dot[0]) return 0;
  const bool exact = !is_float_type(t);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const std::vector<int64_t> counts = tr.block == 1 ? std::vector<int64_t>{1, 3, 17, 100, 4096}
                                                    : std::vector<int64_t>{1, 3, 17};
  int cases = 0;
  for (int64_t blocks : counts) {
    const int64_t n = blocks * tr.block;
    std::vector<uint8_t> w;
    std::vector<float> wv;
    if (!make_weights(t, n, rng, w, wv)) {
      CHECK(false, "%s: neon_vec_dot has a kernel but this test builds no weights for it", name);
      return cases;
    }
    std::vector<float> x(static_cast<size_t>(n * q::kMaxCols));
    for (size_t i = 0; i < x.size(); i++) x[i] = nd(rng) * (i % 97 == 0 ? 8.0f : 1.0f);
    const size_t arow = q::act_row_bytes(tr.act, n);
    std::vector<uint8_t> act(arow * q::kMaxCols);
    for (int c = 0; c < q::kMaxCols; c++)
      q::quantize_act(tr.act, static_cast<minfer::cpu::SimdLevel>(0), x.data() + c * n, act.data() + c * arow, n);
    for (int nc = 1; nc <= q::kMaxCols; nc++) {
      float want[q::kMaxCols], got[q::kMaxCols];
      std::memset(got, 0xcd, sizeof got);
      tr.dot[0](n, w.data(), act.data(), arow, nc, want);
      neon(n, w.data(), act.data(), arow, nc, got);
      cases++;
      for (int c = 0; c < nc; c++) {
        if (exact) {
          CHECK(std::memcmp(&want[c], &got[c], 4) == 0, "%s n=%lld nc=%d col %d: neon %.9g vs scalar %.9g (not bit-exact)",
                name, (long long)n, nc, c, got[c], want[c]);
        } else {
          double mag = 0;
          for (int64_t i = 0; i < n; i++) mag += std::fabs(static_cast<double>(wv[i]) * x[c * n + i]);
          const double tol = 1e-6 * mag * std::max(1.0, std::sqrt(static_cast<double>(n)) / 4);
          CHECK(std::fabs(static_cast<double>(want[c]) - got[c]) <= tol,
                "%s n=%lld nc=%d col %d: neon %.9g vs scalar %.9g (tol %.3g)", name, (long long)n, nc, c, got[c],
                want[c], tol);
        }
      }
    }
  }
  return cases;
}

int main() {
  test_act_quant();
  for (DType t : kClaimed)
    CHECK(q::neon_vec_dot(t) != nullptr, "%s: claimed but neon_vec_dot has no kernel", minfer::program::dtype_name(t));
  std::mt19937 rng(11);
  int types = 0, cases = 0;
  for (int id = 0; id < 64; id++) {
    const DType t = static_cast<DType>(id);
    const q::VecDotFn neon = q::neon_vec_dot(t);
    if (!neon) continue;
    const int run = test_type(t, neon, rng);
    std::printf("  %-7s %2d cases%s\n", minfer::program::dtype_name(t), run, is_float_type(t) ? "" : " (bit-exact)");
    types++;
    cases += run;
  }
  std::printf("neon_test: %d types, %d cases, %d failures\n", types, cases, failures);
  return failures == 0 ? 0 : 1;
}
