// Stand-alone GPU check of the i-quant / MXFP4 / ternary decoders of quants.cuh and the IQ4_NL,
// IQ4_XS and MXFP4 mat-vec parts of ops/matvec_q.cuh against the CPU backend's scalar kernels (not
// part of the addon: tests/ is outside the CMake glob and the package). Build and run on a GPU
// machine from the repository root:
//   nvcc -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -I native/common -I native/cuda
//        native/cuda/tests/quants_selftest.cu native/cpu/quants_iq.cpp native/cpu/quants_iq4.cpp
//        native/cpu/quants_ternary.cpp -o /tmp/quants_selftest && /tmp/quants_selftest
// (one command line)
// Dequantization: random block bytes (any f16 scale, subnormals included), dequant_elem and
// dequant32 must equal the CPU's deq_<type> bit for bit (NaN against NaN counts as equal).
// Mat-vec: random blocks with finite scales against random Q8A / Q8K activations, per row the sum
// of Q::dot over the row's parts against vec_dot_<type>_scalar (relative 1e-5 of Σ|terms|).
// Prints one line per case and "quants_selftest: all passed" at the end (exit 1 on a failure).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../../cpu/quants_internal.h"
#include "../ops/matvec_q.cuh"

namespace minfer::cpu::q {
void deq_iq2_xxs(const uint8_t*, float*, int64_t);
void deq_iq2_xs(const uint8_t*, float*, int64_t);
void deq_iq2_s(const uint8_t*, float*, int64_t);
void deq_iq3_xxs(const uint8_t*, float*, int64_t);
void deq_iq3_s(const uint8_t*, float*, int64_t);
void deq_iq1_s(const uint8_t*, float*, int64_t);
void deq_iq1_m(const uint8_t*, float*, int64_t);
void deq_iq4_nl(const uint8_t*, float*, int64_t);
void deq_iq4_xs(const uint8_t*, float*, int64_t);
void deq_mxfp4(const uint8_t*, float*, int64_t);
void deq_tq1_0(const uint8_t*, float*, int64_t);
void deq_tq2_0(const uint8_t*, float*, int64_t);
void vec_dot_iq4_nl_scalar(int64_t, const void*, const void*, size_t, int, float*);
void vec_dot_iq4_xs_scalar(int64_t, const void*, const void*, size_t, int, float*);
void vec_dot_mxfp4_scalar(int64_t, const void*, const void*, size_t, int, float*);
}  // namespace minfer::cpu::q

namespace {

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

uint64_t rng = 0x9e3779b97f4a7c15ull;
uint32_t rnd() {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return static_cast<uint32_t>(rng >> 11);
}
uint16_t f2h(float f) {
  __half h = __float2half(f);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}

__global__ void deq_elem_kernel(DType t, const uint8_t* w, int64_t n, float* out) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = dequant_elem(t, w, i);
}
__global__ void deq32_kernel(DType t, const uint8_t* w, int64_t n, float* out) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < n / 32; c += (int64_t)gridDim.x * blockDim.x) {
    float v[32];
    dequant32(t, w, c * 32, v);
    for (int j = 0; j < 32; j++) out[c * 32 + j] = v[j];
  }
}

bool same_bits(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

using DeqFn = void (*)(const uint8_t*, float*, int64_t);

bool check_deq(DType t, DeqFn cpu) {
  const int be = qblock_elems(t), bb = qblock_bytes(t);
  const int64_t nb = 4096 / be * 16;
  const int64_t n = nb * be;
  std::vector<uint8_t> w(nb * bb + 16);
  for (auto& b : w) b = rnd() & 255;
  std::vector<float> ref(n), got(n);
  cpu(w.data(), ref.data(), nb);
  uint8_t* dw;
  float* dout;
  CK(cudaMalloc(&dw, w.size()));
  CK(cudaMalloc(&dout, n * 4));
  CK(cudaMemcpy(dw, w.data(), w.size(), cudaMemcpyHostToDevice));
  bool ok = true;
  for (int pass = 0; pass < 2; pass++) {
    CK(cudaMemset(dout, 0xff, n * 4));
    if (pass == 0) deq_elem_kernel<<<64, 256>>>(t, dw, n, dout);
    else deq32_kernel<<<64, 256>>>(t, dw, n, dout);
    CK(cudaGetLastError());
    CK(cudaMemcpy(got.data(), dout, n * 4, cudaMemcpyDeviceToHost));
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++)
      if (!same_bits(ref[i], got[i])) {
        if (first < 0) first = i;
        bad++;
      }
    std::printf("%-8s %-13s %s", minfer::program::dtype_name(t), pass == 0 ? "dequant_elem" : "dequant32",
                bad == 0 ? "ok\n" : "MISMATCH");
    if (bad) {
      std::printf(" %lld of %lld, first at %lld: cpu %.9g gpu %.9g\n", (long long)bad, (long long)n,
                  (long long)first, ref[first], got[first]);
      ok = false;
    }
  }
  CK(cudaFree(dw));
  CK(cudaFree(dout));
  return ok;
}

