// Standalone tests of quants*.cpp:
//  1. dequantize_row / quantize_row against vectors written by the TypeScript reference
//     (quant_vectors.mjs): bit-exact values and bytes.
//  2. Activation quantizers: every SIMD level produces the scalar bytes.
//  3. vec_dot of every weight type at every level (and 1..kMaxCols columns) against a double-precision
//     dot of the dequantized weights with the f32 activations, within the bound the activation
//     quantization allows; SIMD against scalar within float-rounding noise.
// Build and run: see native/cpu/tests/Makefile (make -C native/cpu/tests quant).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../../common/fp16.h"
#include "random_blocks.h"
using minfer::cpu::test::set_scale_fields;
#include "../kernel.h"
#include "../quants.h"
#include "../quants_internal.h"

using namespace minfer;
using namespace minfer::cpu;
using program::DType;

static int g_fail = 0;
#define CHECK(cond, ...)                  \
  do {                                    \
    if (!(cond)) {                        \
      g_fail++;                           \
      std::printf("FAIL %s:%d: ", __FILE__, __LINE__); \
      std::printf(__VA_ARGS__);           \
      std::printf("\n");                  \
    }                                     \
  } while (0)

static const char* name_of(DType t) { return program::dtype_name(t); }

static bool cpu_has_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"); }
static bool cpu_has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vnni");
}

static void test_vectors(const char* path) {
  FILE* f = std::fopen(path, "rb");
  if (!f) {
    std::printf("SKIP TS vectors: cannot open %s (run quant_vectors.mjs)\n", path);
    g_fail++;
    return;
  }
  int nrec = 0, ndeq = 0, nq = 0;
  int32_t h[4];
  while (std::fread(h, 4, 4, f) == 4) {
    const int kind = h[0], n = h[2], nbytes = h[3];
    const DType t = static_cast<DType>(h[1]);
    std::vector<uint8_t> bytes(nbytes);
    std::vector<float> vals(n);
    if (std::fread(bytes.data(), 1, nbytes, f) != static_cast<size_t>(nbytes) ||
        std::fread(vals.data(), 4, n, f) != static_cast<size_t>(n)) {
      CHECK(false, "truncated vector file");
      break;
    }
    nrec++;
    if (kind == 0) {
      ndeq++;
      CHECK(has_dequantize(t), "has_dequantize(%s)", name_of(t));
      std::vector<float> out(n);
      dequantize_row(t, bytes.data(), out.data(), n);
      int bad = 0;
      for (int i = 0; i < n; i++) {
        uint32_t a, b;
        std::memcpy(&a, &out[i], 4);
        std::memcpy(&b, &vals[i], 4);
        const bool both_nan = std::isnan(out[i]) && std::isnan(vals[i]);
        if (a != b && !both_nan) {
          if (bad++ < 3) CHECK(false, "dequantize %s [%d]: got %.9g want %.9g", name_of(t), i, out[i], vals[i]);
        }
      }
      if (bad) std::printf("  dequantize %s: %d/%d mismatches\n", name_of(t), bad, n);
    } else {
      nq++;
      CHECK(has_quantize(t), "has_quantize(%s)", name_of(t));
      std::vector<uint8_t> out(nbytes, 0xcd);
      quantize_row(t, vals.data(), out.data(), n);
      int bad = 0;
      for (int i = 0; i < nbytes; i++)
        if (out[i] != bytes[i] && bad++ < 3)
          CHECK(false, "quantize %s byte %d: got %02x want %02x", name_of(t), i, out[i], bytes[i]);
      if (bad) std::printf("  quantize %s: %d/%d byte mismatches\n", name_of(t), bad, nbytes);
    }
  }
  std::fclose(f);
  std::printf("TS vectors: %d records (%d dequantize, %d quantize) checked\n", nrec, ndeq, nq);
}

