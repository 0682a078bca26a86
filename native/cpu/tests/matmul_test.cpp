// Standalone tests of the MUL_MAT, MUL_MAT_ADD, MUL_MAT_MULTI (with and without addends), MUL_MAT_ID
// and GET_ROWS kernels, run through their registered KernelDefs by a tiny phase/barrier executor
// (threads 1..3, every SIMD level the CPU has), against double-precision references on the
// dequantized weights.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../../common/fp16.h"
#include "random_blocks.h"
using minfer::cpu::test::set_scale_fields;
#include "../gemm.h"
#include "../kernel.h"
#include "../quants.h"
#include "../quants_internal.h"

using namespace minfer;
using namespace minfer::cpu;
using program::DType;
using program::Op;

namespace minfer::cpu {
int test_kernel_errors();
std::string test_first_error();
void test_reset_errors();
}  // namespace minfer::cpu

static int g_fail = 0;
#define CHECK(cond, ...)                                 \
  do {                                                   \
    if (!(cond)) {                                       \
      g_fail++;                                          \
      std::printf("FAIL %s:%d: ", __FILE__, __LINE__);   \
      std::printf(__VA_ARGS__);                          \
      std::printf("\n");                                 \
    }                                                    \
  } while (0)

static int max_level() {
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vnni");
  return avx512 ? 2 : avx2 ? 1 : 0;
}

struct Buf {
  std::vector<uint8_t> bytes;
  Tensor t;
};

static void set_contiguous(Tensor& t, DType dt, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
  int64_t block = 1, ts = 4;
  for (const auto& l : program::kBlockLayouts)
    if (l.dtype == static_cast<int32_t>(dt)) block = l.block_size, ts = l.type_size;
  t.dtype = dt;
  t.ne[0] = ne0, t.ne[1] = ne1, t.ne[2] = ne2, t.ne[3] = ne3;
  t.nb[0] = ts;
  t.nb[1] = ts * (ne0 / block);
  t.nb[2] = t.nb[1] * ne1;
  t.nb[3] = t.nb[2] * ne2;
}

static void execute(Op op, std::vector<const Tensor*> in, std::vector<const Tensor*> out, int nth, SimdLevel simd,
                    bool panel_gemm = true) {
  const KernelDef* kd = find_kernel(op);
  NodeArgs args{};
  args.op = op;
  args.n_inputs = static_cast<int>(in.size());
  args.n_outputs = static_cast<int>(out.size());
  for (size_t i = 0; i < in.size(); i++) args.in[i] = in[i];
  for (size_t i = 0; i < out.size(); i++) args.out[i] = out[i];
  static const uint32_t no_params[16] = {0};
  args.params = no_params;
  args.simd = simd;
  args.panel_gemm = panel_gemm;
  const char* err = kd->check(args);
  if (err) {
    CHECK(false, "check refused: %s", err);
    return;
  }
  std::vector<uint8_t> scratch(kd->scratch_bytes(args, nth) + 1);
  std::memset(scratch.data(), 0xa5, scratch.size());
  args.scratch = scratch.data();
  for (int p = 0; p < kd->n_phases; p++) {
    std::vector<std::thread> th;
    for (int i = 1; i < nth; i++) th.emplace_back([&, i] { kd->run(args, p, i, nth); });
    kd->run(args, p, 0, nth);
    for (auto& t : th) t.join();
  }
}

static const char* check_only(Op op, std::vector<const Tensor*> in, std::vector<const Tensor*> out) {
  NodeArgs args{};
  args.op = op;
  args.n_inputs = static_cast<int>(in.size());
  args.n_outputs = static_cast<int>(out.size());
  for (size_t i = 0; i < in.size(); i++) args.in[i] = in[i];
  for (size_t i = 0; i < out.size(); i++) args.out[i] = out[i];
  return find_kernel(op)->check(args);
}

// Random weights [k, m, e2] of dtype dt; deq receives the f32 values: quantize_row's blocks where
// dt has a quantizer, else random bytes with bounded scales (set_scale_fields).
static Buf make_weights(DType dt, int64_t k, int64_t m, int64_t e2, std::mt19937& rng, std::vector<float>& deq) {
  Buf w;
  set_contiguous(w.t, dt, k, m, e2, 1);
  const int64_t rows = m * e2;
  w.bytes.resize(static_cast<size_t>(w.t.nb[1] * rows));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> bd(0, 255);
  if (has_quantize(dt)) {
    std::vector<float> x(k);
    for (int64_t r = 0; r < rows; r++) {
      for (auto& v : x) v = nd(rng) * 0.05f;
      quantize_row(dt, x.data(), w.bytes.data() + r * w.t.nb[1], k);
    }
  } else {
    for (auto& b : w.bytes) b = static_cast<uint8_t>(bd(rng));
    for (size_t b = 0; b < w.bytes.size() / w.t.nb[0]; b++) set_scale_fields(dt, w.bytes.data() + b * w.t.nb[0], rng);
  }
  w.t.data = w.bytes.data();
  deq.resize(static_cast<size_t>(k * rows));
  for (int64_t r = 0; r < rows; r++) dequantize_row(dt, w.bytes.data() + r * w.t.nb[1], deq.data() + r * k, k);
  return w;
}