// One thread a row: Σ over the row's parts of Q::dot against the activations (GPU layout).
template <class Q>
__global__ void mv_rows_kernel(const uint8_t* w, int64_t row_bytes, int64_t M, int64_t K, const int8_t* aq,
                               const void* asc, float* out) {
  const int64_t m = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (m >= M) return;
  float acc = 0.0f;
  for (int64_t pi = 0; pi < K / 32; pi++) {
    Q q;
    q.load(w + m * row_bytes, pi);
    int a[8];
    const int* ap = reinterpret_cast<const int*>(aq + pi * 32);
    for (int i = 0; i < 8; i++) a[i] = ap[i];
    float ad, as = 0.0f;
    if (Q::kQ8K) {
      ad = static_cast<const float*>(asc)[pi / 8];
    } else {
      const float2 ds = static_cast<const float2*>(asc)[pi];
      ad = ds.x;
      as = ds.y;
    }
    acc += q.dot(a, ad, as);
  }
  out[m] = acc;
}

using DotFn = void (*)(int64_t, const void*, const void*, size_t, int, float*);

template <class Q>
bool check_mv(DType t, DotFn cpu, int64_t row_offset) {
  const int be = qblock_elems(t), bb = qblock_bytes(t);
  const int64_t M = 37, K = 2048, nb = K / be, rb = nb * bb;
  // rows at row_offset bytes into the buffer (MXFP4: any alignment)
  std::vector<uint8_t> w(row_offset + M * rb + 16);
  for (auto& b : w) b = rnd() & 255;
  for (int64_t m = 0; m < M; m++)
    for (int64_t b = 0; b < nb; b++) {
      uint8_t* s = w.data() + row_offset + m * rb + b * bb;
      if (t == DType::MXFP4) {
        s[0] = static_cast<uint8_t>(110 + rnd() % 30);
      } else {
        const uint16_t d = f2h((rnd() % 2 ? -1.0f : 1.0f) * (0.001f + 0.01f * (rnd() % 1000) / 1000.0f));
        s[0] = d & 255;
        s[1] = d >> 8;
      }
    }
  // activations: random codes; Q8A d per 32 (f16-representable) and s = d·Σq, Q8K d per 256
  std::vector<int8_t> qs(K);
  for (auto& q : qs) q = static_cast<int8_t>(static_cast<int>(rnd() % 255) - 127);
  std::vector<float> dA(K / 32), sA(K / 32), dK(K / 256);
  for (int64_t i = 0; i < K / 32; i++) {
    dA[i] = __half2float(__float2half(0.01f + 0.02f * (rnd() % 1000) / 1000.0f));
    int sum = 0;
    for (int j = 0; j < 32; j++) sum += qs[i * 32 + j];
    sA[i] = dA[i] * static_cast<float>(sum);
  }
  for (auto& d : dK) d = 0.001f + 0.002f * (rnd() % 1000) / 1000.0f;
  std::vector<uint8_t> cpu_act;
  if (Q::kQ8K) {
    cpu_act.resize(sizeof(minfer::cpu::q::BlockQ8K) * (K / 256));
    auto* a = reinterpret_cast<minfer::cpu::q::BlockQ8K*>(cpu_act.data());
    for (int64_t i = 0; i < K / 256; i++) {
      a[i].d = dK[i];
      std::memcpy(a[i].qs, qs.data() + i * 256, 256);
      for (int g = 0; g < 16; g++) {
        int s = 0;
        for (int j = 0; j < 16; j++) s += qs[i * 256 + g * 16 + j];
        a[i].bsums[g] = static_cast<int16_t>(s);
      }
    }
  } else {
    cpu_act.resize(sizeof(minfer::cpu::q::BlockQ8A) * (K / 32));
    auto* a = reinterpret_cast<minfer::cpu::q::BlockQ8A*>(cpu_act.data());
    for (int64_t i = 0; i < K / 32; i++) {
      a[i].d = dA[i];
      a[i].s = sA[i];
      std::memcpy(a[i].qs, qs.data() + i * 32, 32);
    }
  }
  std::vector<float> ref(M), got(M), mag(M);
  for (int64_t m = 0; m < M; m++) {
    cpu(K, w.data() + row_offset + m * rb, cpu_act.data(), cpu_act.size(), 1, &ref[m]);
    // Σ|w·a| for the tolerance (dequantized weights times dequantized activations)
    std::vector<float> wf(K);
    const DeqFn deq = t == DType::IQ4_NL ? minfer::cpu::q::deq_iq4_nl
                      : t == DType::IQ4_XS ? minfer::cpu::q::deq_iq4_xs
                                           : minfer::cpu::q::deq_mxfp4;
    deq(w.data() + row_offset + m * rb, wf.data(), nb);
    double s = 0;
    for (int64_t k = 0; k < K; k++)
      s += std::fabs(static_cast<double>(wf[k]) * qs[k] * (Q::kQ8K ? dK[k / 256] : dA[k / 32]));
    mag[m] = static_cast<float>(s);
  }
  // GPU layout: codes, then the scales
  uint8_t *dw, *daq, *dasc;
  float* dout;
  CK(cudaMalloc(&dw, w.size()));
  CK(cudaMalloc(&daq, K));
  CK(cudaMalloc(&dasc, K / 32 * 8));
  CK(cudaMalloc(&dout, M * 4));
  CK(cudaMemcpy(dw, w.data(), w.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(daq, qs.data(), K, cudaMemcpyHostToDevice));
  if (Q::kQ8K) {
    CK(cudaMemcpy(dasc, dK.data(), dK.size() * 4, cudaMemcpyHostToDevice));
  } else {
    std::vector<float> ds(K / 32 * 2);
    for (int64_t i = 0; i < K / 32; i++) ds[2 * i] = dA[i], ds[2 * i + 1] = sA[i];
    CK(cudaMemcpy(dasc, ds.data(), ds.size() * 4, cudaMemcpyHostToDevice));
  }
  mv_rows_kernel<Q><<<1, 64>>>(dw + row_offset, rb, M, K, reinterpret_cast<const int8_t*>(daq), dasc, dout);
  CK(cudaGetLastError());
  CK(cudaMemcpy(got.data(), dout, M * 4, cudaMemcpyDeviceToHost));
  double worst = 0;
  for (int64_t m = 0; m < M; m++) worst = std::fmax(worst, std::fabs(got[m] - ref[m]) / std::fmax(mag[m], 1e-30f));
  const bool ok = worst < 1e-5;
  std::printf("%-8s mat-vec part (row offset %lld): worst |gpu - cpu| / sum|terms| %.3g %s\n",
              minfer::program::dtype_name(t), (long long)row_offset, worst, ok ? "ok" : "MISMATCH");
  CK(cudaFree(dw));
  CK(cudaFree(daq));
  CK(cudaFree(dasc));
  CK(cudaFree(dout));
  return ok;
}

}  // namespace