// Weight rows of type t (m rows of k), realistic where quantize_row supports t, else random
// bytes with bounded scales. Returns bytes; fills `deq` with the dequantized values.
static std::vector<uint8_t> make_weights(DType t, int64_t k, int64_t m, std::mt19937& rng, std::vector<float>& deq) {
  const q::WeightTraits& tr = q::weight_traits(t);
  const size_t row = static_cast<size_t>(k / tr.block) * tr.type_size;
  std::vector<uint8_t> w(row * m);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> bd(0, 255);
  if (has_quantize(t)) {
    std::vector<float> x(k);
    for (int64_t r = 0; r < m; r++) {
      for (auto& v : x) v = nd(rng) * 0.05f;
      quantize_row(t, x.data(), w.data() + r * row, k);
    }
  } else {
    for (auto& b : w) b = static_cast<uint8_t>(bd(rng));
    // Bounded scale fields.
    for (size_t b = 0; b < w.size() / tr.type_size; b++) set_scale_fields(t, w.data() + b * tr.type_size, rng);
  }
  // Q8_0: include the extreme code -128 in one block (valid bytes llama.cpp could store).
  if (t == DType::Q8_0) w[2 + 5] = 0x80;
  deq.resize(static_cast<size_t>(k * m));
  for (int64_t r = 0; r < m; r++) dequantize_row(t, w.data() + r * row, deq.data() + r * k, k);
  return w;
}

static void test_act_quant() {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t n = 4096;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; i++) x[i] = nd(rng) * (i % 300 == 0 ? 40.0f : 1.0f);
  for (int i = 0; i < 32; i++) x[i] = 0.0f;      // zero block
  for (int i = 32; i < 64; i++) x[i] = (i - 40) * 0.5f;  // exact .5 ties against 1/d
  int levels = 1 + (cpu_has_avx2() ? 1 : 0) + (cpu_has_avx512() && cpu_has_avx2() ? 1 : 0);
  for (q::ActFormat fmt : {q::ActFormat::Q8A, q::ActFormat::Q8K}) {
    const size_t bytes = q::act_row_bytes(fmt, n);
    std::vector<uint8_t> ref(bytes), got(bytes);
    q::quantize_act(fmt, SimdLevel::Scalar, x.data(), ref.data(), n);
    for (int l = 1; l < levels; l++) {
      std::memset(got.data(), 0xcd, bytes);
      q::quantize_act(fmt, static_cast<SimdLevel>(l), x.data(), got.data(), n);
      CHECK(std::memcmp(ref.data(), got.data(), bytes) == 0, "activation format %d level %d differs from scalar",
            static_cast<int>(fmt), l);
    }
    // Reconstruction error within half a step.
    double worst = 0;
    const int blk = q::act_block(fmt);
    for (int64_t b = 0; b < n / blk; b++) {
      float d;
      const int8_t* qs;
      if (fmt == q::ActFormat::Q8A) {
        auto* y = reinterpret_cast<const q::BlockQ8A*>(ref.data()) + b;
        d = y->d;
        qs = y->qs;
        CHECK(fp16_to_f32(f32_to_fp16(d)) == d, "Q8A scale %g is not an f16 value (llama.cpp's q8_0 holds it as f16)",
              static_cast<double>(d));
        int s = 0;
        for (int j = 0; j < 32; j++) s += qs[j];
        CHECK(std::fabs(y->s - d * s) <= 1e-6f * std::fabs(d * s), "Q8A sum");
      } else {
        auto* y = reinterpret_cast<const q::BlockQ8K*>(ref.data()) + b;
        d = y->d;
        qs = y->qs;
        for (int g = 0; g < 16; g++) {
          int s = 0;
          for (int j = 0; j < 16; j++) s += qs[16 * g + j];
          CHECK(s == y->bsums[g], "Q8K bsums");
        }
      }
      for (int j = 0; j < blk; j++) {
        const double e = std::fabs(static_cast<double>(x[b * blk + j]) - static_cast<double>(d) * qs[j]);
        if (d > 0) worst = std::max(worst, e / d);
      }
    }
    // Q8A: q is rounded with 1/d but the block keeps d at f16 precision (≤ 2^-11 relative), which
    // moves |q| ≤ 127 steps by at most 127 · 2^-11 steps more.
    const double bound = 0.5 + (fmt == q::ActFormat::Q8A ? 127.0 / 2048.0 : 0.0) + 1e-4;
    CHECK(worst <= bound, "activation reconstruction error %.4f steps (bound %.4f)", worst, bound);
  }
  std::printf("activation quantizers: %d levels agree bytewise\n", levels);
}