// Activations [k, n, b2, b3] as F32 or F16, optionally with padded (non-contiguous) strides.
static Buf make_act(DType dt, int64_t k, int64_t n, int64_t b2, int64_t b3, bool padded, std::mt19937& rng,
                    std::vector<float>& vals) {
  Buf b;
  set_contiguous(b.t, dt, k, n, b2, b3);
  const int64_t es = dt == DType::F32 ? 4 : 2;
  if (padded) {  // rows 3 elements apart, planes with a gap, dims 2/3 swapped in memory
    b.t.nb[1] = (k + 3) * es;
    b.t.nb[3] = b.t.nb[1] * n + 64;
    b.t.nb[2] = b.t.nb[3] * b3 + 32;
  }
  const int64_t span = b.t.nb[1] * (n - 1) + b.t.nb[2] * (b2 - 1) + b.t.nb[3] * (b3 - 1) + k * es;
  b.bytes.assign(static_cast<size_t>(span), 0xff);
  b.t.data = b.bytes.data();
  vals.resize(static_cast<size_t>(k * n * b2 * b3));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t i3 = 0; i3 < b3; i3++)
    for (int64_t i2 = 0; i2 < b2; i2++)
      for (int64_t i1 = 0; i1 < n; i1++)
        for (int64_t i0 = 0; i0 < k; i0++) {
          float v = nd(rng);
          uint8_t* p = b.bytes.data() + i0 * es + i1 * b.t.nb[1] + i2 * b.t.nb[2] + i3 * b.t.nb[3];
          if (dt == DType::F32) std::memcpy(p, &v, 4);
          else {
            const uint16_t h = f32_to_fp16(v);
            std::memcpy(p, &h, 2);
            v = fp16_to_f32(h);
          }
          vals[((i3 * b2 + i2) * n + i1) * k + i0] = v;
        }
  return b;
}

// |got - ref| within the activation-quantization bound of this dot.
static bool close(DType wt, const float* w, const float* x, int64_t k, float got, double* ratio) {
  const q::WeightTraits& tr = q::weight_traits(wt);
  const int ab = q::act_block(tr.act);
  double s = 0, g = 0, b = 0;
  for (int64_t i0 = 0; i0 < k; i0 += ab) {
    double amax = 0;
    for (int j = 0; j < ab; j++) amax = std::max(amax, std::fabs(static_cast<double>(x[i0 + j])));
    for (int j = 0; j < ab; j++) {
      s += static_cast<double>(w[i0 + j]) * x[i0 + j];
      g += std::fabs(static_cast<double>(w[i0 + j]) * x[i0 + j]);
      if (tr.act != q::ActFormat::F32) b += std::fabs(w[i0 + j]) * amax / 254.0;
    }
  }
  const double bound = b * 1.001 + 2e-5 * g + 1e-30;
  const double err = std::fabs(got - s);
  *ratio = std::max(*ratio, err / bound);
  return err <= bound;
}

static const DType kTypes[] = {DType::F32,     DType::F16,    DType::BF16,    DType::Q4_0,    DType::Q4_1,
                               DType::Q5_0,    DType::Q5_1,   DType::Q8_0,    DType::Q2_K,    DType::Q3_K,
                               DType::Q4_K,    DType::Q5_K,   DType::Q6_K,    DType::IQ2_XXS, DType::IQ2_XS,
                               DType::IQ2_S,   DType::IQ3_XXS, DType::IQ3_S,  DType::IQ1_S,   DType::IQ1_M,
                               DType::IQ4_NL,  DType::IQ4_XS, DType::TQ1_0,   DType::TQ2_0,   DType::MXFP4};
constexpr int kNumTypes = static_cast<int>(sizeof(kTypes) / sizeof(kTypes[0]));
// MUL_MAT_ID: a few established types and every i-quant / ternary / MXFP4 type.
static const DType kIdTypes[] = {DType::Q4_0,   DType::Q8_0,    DType::Q4_K,  DType::Q6_K,   DType::F16,
                                 DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S, DType::IQ3_XXS, DType::IQ3_S,
                                 DType::IQ1_S,  DType::IQ1_M,   DType::IQ4_NL, DType::IQ4_XS, DType::TQ1_0,
                                 DType::TQ2_0,  DType::MXFP4};
constexpr int kNumIdTypes = static_cast<int>(sizeof(kIdTypes) / sizeof(kIdTypes[0]));

