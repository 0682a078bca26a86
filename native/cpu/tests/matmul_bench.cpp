// C++ timing of the MUL_MAT kernel (phase 0 + phase 1, persistent spinning threads, like the
// executor's pool) at Qwen2-0.5B-like decode and prefill shapes. Prints GB/s of weight bytes read
// and GFLOP/s (2·k·m·n per call). Usage: matmul_bench [min_seconds_per_case [type [threads [n [simd]]]]]
// (simd: scalar, avx2 or avx512, the default; the i-quants, ternary types and MXFP4 run only when named).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <thread>
#include <vector>

#include "../kernel.h"
#include "../quants.h"
#include "../quants_internal.h"

using namespace minfer;
using namespace minfer::cpu;
using program::DType;

static double cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Persistent workers running (args, phase) with a spin barrier per phase.
struct Pool {
  int nth;
  std::vector<std::thread> th;
  std::atomic<int> gen{0};
  std::atomic<long> done{0};  // never reset: barrier targets grow with each execute
  std::atomic<long> base{0};
  std::atomic<bool> quit{false};
  const KernelDef* kd = nullptr;
  const NodeArgs* args = nullptr;
  explicit Pool(int n) : nth(n) {
    for (int i = 1; i < n; i++)
      th.emplace_back([this, i] {
        int seen = 0;
        for (;;) {
          while (gen.load(std::memory_order_acquire) == seen && !quit.load()) {
          }
          if (quit.load()) return;
          seen = gen.load();
          run_all(i, base.load());
        }
      });
  }
  void run_all(int i, long b) {
    for (int p = 0; p < kd->n_phases; p++) {
      kd->run(*args, p, i, nth);
      // barrier
      const long target = b + (p + 1) * nth;
      done.fetch_add(1);
      while (done.load() < target) {
      }
    }
  }
  void execute(const KernelDef* k, const NodeArgs* a) {
    kd = k;
    args = a;
    gen.fetch_add(1, std::memory_order_release);
    run_all(0, base.load());
    base.fetch_add(static_cast<long>(kd->n_phases) * nth);
    while (done.load() < base) {
    }
  }
  ~Pool() {
    quit = true;
    for (auto& t : th) t.join();
  }
};

static const char* name_of(DType t) {
  switch (t) {
    case DType::Q4_0: return "Q4_0";
    case DType::Q8_0: return "Q8_0";
    case DType::Q4_K: return "Q4_K";
    case DType::Q6_K: return "Q6_K";
    case DType::F16: return "F16";
    case DType::IQ4_NL: return "IQ4_NL";
    case DType::IQ4_XS: return "IQ4_XS";
    case DType::MXFP4: return "MXFP4";
    case DType::IQ2_XXS: return "IQ2_XXS";
    case DType::IQ2_XS: return "IQ2_XS";
    case DType::IQ2_S: return "IQ2_S";
    case DType::IQ3_XXS: return "IQ3_XXS";
    case DType::IQ3_S: return "IQ3_S";
    case DType::IQ1_S: return "IQ1_S";
    case DType::IQ1_M: return "IQ1_M";
    case DType::TQ1_0: return "TQ1_0";
    case DType::TQ2_0: return "TQ2_0";
    default: return "?";
  }
}