int main() {
  namespace q = minfer::cpu::q;
  struct {
    DType t;
    DeqFn f;
  } deqs[] = {{DType::IQ2_XXS, q::deq_iq2_xxs}, {DType::IQ2_XS, q::deq_iq2_xs}, {DType::IQ2_S, q::deq_iq2_s},
              {DType::IQ3_XXS, q::deq_iq3_xxs}, {DType::IQ3_S, q::deq_iq3_s},   {DType::IQ1_S, q::deq_iq1_s},
              {DType::IQ1_M, q::deq_iq1_m},     {DType::IQ4_NL, q::deq_iq4_nl}, {DType::IQ4_XS, q::deq_iq4_xs},
              {DType::MXFP4, q::deq_mxfp4},     {DType::TQ1_0, q::deq_tq1_0},   {DType::TQ2_0, q::deq_tq2_0}};
  bool ok = true;
  for (auto& d : deqs) {
    if (!has_dequant(d.t)) {
      std::printf("%s: has_dequant false\n", minfer::program::dtype_name(d.t));
      ok = false;
      continue;
    }
    ok = check_deq(d.t, d.f) && ok;
  }
  ok = check_mv<mm::PIQ4_NL<true>>(DType::IQ4_NL, q::vec_dot_iq4_nl_scalar, 0) && ok;
  ok = check_mv<mm::PIQ4_NL<true>>(DType::IQ4_NL, q::vec_dot_iq4_nl_scalar, 2) && ok;
  ok = check_mv<mm::PIQ4_NL<false>>(DType::IQ4_NL, q::vec_dot_iq4_nl_scalar, 6) && ok;
  ok = check_mv<mm::PIQ4_XS>(DType::IQ4_XS, q::vec_dot_iq4_xs_scalar, 0) && ok;
  ok = check_mv<mm::PIQ4_XS>(DType::IQ4_XS, q::vec_dot_iq4_xs_scalar, 8) && ok;
  for (int off = 0; off < 8; off++) ok = check_mv<mm::PMXFP4>(DType::MXFP4, q::vec_dot_mxfp4_scalar, off) && ok;
  std::printf(ok ? "quants_selftest: all passed\n" : "quants_selftest: FAILED\n");
  return ok ? 0 : 1;
}