static void test_mul_mat() {
  std::mt19937 rng(1);
  const int levels = max_level() + 1;
  int runs = 0;
  double worst = 0;
  struct Shape { int64_t k, m, n, a2, b2, b3; bool padded; DType bt; bool float_only; };
  const Shape shapes[] = {
      {512, 37, 1, 1, 1, 1, false, DType::F32, false},  // decode
      {256, 70, 9, 1, 1, 1, true, DType::F16, false},   // prefill-ish, F16 b, padded strides
      {512, 5, 6, 2, 4, 3, true, DType::F32, false},    // GQA broadcast over dims 2/3, few rows
      // float weights' panel GEMM: k not a multiple of 16, a last panel of 6 rows, every column
      // tile (12, 8, 4, 1) and two planes
      {40, 102, 31, 2, 2, 1, true, DType::F32, true},
  };
  for (DType dt : kTypes) {
    double worst_dt = 0;
    for (const Shape& s : shapes) {
      if (s.float_only && dt != DType::F32 && dt != DType::F16 && dt != DType::BF16) continue;
      std::vector<float> wv, xv;
      Buf w = make_weights(dt, s.k, s.m, s.a2, rng, wv);
      Buf b = make_act(s.bt, s.k, s.n, s.b2, s.b3, s.padded, rng, xv);
      Buf o;
      set_contiguous(o.t, DType::F32, s.m, s.n, s.b2, s.b3);
      o.bytes.resize(static_cast<size_t>(o.t.nb[3] * s.b3));
      o.t.data = o.bytes.data();
      std::vector<float> first;
      for (int l = 0; l < levels; l++)
        for (int nth : {1, 2, 3}) {
          std::memset(o.bytes.data(), 0xff, o.bytes.size());
          execute(Op::MUL_MAT, {&w.t, &b.t}, {&o.t}, nth, static_cast<SimdLevel>(l));
          runs++;
          const float* out = reinterpret_cast<const float*>(o.bytes.data());
          int bad = 0;
          for (int64_t i3 = 0; i3 < s.b3; i3++)
            for (int64_t i2 = 0; i2 < s.b2; i2++)
              for (int64_t in = 0; in < s.n; in++)
                for (int64_t im = 0; im < s.m; im++) {
                  const int64_t a2 = i2 / (s.b2 / s.a2);
                  const float got = out[((i3 * s.b2 + i2) * s.n + in) * s.m + im];
                  const float* wr = wv.data() + (a2 * s.m + im) * s.k;
                  const float* xr = xv.data() + ((i3 * s.b2 + i2) * s.n + in) * s.k;
                  if (!close(dt, wr, xr, s.k, got, &worst_dt) && bad++ < 2)
                    CHECK(false, "mul_mat %s k=%lld level %d nth %d [%lld,%lld,%lld,%lld] = %g", program::dtype_name(dt),
                          (long long)s.k, l, nth, (long long)im, (long long)in, (long long)i2, (long long)i3, got);
                }
          const std::vector<float> cur(out, out + s.m * s.n * s.b2 * s.b3);
          if (first.empty()) first = cur;
          else if (l == 0)  // same level, other thread count: identical results
            CHECK(std::memcmp(first.data(), cur.data(), cur.size() * 4) == 0, "mul_mat %s: thread count changes results", program::dtype_name(dt));
        }
    }
    std::printf("  mul_mat %-7s err/bound max %.3f\n", program::dtype_name(dt), worst_dt);
    worst = std::max(worst, worst_dt);
  }
  std::printf("mul_mat: %d runs (%d weight types × 3 shapes, float types × 4, × %d levels × 1-3 threads), err/bound max %.3f\n",
              runs, kNumTypes, levels, worst);

  // check() refusals.
  Buf w, b, o;
  set_contiguous(w.t, DType::Q4_0, 48, 4, 1, 1);
  set_contiguous(b.t, DType::F32, 48, 1, 1, 1);
  set_contiguous(o.t, DType::F32, 4, 1, 1, 1);
  const char* e = check_only(Op::MUL_MAT, {&w.t, &b.t}, {&o.t});
  CHECK(e && std::strstr(e, "blocks"), "k not a multiple of the block must be refused (%s)", e ? e : "null");
  set_contiguous(w.t, DType::Q8_K, 256, 4, 1, 1);
  set_contiguous(b.t, DType::F32, 256, 1, 1, 1);
  e = check_only(Op::MUL_MAT, {&w.t, &b.t}, {&o.t});
  CHECK(e != nullptr, "Q8_K weights must be refused");
  set_contiguous(w.t, DType::F16, 256, 4, 1, 1);
  w.t.nb[0] = 4;
  e = check_only(Op::MUL_MAT, {&w.t, &b.t}, {&o.t});
  CHECK(e && std::strstr(e, "contiguous"), "non-contiguous weight rows must be refused");
  std::printf("mul_mat check: refusals ok\n");
}