// act_scale_f16 against the f16 conversion of common/fp16.h over normal, subnormal and tie values.
static void test_act_scale_f16() {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> e(-30.0f, 15.99f);
  int n = 0;
  auto check = [&](float d) {
    const float want = fp16_to_f32(f32_to_fp16(d));
    CHECK(q::act_scale_f16(d) == want, "act_scale_f16(%a) = %a, f16 round trip %a", static_cast<double>(d),
          static_cast<double>(q::act_scale_f16(d)), static_cast<double>(want));
    n++;
  };
  for (int i = 0; i < 200000; i++) check(std::exp2(e(rng)));
  for (int k = 0; k < 4096; k++) check(static_cast<float>(k) / 16777216.0f + 0.5f / 16777216.0f);  // subnormal ties
  for (int k = 1; k < 4096; k++) check(std::ldexp(1.0f + (2 * k + 1) / 2048.0f / 2.0f, -3));  // normal ties
  check(0.0f);
  // Past f16's range a scale is kept as is (an activation block of |x| ≥ 8.3e6), never made inf.
  CHECK(q::act_scale_f16(70000.0f) == 70000.0f, "act_scale_f16 beyond the f16 range");
  std::printf("act_scale_f16: %d values equal the f16 round trip\n", n);
}

static bool bit_exact_types(DType t) {
  return t == DType::IQ4_NL || t == DType::IQ4_XS || t == DType::MXFP4 || t == DType::IQ2_XXS || t == DType::IQ2_XS ||
         t == DType::IQ2_S || t == DType::IQ3_XXS || t == DType::IQ3_S ||
         t == DType::IQ1_S || t == DType::IQ1_M || t == DType::TQ1_0 || t == DType::TQ2_0;
}

