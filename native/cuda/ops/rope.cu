// ROPE: rotary position embedding of a [headDim, nHead, nTokens, n3] (F32) at positions pos (I32
// [nTokens]), with YaRN and optional frequency factors (F32 [nDims/2]), exactly as
// native/cpu/rope.cpp defines it:
//   theta_i = pos * freqBase^(-2i/nDims) / freqFactor_i, theta = freqScale * theta_i, or with
//   extFactor != 0 the YaRN ramp blend of the two (magnitude times 1 + 0.1 ln(1/freqScale));
//   (x0, x1) -> (x0 cos - x1 sin, x0 sin + x1 cos) * mscale on pairs (2i, 2i+1) (mode 0) or
//   (i, i + nDims/2) (mode 2, neox); elements past nDims are copied.
// A block takes one token (dims 2, 3) and a group of heads; it computes the angles of a chunk of
// pairs in double (as the CPU does) into shared memory once, then rotates every head of its
// group. Each element is read and written by one thread, so the output may alias a.
#include <cmath>

#include "../cuda_util.cuh"
#include "../../common/contract_rope.h"
#include "../kernel.h"
#include "rope_common.cuh"

namespace minfer::cuda {
namespace {

using program::Op;

constexpr int kThreads = 256;
constexpr int kPairChunk = 512;     // pairs whose angles are held in shared memory at once
constexpr int kHeadsPerBlock = 8;

__global__ void rope_kernel(Tensor a, Tensor pos, Tensor ff, Tensor o, RopeParams p) {
  __shared__ float2 cs[kPairChunk];
  const int half = p.n_dims / 2;
  const int64_t hd = a.ne[0], nh = a.ne[1], nt = a.ne[2], n3 = a.ne[3];
  for (int64_t t = blockIdx.x; t < nt * n3; t += gridDim.x) {
    const int64_t i2 = t % nt, i3 = t / nt;
    const double pp = *reinterpret_cast<const int32_t*>(pos.data + i2 * pos.nb[0]);
    for (int64_t h0 = (int64_t)blockIdx.y * kHeadsPerBlock; h0 < nh; h0 += (int64_t)gridDim.y * kHeadsPerBlock) {
      const int nhb = static_cast<int>(nh - h0 < kHeadsPerBlock ? nh - h0 : kHeadsPerBlock);
      for (int c0 = 0; c0 < half; c0 += kPairChunk) {
        const int np = half - c0 < kPairChunk ? half - c0 : kPairChunk;
        __syncthreads();  // the previous chunk's angles are no longer read
        for (int k = threadIdx.x; k < np; k += blockDim.x) cs[k] = rope_cos_sin(p, ff, pp, c0 + k);
        __syncthreads();
        for (int w = threadIdx.x; w < nhb * np; w += blockDim.x) {
          const int hh = w / np, k = w % np, i = c0 + k;
          const int64_t i1 = h0 + hh;
          const uint8_t* src = a.data + i1 * a.nb[1] + i2 * a.nb[2] + i3 * a.nb[3];
          uint8_t* dst = o.data + i1 * o.nb[1] + i2 * o.nb[2] + i3 * o.nb[3];
          const int64_t j0 = p.mode == 2 ? i : 2 * i;
          const int64_t j1 = p.mode == 2 ? i + half : 2 * i + 1;
          const float2 y = rope_rotate(*reinterpret_cast<const float*>(src + j0 * a.nb[0]),
                                       *reinterpret_cast<const float*>(src + j1 * a.nb[0]), cs[k]);
          *reinterpret_cast<float*>(dst + j0 * o.nb[0]) = y.x;
          *reinterpret_cast<float*>(dst + j1 * o.nb[0]) = y.y;
        }
      }
      // Dimensions past nDims are copied.
      const int64_t rest = hd - p.n_dims;
      for (int64_t w = threadIdx.x; w < nhb * rest; w += blockDim.x) {
        const int64_t i1 = h0 + w / rest, i = p.n_dims + w % rest;
        const float v = *reinterpret_cast<const float*>(a.data + i * a.nb[0] + i1 * a.nb[1] + i2 * a.nb[2] + i3 * a.nb[3]);
        *reinterpret_cast<float*>(o.data + i * o.nb[0] + i1 * o.nb[1] + i2 * o.nb[2] + i3 * o.nb[3]) = v;
      }
    }
  }
}

cudaError_t launch_rope(const NodeArgs& args, const LaunchContext& ctx) {
  const Tensor &a = *args.in[0], &pos = *args.in[1], &o = *args.out[0];
  const Tensor ff = args.n_inputs == 3 ? *args.in[2] : pos;  // unread without factors
  if (nelements(a) == 0) return cudaSuccess;
  const RopeParams p = rope_params(args);

  const int64_t tokens = a.ne[2] * a.ne[3], groups = ceil_div(a.ne[1], kHeadsPerBlock);
  const dim3 grid(static_cast<unsigned>(tokens < (1 << 20) ? tokens : (1 << 20)),
                  static_cast<unsigned>(groups < 65535 ? groups : 65535));
  rope_kernel<<<grid, kThreads, 0, ctx.stream>>>(a, pos, ff, o, p);
  return cudaGetLastError();
}

const Registrar rope_kernel_reg(Op::ROPE, {contract::check_rope, no_scratch, launch_rope});

}  // namespace
}  // namespace minfer::cuda