static void test_mul_mat_multi() {
  std::mt19937 rng(2);
  const int64_t k = 512, n = 5;
  const DType wt[3] = {DType::Q4_0, DType::Q4_K, DType::F16};
  const int64_t ms[3] = {33, 64, 17};
  std::vector<float> wv[3], xv;
  Buf w[3], o[3];
  for (int i = 0; i < 3; i++) {
    w[i] = make_weights(wt[i], k, ms[i], 1, rng, wv[i]);
    set_contiguous(o[i].t, DType::F32, ms[i], n, 1, 1);
    o[i].bytes.resize(static_cast<size_t>(ms[i] * n * 4));
    o[i].t.data = o[i].bytes.data();
  }
  Buf x = make_act(DType::F32, k, n, 1, 1, false, rng, xv);
  double worst = 0;
  for (int nw : {2, 3})
    for (int l = 0; l <= max_level(); l++)
      for (int nth : {1, 2}) {
        std::vector<const Tensor*> in = {&x.t}, out;
        for (int i = 0; i < nw; i++) in.push_back(&w[i].t), out.push_back(&o[i].t);
        execute(Op::MUL_MAT_MULTI, in, out, nth, static_cast<SimdLevel>(l));
        for (int i = 0; i < nw; i++) {
          const float* got = reinterpret_cast<const float*>(o[i].bytes.data());
          for (int64_t c = 0; c < n; c++)
            for (int64_t r = 0; r < ms[i]; r++)
              CHECK(close(wt[i], wv[i].data() + r * k, xv.data() + c * k, k, got[c * ms[i] + r], &worst),
                    "mul_mat_multi w%d [%lld,%lld] level %d", i, (long long)r, (long long)c, l);
        }
      }
  std::printf("mul_mat_multi: Q4_0 + Q4_K + F16 weights sharing x, err/bound max %.3f\n", worst);
}

// MUL_MAT_ADD must equal MUL_MAT followed by one float add of c (ADD) bit for bit, on every path
// (mat-vec, column split, panel GEMM), SIMD level and thread count, for c a bias, a full [m, n], a
// column scalar [1, n] (strided) and a per-plane bias.
static void test_mul_mat_add() {
  std::mt19937 rng(5);
  const int64_t k = 256, m = 70;
  int runs = 0;
  for (DType dt : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_0, DType::Q4_K})
    for (int64_t n : {int64_t(1), int64_t(19)})
      for (int cs = 0; cs < 4; cs++) {
        const int64_t b2 = cs == 3 ? 2 : 1;
        std::vector<float> wv, xv;
        Buf w = make_weights(dt, k, m, 1, rng, wv);
        Buf x = make_act(DType::F32, k, n, b2, 1, false, rng, xv);
        Buf c;
        const int64_t cne[4][3] = {{m, 1, 1}, {m, n, 1}, {1, n, 1}, {m, 1, b2}};
        set_contiguous(c.t, DType::F32, cne[cs][0], cne[cs][1], cne[cs][2], 1);
        if (cs == 2) c.t.nb[1] = 12, c.t.nb[2] = c.t.nb[3] = 12 * n;  // strided column scalars
        c.bytes.resize(static_cast<size_t>(c.t.nb[1] * cne[cs][1] * cne[cs][2] + 16));
        std::normal_distribution<float> nd(0.0f, 1.0f);
        for (size_t i = 0; i + 4 <= c.bytes.size(); i += 4) {
          const float v = nd(rng);
          std::memcpy(&c.bytes[i], &v, 4);
        }
        c.t.data = c.bytes.data();
        Buf o, f;
        for (Buf* t : {&o, &f}) {
          set_contiguous(t->t, DType::F32, m, n, b2, 1);
          t->bytes.resize(static_cast<size_t>(m * n * b2 * 4));
          t->t.data = t->bytes.data();
        }
        for (int l = 0; l <= max_level(); l++)
          for (int nth : {1, 2, 3}) {
            execute(Op::MUL_MAT, {&w.t, &x.t}, {&o.t}, nth, static_cast<SimdLevel>(l));
            std::memset(f.bytes.data(), 0xa5, f.bytes.size());
            execute(Op::MUL_MAT_ADD, {&w.t, &x.t, &c.t}, {&f.t}, nth, static_cast<SimdLevel>(l));
            bool same = true;
            for (int64_t i2 = 0; i2 < b2; i2++)
              for (int64_t j = 0; j < n; j++)
                for (int64_t r = 0; r < m; r++) {
                  const size_t at = static_cast<size_t>((i2 * n + j) * m + r) * 4;
                  float prod, cv, got;
                  std::memcpy(&prod, &o.bytes[at], 4);
                  std::memcpy(&got, &f.bytes[at], 4);
                  std::memcpy(&cv, c.bytes.data() + (r % c.t.ne[0]) * c.t.nb[0] + (j % c.t.ne[1]) * c.t.nb[1] +
                                        (i2 % c.t.ne[2]) * c.t.nb[2], 4);
                  const float want = prod + cv;
                  same = same && std::memcmp(&want, &got, 4) == 0;
                }
            CHECK(same, "mul_mat_add %s n=%lld c case %d level %d threads %d differs from mul_mat + add",
                  program::dtype_name(dt), (long long)n, cs, l, nth);
            runs++;
          }
      }
  Buf w, x, c, o;
  set_contiguous(w.t, DType::Q8_0, 64, 8, 1, 1);
  set_contiguous(x.t, DType::F32, 64, 3, 1, 1);
  set_contiguous(o.t, DType::F32, 8, 3, 1, 1);
  set_contiguous(c.t, DType::F32, 3, 1, 1, 1);
  const char* e = check_only(Op::MUL_MAT_ADD, {&w.t, &x.t, &c.t}, {&o.t});
  CHECK(e && std::strstr(e, "broadcast"), "c [3] over [8, 3] must be refused (%s)", e ? e : "null");
  set_contiguous(c.t, DType::F16, 8, 1, 1, 1);
  e = check_only(Op::MUL_MAT_ADD, {&w.t, &x.t, &c.t}, {&o.t});
  CHECK(e && std::strstr(e, "F32"), "an F16 c must be refused (%s)", e ? e : "null");
  std::printf("mul_mat_add: %d runs equal mul_mat + add bit for bit; refusals ok\n", runs);
}

