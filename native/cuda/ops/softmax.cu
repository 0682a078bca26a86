// SOFTMAX, as native/cpu/softmax.cpp: per row of a (F32), out = softmax(a*scale + slope*mask)
// with an optional mask (F32 or F16 [ne0, >= ne1 rows], broadcast over a's dims 2 and 3) and ALiBi
// slopes per head (a's dim 2) when maxBias > 0. One block per row, three passes over the row
// (max, sum of exponentials in double, normalised write); the pre-softmax value is recomputed in
// each pass with explicitly rounded operations so every pass sees the same value. A row whose
// every entry is -inf gives zeros. Each element is written by the thread that read it, so the
// output may alias a.
#include <cmath>

#include "../cuda_util.cuh"
#include "../../common/contract_softmax.h"
#include "../kernel.h"

namespace minfer::cuda {
namespace {

using program::Op;
namespace P = program::param::SOFTMAX;

constexpr int kThreads = 256;

struct SoftmaxParams {
  bool has_mask;
  float scale, max_bias, m0, m1;
  uint32_t n_head_log2;
};

__device__ double block_sum_d(double v, double* shared) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, n_warps = (blockDim.x + kWarp - 1) / kWarp;
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < n_warps ? shared[lane] : 0.0;
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void softmax_kernel(Tensor a, Tensor mask, Tensor o, SoftmaxParams p) {
  __shared__ float shared_f[kThreads / kWarp];
  __shared__ double shared_d[kThreads / kWarp];
  const int64_t ne0 = a.ne[0], n1 = a.ne[1], n2 = a.ne[2], n3 = a.ne[3];
  for (int64_t r = blockIdx.x; r < n1 * n2 * n3; r += gridDim.x) {
    const int64_t i1 = r % n1, i2 = (r / n1) % n2, i3 = r / (n1 * n2);
    float slope = 1.0f;
    if (p.max_bias > 0.0f)
      slope = i2 < p.n_head_log2 ? powf(p.m0, static_cast<float>(i2 + 1))
                                 : powf(p.m1, static_cast<float>(2 * (i2 - p.n_head_log2) + 1));
    const uint8_t* src = a.data + i1 * a.nb[1] + i2 * a.nb[2] + i3 * a.nb[3];
    const uint8_t* mr = p.has_mask ? mask.data + i1 * mask.nb[1] + (i2 % mask.ne[2]) * mask.nb[2] +
                                         (i3 % mask.ne[3]) * mask.nb[3]
                                   : nullptr;
    uint8_t* dst = o.data + i1 * o.nb[1] + i2 * o.nb[2] + i3 * o.nb[3];
    auto value = [&](int64_t i) {
      float w = __fmul_rn(*reinterpret_cast<const float*>(src + i * a.nb[0]), p.scale);
      if (mr) w = __fadd_rn(w, __fmul_rn(slope, load_elem(mr + i * mask.nb[0], mask.dtype)));
      return w;
    };
    float mx = -INFINITY;
    for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) {
      const float w = value(i);
      mx = w > mx ? w : mx;
    }
    mx = block_max(mx, shared_f);
    if (mx == -INFINITY) {
      for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) *reinterpret_cast<float*>(dst + i * o.nb[0]) = 0.0f;
      continue;
    }
    double s = 0;
    for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) s += expf(__fsub_rn(value(i), mx));
    const float inv = static_cast<float>(1.0 / block_sum_d(s, shared_d));
    for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x)
      *reinterpret_cast<float*>(dst + i * o.nb[0]) = __fmul_rn(expf(__fsub_rn(value(i), mx)), inv);
    __syncthreads();  // the reductions' shared slots are reused by the next row
  }
}

cudaError_t launch_softmax(const NodeArgs& args, const LaunchContext& ctx) {
  const Tensor &a = *args.in[0], &o = *args.out[0];
  const int64_t rows = a.ne[1] * a.ne[2] * a.ne[3];
  if (a.ne[0] <= 0 || rows <= 0) return cudaSuccess;
  SoftmaxParams p;
  p.has_mask = args.n_inputs == 2;
  p.scale = param_f32(args, P::scale);
  p.max_bias = param_f32(args, P::maxBias);
  // ALiBi: head h gets m0^(h+1) for the first 2^floor(log2(nHead)) heads, then m1^(2(h-n)+1).
  const uint32_t n_head = static_cast<uint32_t>(a.ne[2]);
  p.n_head_log2 = n_head ? 1u << static_cast<uint32_t>(std::floor(std::log2(static_cast<double>(n_head)))) : 1;
  p.m0 = std::pow(2.0f, -p.max_bias / p.n_head_log2);
  p.m1 = std::pow(2.0f, -(p.max_bias / 2.0f) / p.n_head_log2);
  const Tensor mask = p.has_mask ? *args.in[1] : a;  // unread without a mask
  const unsigned grid = static_cast<unsigned>(rows < (1 << 20) ? rows : (1 << 20));
  softmax_kernel<<<grid, kThreads, 0, ctx.stream>>>(a, mask, o, p);
  return cudaGetLastError();
}

const Registrar softmax_kernel_reg(Op::SOFTMAX, {contract::check_softmax, no_scratch, launch_softmax});

}  // namespace
}  // namespace minfer::cuda
