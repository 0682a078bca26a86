// Test helpers for the ops_*.cpp kernel tests: tensors with arbitrary (permuted, padded) strides,
// element access as double, a runner that calls a kernel's check and run over (ith, nth), and
// tolerance checks. Test-only.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../../common/fp16.h"
#include "../kernel.h"
#include "../quants.h"

namespace t {

using minfer::cpu::NodeArgs;
using minfer::cpu::SimdLevel;
using minfer::cpu::Tensor;
using minfer::program::DType;
using minfer::program::Op;

inline int g_failures = 0;
inline int g_checks = 0;

#define EXPECT(cond, ...)                                 \
  do {                                                    \
    ::t::g_checks++;                                      \
    if (!(cond)) {                                        \
      ::t::g_failures++;                                  \
      std::fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                  \
      std::fprintf(stderr, "\n");                         \
    }                                                     \
  } while (0)

inline const char* dname(DType d) {
  switch (d) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I32: return "I32";
    case DType::Q8_0: return "Q8_0";
    default: return "?";
  }
}
inline const char* sname(SimdLevel s) {
  return s == SimdLevel::AVX512 ? "avx512" : s == SimdLevel::AVX2 ? "avx2" : "scalar";
}
inline int64_t esize(DType d) { return d == DType::F32 || d == DType::I32 ? 4 : 2; }

inline std::vector<SimdLevel> simd_levels() {
  std::vector<SimdLevel> v{SimdLevel::Scalar};
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
    v.push_back(SimdLevel::AVX2);
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq"))
    v.push_back(SimdLevel::AVX512);
#endif
  return v;
}

// A tensor owning its storage. Layout: logical dims stored in physical order `perm` (perm[0] is the
// fastest-varying logical dim), each physical dim padded by pad[] extra elements (Q8_0: blocks),
// with `lead` spare bytes before the data (so views have canaries around them).
struct TT {
  Tensor t{};
  std::vector<uint8_t> store;
  int64_t lead = 64, span = 0;

  TT(DType d, std::initializer_list<int64_t> ne_, std::initializer_list<int> perm_ = {0, 1, 2, 3},
     std::initializer_list<int64_t> pad_ = {0, 0, 0, 0}) {
    int64_t ne[4] = {1, 1, 1, 1}, pad[4] = {0, 0, 0, 0};
    int perm[4] = {0, 1, 2, 3};
    int i = 0;
    for (int64_t v : ne_) ne[i++] = v;
    i = 0;
    for (int v : perm_) perm[i++] = v;
    i = 0;
    for (int64_t v : pad_) pad[i++] = v;
    t.dtype = d;
    for (int k = 0; k < 4; k++) t.ne[k] = ne[k];
    int64_t stride = d == DType::Q8_0 ? 34 : esize(d);
    for (int p = 0; p < 4; p++) {
      const int dim = perm[p];
      t.nb[dim] = stride;
      const int64_t n = d == DType::Q8_0 && dim == 0 ? ne[0] / 32 : ne[dim];
      stride *= n + pad[p];
    }
    span = stride;
    store.assign(static_cast<size_t>(lead + span + 64), 0xA5);
    t.data = store.data() + lead;
  }
  uint8_t* at(int64_t i0, int64_t i1, int64_t i2, int64_t i3) const {
    return t.data + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
  }
  double get(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) const {
    if (t.dtype == DType::Q8_0) {  // element i0 % 32 of block i0 / 32
      const uint8_t* b = at(i0 / 32, i1, i2, i3);
      return minfer::fp16_to_f32(static_cast<uint16_t>(b[0] | (b[1] << 8))) * static_cast<int8_t>(b[2 + i0 % 32]);
    }
    const uint8_t* p = at(i0, i1, i2, i3);
    switch (t.dtype) {
      case DType::F16: return minfer::fp16_to_f32(*reinterpret_cast<const uint16_t*>(p));
      case DType::BF16: return minfer::bf16_to_f32(*reinterpret_cast<const uint16_t*>(p));
      case DType::I32: return *reinterpret_cast<const int32_t*>(p);
      default: return *reinterpret_cast<const float*>(p);
    }
  }
  void set(int64_t i0, int64_t i1, int64_t i2, int64_t i3, double v) {
    uint8_t* p = at(i0, i1, i2, i3);
    switch (t.dtype) {
      case DType::F16: *reinterpret_cast<uint16_t*>(p) = minfer::f32_to_fp16(static_cast<float>(v)); break;
      case DType::BF16: *reinterpret_cast<uint16_t*>(p) = minfer::f32_to_bf16(static_cast<float>(v)); break;
      case DType::I32: *reinterpret_cast<int32_t*>(p) = static_cast<int32_t>(v); break;
      default: *reinterpret_cast<float*>(p) = static_cast<float>(v); break;
    }
  }
  int64_t n() const { return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]; }
  template <typename F>
  void each(F f) const {
    for (int64_t i3 = 0; i3 < t.ne[3]; i3++)
      for (int64_t i2 = 0; i2 < t.ne[2]; i2++)
        for (int64_t i1 = 0; i1 < t.ne[1]; i1++)
          for (int64_t i0 = 0; i0 < t.ne[0]; i0++) f(i0, i1, i2, i3);
  }
  void fill_random(std::mt19937& rng, double lo = -2, double hi = 2) {
    std::uniform_real_distribution<double> u(lo, hi);
    if (t.dtype == DType::Q8_0) {  // random blocks: scale (hi - lo) / 254 · [0.5, 1], codes -127..127
      std::uniform_int_distribution<int> code(-127, 127);
      for (int64_t i3 = 0; i3 < t.ne[3]; i3++)
        for (int64_t i2 = 0; i2 < t.ne[2]; i2++)
          for (int64_t i1 = 0; i1 < t.ne[1]; i1++)
            for (int64_t b = 0; b < t.ne[0] / 32; b++) {
              uint8_t* p = at(b, i1, i2, i3);
              const uint16_t h = minfer::f32_to_fp16(static_cast<float>((hi - lo) / 254 * (0.75 + 0.25 * u(rng) / hi)));
              p[0] = static_cast<uint8_t>(h & 0xff);
              p[1] = static_cast<uint8_t>(h >> 8);
              for (int i = 0; i < 32; i++) p[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(code(rng)));
            }
      return;
    }
    each([&](int64_t a, int64_t b, int64_t c, int64_t d) { set(a, b, c, d, u(rng)); });
  }
  // Every element as the value it holds (after rounding to the dtype).
  void fill_nan() {
    if (t.dtype == DType::Q8_0) return;
    each([&](int64_t a, int64_t b, int64_t c, int64_t d) { set(a, b, c, d, NAN); });
  }
  bool canaries_intact() const {
    for (int64_t i = 0; i < lead; i++)
      if (store[i] != 0xA5) return false;
    for (size_t i = lead + span; i < store.size(); i++)
      if (store[i] != 0xA5) return false;
    return true;
  }
};