// MUL_MAT_MULTI with addends c_1..c_n must equal MUL_MAT_MULTI followed by one float add of each
// c_i bit for bit: decode (row split) and prefill (panel GEMM when every weight has one, else the
// row/column split), every level, 1-3 threads; c_i a bias [m_i], the full [m_i, n] or strided
// column scalars [1, n].
static void test_mul_mat_multi_add() {
  std::mt19937 rng(6);
  const int64_t k = 256;
  const int64_t ms[3] = {70, 40, 33};
  int runs = 0;
  const DType sets[2][3] = {{DType::Q8_0, DType::Q4_0, DType::Q4_K}, {DType::F16, DType::Q8_0, DType::Q4_K}};
  for (const auto& wt : sets)
    for (int nw : {2, 3})
      for (int64_t n : {int64_t(1), int64_t(19)})
        for (int cs = 0; cs < 3; cs++) {
          std::vector<float> wv, xv;
          Buf w[3], c[3], o[3], f[3];
          for (int i = 0; i < nw; i++) w[i] = make_weights(wt[i], k, ms[i], 1, rng, wv);
          Buf x = make_act(DType::F32, k, n, 1, 1, false, rng, xv);
          std::normal_distribution<float> nd(0.0f, 1.0f);
          for (int i = 0; i < nw; i++) {
            const int64_t c0 = cs == 2 ? 1 : ms[i], c1 = cs == 0 ? 1 : n;
            set_contiguous(c[i].t, DType::F32, c0, c1, 1, 1);
            if (cs == 2) c[i].t.nb[1] = 12, c[i].t.nb[2] = c[i].t.nb[3] = 12 * n;  // strided column scalars
            c[i].bytes.resize(static_cast<size_t>(c[i].t.nb[1] * c1 + 16));
            for (size_t b = 0; b + 4 <= c[i].bytes.size(); b += 4) {
              const float v = nd(rng);
              std::memcpy(&c[i].bytes[b], &v, 4);
            }
            c[i].t.data = c[i].bytes.data();
            for (Buf* t : {&o[i], &f[i]}) {
              set_contiguous(t->t, DType::F32, ms[i], n, 1, 1);
              t->bytes.resize(static_cast<size_t>(ms[i] * n * 4));
              t->t.data = t->bytes.data();
            }
          }
          for (int l = 0; l <= max_level(); l++)
            for (int nth : {1, 2, 3}) {
              std::vector<const Tensor*> in = {&x.t}, in_c, out, out_c;
              for (int i = 0; i < nw; i++) in.push_back(&w[i].t), out.push_back(&o[i].t), out_c.push_back(&f[i].t);
              in_c = in;
              for (int i = 0; i < nw; i++) in_c.push_back(&c[i].t);
              execute(Op::MUL_MAT_MULTI, in, out, nth, static_cast<SimdLevel>(l));
              for (int i = 0; i < nw; i++) std::memset(f[i].bytes.data(), 0xa5, f[i].bytes.size());
              execute(Op::MUL_MAT_MULTI, in_c, out_c, nth, static_cast<SimdLevel>(l));
              bool same = true;
              for (int i = 0; i < nw; i++)
                for (int64_t j = 0; j < n; j++)
                  for (int64_t r = 0; r < ms[i]; r++) {
                    const size_t at = static_cast<size_t>(j * ms[i] + r) * 4;
                    float prod, cv, got;
                    std::memcpy(&prod, &o[i].bytes[at], 4);
                    std::memcpy(&got, &f[i].bytes[at], 4);
                    std::memcpy(&cv, c[i].bytes.data() + (r % c[i].t.ne[0]) * c[i].t.nb[0] + (j % c[i].t.ne[1]) * c[i].t.nb[1], 4);
                    const float want = prod + cv;
                    same = same && std::memcmp(&want, &got, 4) == 0;
                  }
              CHECK(same, "mul_mat_multi+c %s.. nw=%d n=%lld c case %d level %d threads %d differs from multi + add",
                    program::dtype_name(wt[0]), nw, (long long)n, cs, l, nth);
              runs++;
            }
        }
  // Refusals: a wrong input count, an addend that does not broadcast, an F16 addend.
  Buf x, w1, w2, c1, c2, o1, o2;
  set_contiguous(x.t, DType::F32, 64, 3, 1, 1);
  set_contiguous(w1.t, DType::Q8_0, 64, 8, 1, 1);
  set_contiguous(w2.t, DType::Q8_0, 64, 4, 1, 1);
  set_contiguous(o1.t, DType::F32, 8, 3, 1, 1);
  set_contiguous(o2.t, DType::F32, 4, 3, 1, 1);
  set_contiguous(c1.t, DType::F32, 8, 1, 1, 1);
  set_contiguous(c2.t, DType::F32, 3, 1, 1, 1);
  const char* e = check_only(Op::MUL_MAT_MULTI, {&x.t, &w1.t, &w2.t, &c1.t}, {&o1.t, &o2.t});
  CHECK(e && std::strstr(e, "one addend per weight"), "4 inputs for 2 outputs must be refused (%s)", e ? e : "null");
  e = check_only(Op::MUL_MAT_MULTI, {&x.t, &w1.t, &w2.t, &c1.t, &c2.t}, {&o1.t, &o2.t});
  CHECK(e && std::strstr(e, "c2 does not broadcast"), "c2 [3] over [4, 3] must be refused (%s)", e ? e : "null");
  set_contiguous(c1.t, DType::F16, 8, 1, 1, 1);
  e = check_only(Op::MUL_MAT_MULTI, {&x.t, &w1.t, &w2.t, &c1.t, &c2.t}, {&o1.t, &o2.t});
  CHECK(e && std::strstr(e, "c1 must be F32"), "an F16 c1 must be refused (%s)", e ? e : "null");
  std::printf("mul_mat_multi with addends: %d runs equal mul_mat_multi + add bit for bit; refusals ok\n", runs);
}

