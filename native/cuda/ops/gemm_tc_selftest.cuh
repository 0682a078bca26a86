// Stand-alone check and benchmark of gemm_tc (not part of the addon: a .cuh, so the CMake glob of
// ops/*.cu skips it). Build and run on a GPU machine from the repository root:
//   nvcc -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -I native/common -x cu -DGEMM_TC_SELFTEST \
//        native/cuda/ops/gemm_tc_selftest.cuh -o /tmp/gemm_tc_selftest && /tmp/gemm_tc_selftest [bench]
// Correctness: random weight blocks (sane scales), reference = quants.cuh's dequant_elem to f32,
// then a naive f64-accumulated product on the GPU; prints the NMSE of each case (must be < 5e-4
// for quantized weights, 1e-5 F16, 1e-6 F32). Benchmark: qwen2-7b prefill shapes at N = 512.
#ifdef GEMM_TC_SELFTEST
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gemm_tc.cu"

namespace gt {
using minfer::program::DType;
using namespace minfer::cuda;

#define CK(x)                                                                              \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

uint64_t rng = 88172645463325252ull;
uint32_t rnd() {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return static_cast<uint32_t>(rng >> 11);
}
float frand() { return (rnd() & 0xffffff) / 16777216.0f * 2.0f - 1.0f; }
uint16_t f2h(float f) {
  __half h = __float2half(f);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
void put16(uint8_t* p, uint16_t v) {
  p[0] = v & 255;
  p[1] = v >> 8;
}

// A weight row of K elements, random but with small finite block scales.
void make_row(DType t, int64_t K, uint8_t* row) {
  const int be = qblock_elems(t), bb = qblock_bytes(t);
  const int64_t nb = K / be;
  for (int64_t b = 0; b < nb; b++) {
    uint8_t* s = row + b * bb;
    for (int i = 0; i < bb; i++) s[i] = rnd() & 255;
    switch (t) {
      case DType::F32:
        for (int i = 0; i < 1; i++) {
          float f = frand();
          std::memcpy(s, &f, 4);
        }
        break;
      case DType::F16: put16(s, f2h(frand())); break;
      case DType::BF16: {
        float f = frand();
        uint32_t u;
        std::memcpy(&u, &f, 4);
        put16(s, u >> 16);
        break;
      }
      case DType::Q4_0:
      case DType::Q5_0:
      case DType::Q8_0: put16(s, f2h(0.01f + 0.02f * (frand() + 1))); break;
      case DType::Q4_1:
      case DType::Q5_1:
        put16(s, f2h(0.01f + 0.02f * (frand() + 1)));
        put16(s + 2, f2h(-0.1f * (frand() + 1)));
        break;
      case DType::Q4_K:
      case DType::Q5_K:
        put16(s, f2h(0.001f + 0.002f * (frand() + 1)));
        put16(s + 2, f2h(0.001f + 0.002f * (frand() + 1)));
        break;
      case DType::Q6_K: put16(s + 208, f2h(0.001f + 0.002f * (frand() + 1))); break;
      case DType::Q2_K:
        put16(s + 80, f2h(0.01f + 0.02f * (frand() + 1)));
        put16(s + 82, f2h(0.01f + 0.02f * (frand() + 1)));
        break;
      case DType::Q3_K: put16(s + 108, f2h(0.001f + 0.002f * (frand() + 1))); break;
      default: break;
    }
  }
}

__global__ void deq_all(DType t, const uint8_t* w, int64_t rb, int64_t M, int64_t K, float* out) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < M * K; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t m = i / K, k = i % K;
    out[i] = dequant_elem(t, w + m * rb, k);
  }
}
__global__ void ref_mm(const float* wf, const float* x, int64_t x_col, int64_t M, int64_t N, int64_t K, double* out) {
  const int64_t m = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, n = blockIdx.y;
  if (m >= M) return;
  double s = 0;
  for (int64_t k = 0; k < K; k++) s += (double)wf[m * K + k] * (double)x[k + n * x_col];
  out[m + n * M] = s;
}

struct Case {
  DType t;
  int64_t M, N, K;
  float xscale;
};