inline uint32_t f32w(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline uint32_t i32w(int32_t v) { return static_cast<uint32_t>(v); }

// Runs `op` on inputs/outputs with params; returns the check message (nullptr = ran).
inline const char* run_op(Op op, std::vector<TT*> ins, std::vector<TT*> outs, std::vector<uint32_t> params,
                          SimdLevel simd = SimdLevel::Scalar, int nth = 3) {
  const minfer::cpu::KernelDef* k = minfer::cpu::find_kernel(op);
  if (!k) return "no kernel registered";
  NodeArgs a{};
  a.op = op;
  a.n_inputs = static_cast<int>(ins.size());
  a.n_outputs = static_cast<int>(outs.size());
  for (size_t i = 0; i < ins.size(); i++) a.in[i] = &ins[i]->t;
  for (size_t i = 0; i < outs.size(); i++) a.out[i] = &outs[i]->t;
  params.resize(minfer::program::kMaxParams, 0);
  a.params = params.data();
  a.simd = simd;
  if (const char* e = k->check(a)) return e;
  std::vector<uint8_t> scratch(k->scratch_bytes(a, nth));
  a.scratch = scratch.empty() ? nullptr : scratch.data();
  for (int ph = 0; ph < k->n_phases; ph++)
    for (int ith = nth - 1; ith >= 0; ith--) k->run(a, ph, ith, nth);  // reverse order: no accidental reliance
  return nullptr;
}

// Whether |got - want| <= atol + rtol*|want| (NaN in got fails unless want is NaN).
inline bool close(double got, double want, double atol, double rtol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= atol + rtol * std::fabs(want);
}

// Compares every element of `got` with ref(i0..i3); reports the first few mismatches.
template <typename F>
inline void expect_all(const char* what, const TT& got, F ref, double atol, double rtol) {
  int bad = 0;
  double worst = 0;
  got.each([&](int64_t a, int64_t b, int64_t c, int64_t d) {
    const double g = got.get(a, b, c, d), w = ref(a, b, c, d);
    if (!close(g, w, atol, rtol)) {
      if (bad < 3)
        std::fprintf(stderr, "  %s [%lld,%lld,%lld,%lld]: got %.9g want %.9g\n", what, (long long)a, (long long)b,
                     (long long)c, (long long)d, g, w);
      bad++;
    } else if (!std::isnan(w) && !std::isinf(w)) {
      worst = std::max(worst, std::fabs(g - w));
    }
  });
  EXPECT(bad == 0, "%s: %d of %lld elements wrong", what, bad, (long long)got.n());
  EXPECT(got.canaries_intact(), "%s: wrote outside the output", what);
}

inline std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
inline std::string fmt(const char* f, ...) {
  char b[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(b, sizeof b, f, ap);
  va_end(ap);
  return b;
}

inline int finish(const char* name) {
  std::printf("%s: %d checks, %d failures\n", name, g_checks, g_failures);
  return g_failures ? 1 : 0;
}

}  // namespace t