static void test_mul_mat_id() {
  std::mt19937 rng(3);
  const int64_t k = 256, m = 40, n_exp = 4, n_used = 2, n_tok = 5;
  double worst = 0;
  for (DType dt : kIdTypes)
    for (int64_t b1 : {int64_t(1), n_used}) {
      std::vector<float> wv, xv;
      Buf a = make_weights(dt, k, m, n_exp, rng, wv);
      Buf b = make_act(DType::F32, k, b1, n_tok, 1, false, rng, xv);
      Buf ids;
      set_contiguous(ids.t, DType::I32, n_used, n_tok, 1, 1);
      ids.bytes.resize(n_used * n_tok * 4);
      ids.t.data = ids.bytes.data();
      std::vector<int32_t> idv(n_used * n_tok);
      for (int64_t i = 0; i < n_used * n_tok; i++) idv[i] = static_cast<int32_t>((i * 7 + 3) % n_exp);
      idv[3] = idv[2];  // duplicates across tokens
      Buf o;
      set_contiguous(o.t, DType::F32, m, n_used, n_tok, 1);
      o.bytes.resize(m * n_used * n_tok * 4);
      o.t.data = o.bytes.data();
      for (int bad_case = 0; bad_case < 2; bad_case++) {
        std::vector<int32_t> cur = idv;
        if (bad_case) cur[4] = static_cast<int32_t>(n_exp), cur[7] = -1;
        std::memcpy(ids.bytes.data(), cur.data(), cur.size() * 4);
        for (int l = 0; l <= max_level(); l++)
          for (int nth : {1, 3}) {
            test_reset_errors();
            execute(Op::MUL_MAT_ID, {&a.t, &b.t, &ids.t}, {&o.t}, nth, static_cast<SimdLevel>(l));
            const float* got = reinterpret_cast<const float*>(o.bytes.data());
            for (int64_t t = 0; t < n_tok; t++)
              for (int64_t e = 0; e < n_used; e++) {
                const int32_t id = cur[t * n_used + e];
                const float* col = got + (t * n_used + e) * m;
                if (id < 0 || id >= n_exp) {
                  for (int64_t r = 0; r < m; r++) CHECK(std::isnan(col[r]), "invalid id → NaN");
                  continue;
                }
                const float* xr = xv.data() + (t * b1 + (b1 == 1 ? 0 : e)) * k;
                for (int64_t r = 0; r < m; r++)
                  CHECK(close(dt, wv.data() + (id * m + r) * k, xr, k, col[r], &worst), "mul_mat_id %s [%lld,%lld,%lld]",
                        program::dtype_name(dt), (long long)r, (long long)e, (long long)t);
              }
            CHECK((test_kernel_errors() > 0) == (bad_case == 1), "mul_mat_id error report (bad=%d, errors=%d)", bad_case,
                  test_kernel_errors());
          }
      }
    }
  std::printf("mul_mat_id: %d dtypes × b dim1 ∈ {1, nUsed}, invalid ids → NaN + report (\"%s\"), err/bound max %.3f\n",
              kNumIdTypes, test_first_error().c_str(), worst);
  test_reset_errors();
}