static void test_vec_dot() {
  const DType types[] = {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                         DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K,
                         DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S, DType::IQ3_XXS, DType::IQ3_S, DType::IQ1_S,
                         DType::IQ1_M, DType::IQ4_NL, DType::IQ4_XS, DType::TQ1_0, DType::TQ2_0, DType::MXFP4};
  const bool avx2 = cpu_has_avx2(), avx512 = avx2 && cpu_has_avx512();
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (DType t : types) {
    const q::WeightTraits& tr = q::weight_traits(t);
    for (int64_t k : {int64_t(256), int64_t(768), int64_t(4864)}) {
      // Odd lengths for the float types; 27 blocks (not a multiple of 4 or 8) for the 32-element ones.
      const int64_t kk = (tr.block == 1) ? k + 13 : (tr.block == 32 && k == 768) ? k + 96 : k;
      const int m = 3, ncol = 9;
      std::vector<float> deq;
      std::vector<uint8_t> w = make_weights(t, kk, m, rng, deq);
      const size_t wrow = static_cast<size_t>(kk / tr.block) * tr.type_size;
      std::vector<float> x(static_cast<size_t>(kk * ncol));
      for (size_t i = 0; i < x.size(); i++) x[i] = nd(rng) * (i % 97 == 0 ? 8.0f : 1.0f);
      const size_t arow = q::act_row_bytes(tr.act, kk);
      std::vector<uint8_t> act(arow * ncol);
      for (int c = 0; c < ncol; c++) q::quantize_act(tr.act, SimdLevel::Scalar, x.data() + c * kk, act.data() + c * arow, kk);
      double worst_ratio = 0, worst_simd = 0;
      for (int r = 0; r < m; r++) {
        // Reference and the bound allowed by the activation quantization.
        std::vector<double> ref(ncol), bound(ncol), mag(ncol);
        const int ab = q::act_block(tr.act);
        for (int c = 0; c < ncol; c++) {
          double s = 0, b = 0, g = 0;
          for (int64_t i0 = 0; i0 < kk; i0 += ab) {
            double amax = 0;
            for (int j = 0; j < ab; j++) amax = std::max(amax, std::fabs(static_cast<double>(x[c * kk + i0 + j])));
            for (int j = 0; j < ab; j++) {
              const double wv = deq[r * kk + i0 + j], xv = x[c * kk + i0 + j];
              s += wv * xv;
              g += std::fabs(wv * xv);
              if (tr.act != q::ActFormat::F32) b += std::fabs(wv) * amax / 254.0;
            }
          }
          ref[c] = s;
          mag[c] = g;
          bound[c] = b * 1.001 + 2e-5 * g + 1e-30;
        }
        float outs[3][16];
        // Types whose SIMD kernels keep the scalar kernel's float operations and their order
        // (quants_iq4_x86.h): every level and every nc must give the scalar nc = 1 floats exactly.
        const bool bit_exact = bit_exact_types(t);
        const int nlev = 1 + avx2 + avx512;
        for (int l = 0; l < nlev; l++) {
          q::VecDotFn fn = tr.dot[l];
          if (!fn) continue;  // no kernel at this level (scalar-only types): nothing more to compare
          // nc within the vec_dot contract (1..kMaxCols); 9 columns in groups of nc leave a
          // partial last group for nc = 2 and 4.
          for (int nc : {1, 2, 3, q::kMaxCols}) {
            float o[16];
            for (int c0 = 0; c0 < ncol; c0 += nc) {
              const int n_here = std::min(nc, ncol - c0);
              fn(kk, w.data() + r * wrow, act.data() + c0 * arow, arow, n_here, o + c0);
            }
            for (int c = 0; c < ncol; c++) {
              const double err = std::fabs(o[c] - ref[c]);
              worst_ratio = std::max(worst_ratio, err / bound[c]);
              CHECK(err <= bound[c], "%s k=%lld level %d nc %d col %d: got %.7g want %.7g (bound %.3g)", name_of(t),
                    (long long)kk, l, nc, c, o[c], ref[c], bound[c]);
              if (bit_exact && (l > 0 || nc > 1))
                CHECK(std::memcmp(&o[c], &outs[0][c], sizeof(float)) == 0,
                      "%s k=%lld level %d nc %d col %d: %.9g is not the scalar kernel's %.9g (bit-exact types)",
                      name_of(t), (long long)kk, l, nc, c, o[c], outs[0][c]);
              // Column invariance: a column's float is the same whatever the group it is computed
              // in (what greedy identity under speculative decoding and batched serving needs).
              if (nc == 1) outs[l][c] = o[c];
              else
                CHECK(std::memcmp(&o[c], &outs[l][c], sizeof(float)) == 0,
                      "%s k=%lld level %d: nc=%d gives %.9g, nc=1 %.9g (column-variant)", name_of(t), (long long)kk, l,
                      nc, o[c], outs[l][c]);
            }
          }
          if (l > 0)
            for (int c = 0; c < ncol; c++) {
              const double dd = std::fabs(outs[l][c] - outs[0][c]) / (mag[c] + 1e-30);
              worst_simd = std::max(worst_simd, dd);
              CHECK(dd <= 2e-6, "%s k=%lld level %d vs scalar col %d: %.9g vs %.9g", name_of(t), (long long)kk, l, c,
                    outs[l][c], outs[0][c]);
            }
        }
      }
      if (k == 4864 && !tr.dot[1] && !tr.dot[2])
        std::printf("vec_dot %-7s k=%-5lld  err/bound max %.3f  (scalar kernel only)\n", name_of(t), (long long)kk,
                    worst_ratio);
      else if (k == 4864)
        std::printf("vec_dot %-7s k=%-5lld  err/bound max %.3f  |simd-scalar|/Σ|w·x| max %.2e%s\n", name_of(t),
                    (long long)kk, worst_ratio, worst_simd, bit_exact_types(t) ? "  (bit-exact, every level and nc)" : "");
    }
  }
}

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "/tmp/minfer_quant_vectors.bin";
  std::printf("CPU: avx2=%d avx512(f/bw/vl/dq/vnni)=%d\n", cpu_has_avx2(), cpu_has_avx512());
  test_vectors(path);
  test_act_scale_f16();
  test_act_quant();
  test_vec_dot();
  if (g_fail) {
    std::printf("%d FAILURES\n", g_fail);
    return 1;
  }
  std::printf("quant_test: all passed\n");
  return 0;
}