// Byte offset of a block's f16 scale d (the random blocks get a sane one), or -1 where the type
// has none to set (quantized rows, MXFP4's E8M0 byte, IQ1_M's d spread over its scales).
static int d_field(DType t) {
  switch (t) {
    case DType::IQ4_NL:
    case DType::IQ4_XS:
    case DType::IQ2_XXS:
    case DType::IQ2_XS:
    case DType::IQ2_S:
    case DType::IQ3_XXS:
    case DType::IQ3_S:
    case DType::IQ1_S: return 0;
    case DType::TQ1_0: return 52;
    case DType::TQ2_0: return 64;
    default: return -1;
  }
}

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const double min_s = argc > 1 ? std::atof(argv[1]) : 0.3;
  const KernelDef* kd = find_kernel(program::Op::MUL_MAT);
  struct Case { int64_t k, m, n; };
  const Case cases[] = {{4864, 896, 1}, {896, 4864, 1}, {896, 151936, 1}, {896, 4864, 2}, {896, 4864, 3},
                        {896, 4864, 4}, {4864, 896, 4}, {896, 4864, 128}, {4864, 896, 128}};
  const DType types[] = {DType::Q4_0,    DType::Q8_0,   DType::Q4_K,  DType::F16,     DType::IQ4_NL, DType::IQ4_XS,
                         DType::MXFP4,   DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S, DType::IQ3_XXS, DType::IQ3_S,
                         DType::IQ1_S,   DType::IQ1_M,  DType::TQ1_0, DType::TQ2_0};
  const int n_default_types = 4;  // the rest only when named
  std::mt19937 rng(1);
  std::printf("%-6s %-22s %4s %8s %9s %9s\n", "type", "k x m x n", "thr", "us/call", "GB/s(w)", "GFLOP/s");
  const char* only_type = argc > 2 ? argv[2] : nullptr;
  const int only_threads = argc > 3 ? std::atoi(argv[3]) : 0;
  const int64_t only_n = argc > 4 ? std::atoll(argv[4]) : 0;  // only cases with this many columns
  const char* simd_name = argc > 5 ? argv[5] : "avx512";
  const SimdLevel simd = std::strcmp(simd_name, "scalar") == 0 ? SimdLevel::Scalar
                         : std::strcmp(simd_name, "avx2") == 0 ? SimdLevel::AVX2
                                                               : SimdLevel::AVX512;
  for (const DType& dt : types) {
    if (only_type ? std::strcmp(only_type, name_of(dt)) != 0 : &dt - types >= n_default_types) continue;
    const q::WeightTraits& tr = q::weight_traits(dt);
    for (const Case& c0 : cases) {
      if (only_n && c0.n != only_n) continue;
      Case c = c0;
      if (c.k % tr.block) c.k = (c.k + tr.block - 1) / tr.block * tr.block;  // Q4_K: 896 → 1024
      const size_t row = static_cast<size_t>(c.k / tr.block) * tr.type_size;
      std::vector<uint8_t> w(row * c.m);
      // Valid blocks: quantize a few random rows and tile them (timing does not depend on values).
      {
        std::normal_distribution<float> nd(0, 0.05f);
        std::vector<float> x(c.k);
        std::vector<uint8_t> tmp(row);
        for (int r = 0; r < 16; r++) {
          for (auto& v : x) v = nd(rng);
          if (has_quantize(dt)) quantize_row(dt, x.data(), tmp.data(), c.k);
          else for (size_t i = 0; i < row; i++) tmp[i] = static_cast<uint8_t>(rng());
          if (dt == DType::Q4_K)
            for (size_t bo = 0; bo < row; bo += 144) tmp[bo] = 0x00, tmp[bo + 1] = 0x1c, tmp[bo + 2] = 0, tmp[bo + 3] = 0x1c;
          if (const int at = d_field(dt); at >= 0)  // d = 2^-8 (no NaN / subnormal scales)
            for (size_t bo = 0; bo < row; bo += tr.type_size) tmp[bo + at] = 0x00, tmp[bo + at + 1] = 0x1c;
          if (dt == DType::MXFP4)
            for (size_t bo = 0; bo < row; bo += tr.type_size) tmp[bo] = 120;
          for (int64_t rr = r; rr < c.m; rr += 16) std::memcpy(w.data() + rr * row, tmp.data(), row);
        }
      }
      std::vector<float> b(static_cast<size_t>(c.k * c.n)), o(static_cast<size_t>(c.m * c.n));
      for (auto& v : b) v = std::normal_distribution<float>(0, 1)(rng);
      Tensor ta{dt, w.data(), {c.k, c.m, 1, 1}, {tr.type_size, (int64_t)row, (int64_t)(row * c.m), (int64_t)(row * c.m)}};
      Tensor tb{DType::F32, reinterpret_cast<uint8_t*>(b.data()), {c.k, c.n, 1, 1}, {4, c.k * 4, c.k * c.n * 4, c.k * c.n * 4}};
      Tensor to{DType::F32, reinterpret_cast<uint8_t*>(o.data()), {c.m, c.n, 1, 1}, {4, c.m * 4, c.m * c.n * 4, c.m * c.n * 4}};
      for (int nth : {1, 2}) {
        if (only_threads && nth != only_threads) continue;
        NodeArgs args{};
        args.op = program::Op::MUL_MAT;
        args.n_inputs = 2;
        args.n_outputs = 1;
        args.in[0] = &ta;
        args.in[1] = &tb;
        args.out[0] = &to;
        args.simd = simd;
        if (const char* e = kd->check(args)) {
          std::printf("refused: %s\n", e);
          continue;
        }
        std::vector<uint8_t> scratch(kd->scratch_bytes(args, nth) + 64);
        args.scratch = scratch.data();
        Pool pool(nth);
        pool.execute(kd, &args);  // warm-up
        int iters = 0;
        const double cpu0 = cpu_now();
        const double t0 = now();
        double t1;
        do {
          pool.execute(kd, &args);
          iters++;
          t1 = now();
        } while (t1 - t0 < min_s);
        double per = (t1 - t0) / iters;
        // One thread on a busy machine: the thread's CPU time is the steadier figure.
        if (nth == 1) per = std::min(per, (cpu_now() - cpu0) / iters);
        char shape[64];
        std::snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)c.k, (long long)c.m, (long long)c.n);
        std::printf("%-6s %-22s %4d %8.1f %9.2f %9.1f\n", name_of(dt), shape, nth, per * 1e6,
                    static_cast<double>(w.size()) / per / 1e9, 2.0 * c.k * c.m * c.n / per / 1e9);
      }
    }
  }
  return 0;
}