static void test_get_rows() {
  std::mt19937 rng(4);
  int cases = 0;
  for (DType dt : kTypes) {
    const int64_t k = 512, rows = 9, ne2 = 2;
    std::vector<float> wv;
    Buf a = make_weights(dt, k, rows, ne2, rng, wv);
    for (int64_t i1 : {int64_t(1), ne2}) {
      const int64_t n_idx = 6;
      Buf idx;
      set_contiguous(idx.t, DType::I32, n_idx, i1, 1, 1);
      std::vector<int32_t> iv(n_idx * i1);
      for (size_t i = 0; i < iv.size(); i++) iv[i] = static_cast<int32_t>((i * 5 + 1) % rows);
      iv[2] = static_cast<int32_t>(rows);  // out of range
      idx.bytes.resize(iv.size() * 4);
      std::memcpy(idx.bytes.data(), iv.data(), iv.size() * 4);
      idx.t.data = idx.bytes.data();
      Buf o;
      set_contiguous(o.t, DType::F32, k, n_idx, ne2, 1);
      o.bytes.resize(k * n_idx * ne2 * 4);
      o.t.data = o.bytes.data();
      for (int nth : {1, 2}) {
        test_reset_errors();
        execute(Op::GET_ROWS, {&a.t, &idx.t}, {&o.t}, nth, SimdLevel::Scalar);
        CHECK(test_kernel_errors() > 0, "get_rows must report the out-of-range index");
        const float* got = reinterpret_cast<const float*>(o.bytes.data());
        for (int64_t j = 0; j < ne2; j++)
          for (int64_t i = 0; i < n_idx; i++) {
            const int32_t id = iv[(i1 == 1 ? 0 : j) * n_idx + i];
            const float* row = got + (j * n_idx + i) * k;
            if (id >= rows) {
              CHECK(std::isnan(row[0]) && std::isnan(row[k - 1]), "get_rows bad index → NaN row");
              continue;
            }
            CHECK(std::memcmp(row, wv.data() + (j * rows + id) * k, k * 4) == 0, "get_rows %s row %lld,%lld", program::dtype_name(dt),
                  (long long)i, (long long)j);
          }
        cases++;
      }
    }
  }
  test_reset_errors();
  std::printf("get_rows: %d cases (%d dtypes, 1-D and 2-D index, out-of-range → NaN + report)\n", cases, kNumTypes);
}

// Without the panel GEMM (the runtime's panelGemm: false) a product with float weights gives each
// column the same bits whatever the number of columns it runs with (each column alone, and 37
// columns, on the dot-product kernel), at every level — what the engine's batching tests rely on.
// With it, 37 columns take the panel GEMM (another summation order, within test_mul_mat's bounds).
static void test_dot_only_invariance() {
  std::mt19937 rng(7);
  int runs = 0, differ = 0;
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (int64_t k : {40, 384, 1000}) {
      const int64_t m = 103, n = 37;
      std::vector<float> wv, xv;
      Buf w = make_weights(dt, k, m, 1, rng, wv);
      Buf b = make_act(DType::F32, k, n, 1, 1, false, rng, xv);
      for (int l = 0; l <= max_level(); l++)
        for (bool gemm : {false, true}) {
          Buf o;
          set_contiguous(o.t, DType::F32, m, n, 1, 1);
          o.bytes.resize(static_cast<size_t>(o.t.nb[2]));
          o.t.data = o.bytes.data();
          execute(Op::MUL_MAT, {&w.t, &b.t}, {&o.t}, 2, static_cast<SimdLevel>(l), gemm);
          for (int64_t c = 0; c < n; c++) {
            Buf b1 = b, o1;
            set_contiguous(b1.t, DType::F32, k, 1, 1, 1);
            b1.t.data = b.bytes.data() + c * b.t.nb[1];
            set_contiguous(o1.t, DType::F32, m, 1, 1, 1);
            o1.bytes.resize(static_cast<size_t>(m * 4));
            o1.t.data = o1.bytes.data();
            execute(Op::MUL_MAT, {&w.t, &b1.t}, {&o1.t}, 2, static_cast<SimdLevel>(l), gemm);
            const bool same = std::memcmp(o.bytes.data() + c * m * 4, o1.bytes.data(), static_cast<size_t>(m * 4)) == 0;
            if (!gemm) {
              runs++;
              CHECK(same, "mul_mat without the panel GEMM, dtype %d k=%lld level %d: column %lld of %lld differs from it alone",
                    (int)dt, (long long)k, l, (long long)c, (long long)n);
            } else if (!same) {
              differ++;
            }
          }
        }
    }
  std::printf("float weights without the panel GEMM: %d columns of 37-column products equal the column alone, bit "
              "for bit (with it, %d differ in some bits)\n", runs, differ);
}