void run_case(const Case& c, bool bench, int reps) {
  const int64_t rb = c.K / qblock_elems(c.t) * qblock_bytes(c.t);
  std::vector<uint8_t> hw(rb * c.M);
  for (int64_t m = 0; m < c.M; m++) make_row(c.t, c.K, hw.data() + m * rb);
  const int64_t x_col = c.K + 3, out_col = c.M + 1;
  std::vector<float> hx(x_col * c.N);
  for (auto& v : hx) v = frand() * c.xscale;
  uint8_t* dw;
  float *dx, *dout, *dwf;
  double* dref;
  CK(cudaMalloc(&dw, hw.size()));
  CK(cudaMalloc(&dx, hx.size() * 4));
  CK(cudaMalloc(&dout, out_col * c.N * 4));
  CK(cudaMemcpy(dw, hw.data(), hw.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dx, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(dout, 0, out_col * c.N * 4));
  GemmArgs a{c.t, dw, rb, dx, x_col, dout, out_col, c.M, c.N, c.K};
  if (!gemm_tc_supported(c.t, c.M, c.N, c.K)) {
    std::printf("%-5s M=%lld N=%lld K=%lld: unsupported\n", dtype_name(c.t), (long long)c.M, (long long)c.N, (long long)c.K);
    return;
  }
  const size_t sb = gemm_tc_scratch(c.t, c.M, c.N, c.K);
  void* scratch;
  CK(cudaMalloc(&scratch, sb));
  const Plan p = make_plan(c.M, c.N, c.K);
  CK(gemm_tc(a, scratch, 0));
  CK(cudaDeviceSynchronize());
  double nmse = -1;
  if (!bench || (c.M * c.N * c.K <= (int64_t)4e10 && !minfer::cuda::g_force_bn)) {
    CK(cudaMalloc(&dwf, c.M * c.K * 4));
    CK(cudaMalloc(&dref, c.M * c.N * 8));
    deq_all<<<1024, 256>>>(c.t, dw, rb, c.M, c.K, dwf);
    ref_mm<<<dim3((unsigned)ceil_div(c.M, 128), (unsigned)c.N), 128>>>(dwf, dx, x_col, c.M, c.N, c.K, dref);
    CK(cudaDeviceSynchronize());
    std::vector<double> r(c.M * c.N);
    std::vector<float> o(out_col * c.N);
    CK(cudaMemcpy(r.data(), dref, r.size() * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(o.data(), dout, o.size() * 4, cudaMemcpyDeviceToHost));
    double num = 0, den = 0;
    bool pad_ok = true;
    for (int64_t n = 0; n < c.N; n++) {
      for (int64_t m = 0; m < c.M; m++) {
        const double d = o[m + n * out_col] - r[m + n * c.M];
        num += d * d;
        den += r[m + n * c.M] * r[m + n * c.M];
      }
      if (o[c.M + n * out_col] != 0.0f) pad_ok = false;
    }
    nmse = num / (den > 0 ? den : 1);
    if (!pad_ok) std::printf("  !! wrote outside the output columns\n");
    CK(cudaFree(dwf));
    CK(cudaFree(dref));
  }
  double us = 0;
  if (bench) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++) CK(gemm_tc(a, scratch, 0));
    CK(cudaEventRecord(e0));
    for (int i = 0; i < reps; i++) CK(gemm_tc(a, scratch, 0));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    us = ms * 1000.0 / reps;
  }
  std::printf("%-5s M=%6lld N=%4lld K=%5lld xs=%g  bn=%d splits=%d  nmse=%.3g %s", dtype_name(c.t), (long long)c.M,
              (long long)c.N, (long long)c.K, c.xscale, p.bn, p.splits, nmse,
              nmse > (c.t == DType::F32 ? 1e-6 : c.t == DType::F16 ? 1e-5 : 5e-4) ? "FAIL" : "ok");
  if (bench) std::printf("  %.1f us  %.1f TFLOP/s", us, 2.0 * c.M * c.N * c.K / us * 1e-6);
  std::printf("\n");
  CK(cudaFree(scratch));
  CK(cudaFree(dw));
  CK(cudaFree(dx));
  CK(cudaFree(dout));
}
}  // namespace gt

int main(int argc, char** argv) {
  using gt::DType;
  const bool bench = argc > 1 && std::strcmp(argv[1], "bench") == 0;
  if (argc > 1 && std::strcmp(argv[1], "sweep") == 0) {  // plan alternatives for the small grids
    // (argv[2]: the weight type, Q4_K unless another of the benchmark's is named)
    DType st = DType::Q4_K;
    for (DType t : {DType::Q6_K, DType::Q4_0, DType::Q8_0, DType::F16})
      if (argc > 2 && std::strcmp(argv[2], minfer::program::dtype_name(t)) == 0) st = t;
    const long long shapes[][2] = {{3584, 3584}, {512, 3584}, {18944, 3584}, {3584, 18944}};
    for (auto& s : shapes)
      for (int bn : {128, 64})
        for (int sp : {1, 2, 3, 4, 6, 8}) {
          minfer::cuda::g_force_bn = bn;
          minfer::cuda::g_force_splits = sp;
          gt::run_case({st, s[0], 512, s[1], 1.0f}, true, 20);
        }
    return 0;
  }
  if (!bench) {
    const DType all[] = {DType::Q4_K, DType::Q6_K, DType::Q4_0, DType::Q8_0, DType::F16, DType::BF16, DType::F32,
                         DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K, DType::Q5_K};
    for (DType t : all) {
      const bool k = minfer::cuda::qblock_elems(t) == 256;
      gt::run_case({t, 70, 19, 512, 1.0f}, false, 0);
      gt::run_case({t, 33, 9, 256, 1.0f}, false, 0);
      gt::run_case({t, 300, 200, k ? 768 : 96, 1.0f}, false, 0);
      gt::run_case({t, 512, 512, k ? 3584 : 3552, 1.0f}, false, 0);
      gt::run_case({t, 129, 65, 1024, 3.0e5f}, false, 0);
    }
  } else {
    const DType bt[] = {DType::Q4_K, DType::Q6_K, DType::Q4_0, DType::Q8_0, DType::F16};
    const long long shapes[][2] = {{3584, 3584}, {512, 3584}, {18944, 3584}, {3584, 18944}, {152064, 3584}};
    for (DType t : bt)
      for (auto& s : shapes) gt::run_case({t, s[0], 512, s[1], 1.0f}, true, 20);
  }
  return 0;
}
#endif