// The quantized panel GEMMs (Q4_0, Q5_0, Q8_0, IQ4_NL, MXFP4 against Q8A; Q4_K against Q8K) take
// the same integer products as the scalar dot-product kernels (level 0, no panel), summed in
// another order: each output agrees with the scalar kernel's to float rounding, |Δ| ≤ 1e-5·Σ|w·x|
// — far tighter than test_mul_mat's activation-quantization bound, so a wrong code, level or
// scale in a panel decoder shows here. Shape: a last panel of 6 rows, column tiles of 4, 4, 4, 1.
static void test_gemm_vs_dot() {
  const int top = max_level();
  if (top < 2) {
    std::printf("panel GEMM vs scalar dot: skipped (no AVX-512 VNNI)\n");
    return;
  }
  std::mt19937 rng(8);
  const int64_t m = 70, n = 13;
  int types = 0;
  for (DType dt : {DType::Q4_0, DType::Q5_0, DType::Q8_0, DType::Q4_K, DType::IQ4_NL, DType::MXFP4}) {
    CHECK(q::gemm_for(dt, SimdLevel::AVX512) != nullptr, "%s has no AVX-512 panel GEMM", program::dtype_name(dt));
    double worst = 0;
    for (int64_t k : {256, 1024}) {
      std::vector<float> wv, xv;
      Buf w = make_weights(dt, k, m, 1, rng, wv);
      Buf b = make_act(DType::F32, k, n, 1, 1, false, rng, xv);
      Buf o[2];
      for (Buf& t : o) {
        set_contiguous(t.t, DType::F32, m, n, 1, 1);
        t.bytes.assign(static_cast<size_t>(m * n * 4), 0xff);
        t.t.data = t.bytes.data();
      }
      execute(Op::MUL_MAT, {&w.t, &b.t}, {&o[0].t}, 1, static_cast<SimdLevel>(0), false);
      execute(Op::MUL_MAT, {&w.t, &b.t}, {&o[1].t}, 2, static_cast<SimdLevel>(top), true);
      const float* ref = reinterpret_cast<const float*>(o[0].bytes.data());
      const float* got = reinterpret_cast<const float*>(o[1].bytes.data());
      int bad = 0;
      for (int64_t c = 0; c < n; c++)
        for (int64_t r = 0; r < m; r++) {
          double g = 0;
          for (int64_t i = 0; i < k; i++) g += std::fabs(static_cast<double>(wv[r * k + i]) * xv[c * k + i]);
          const double err = std::fabs(static_cast<double>(got[c * m + r]) - ref[c * m + r]);
          const double ratio = err / (1e-5 * g + 1e-30);
          worst = std::max(worst, ratio);
          if (!(ratio <= 1.0) && bad++ < 2)
            CHECK(false, "panel GEMM %s k=%lld [%lld,%lld] = %.9g, scalar dot %.9g", program::dtype_name(dt),
                  (long long)k, (long long)r, (long long)c, got[c * m + r], ref[c * m + r]);
        }
    }
    types++;
    std::printf("  gemm %-7s vs scalar dot: |diff|/(1e-5·Σ|w·x|) max %.3g\n", program::dtype_name(dt), worst);
  }
  std::printf("panel GEMM vs scalar dot: %d types agree to float rounding\n", types);
}

int main() {
  std::printf("SIMD levels tested: 0..%d\n", max_level());
  test_mul_mat();
  test_dot_only_invariance();
  test_gemm_vs_dot();
  test_mul_mat_multi();
  test_mul_mat_add();
  test_mul_mat_multi_add();
  test_mul_mat_id();
  test_get_rows();
  if (g_fail) {
    std::printf("%d FAILURES\n", g_fail);
    return 1;
  }
  std::printf("matmul_test: all passed\n");
  return 0;
}
