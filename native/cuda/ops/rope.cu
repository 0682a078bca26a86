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
#include "../kernel.h"
#include "rope_common.cuh"

namespace minfer::cuda {
namespace {

using program::DType;
using program::dtype_name;
using program::Op;
namespace P = program::param::ROPE;

constexpr int kThreads = 256;
constexpr int kPairChunk = 512;     // pairs whose angles are held in shared memory at once
constexpr int kHeadsPerBlock = 8;

const char* check_rope(const NodeArgs& args) {
  if (args.n_inputs < 2 || args.n_inputs > 3 || args.n_outputs != 1)
    return check_fail("rope: takes 2 or 3 inputs and 1 output, got %d and %d", args.n_inputs, args.n_outputs);
  const Tensor *a = args.in[0], *pos = args.in[1], *o = args.out[0];
  if (a->dtype != DType::F32) return check_fail("rope: a must be F32, got %s", dtype_name(a->dtype));
  if (o->dtype != DType::F32) return check_fail("rope: the output must be F32, got %s", dtype_name(o->dtype));
  if (pos->dtype != DType::I32) return check_fail("rope: positions must be I32, got %s", dtype_name(pos->dtype));
  for (int i = 0; i < 4; i++)
    if (a->ne[i] != o->ne[i]) return check_fail("rope: the output must have a's shape");
  const int mode = param_i32(args, P::mode), n_dims = param_i32(args, P::nDims);
  if (mode != 0 && mode != 2) return check_fail("rope: mode %d is neither 0 (normal) nor 2 (neox)", mode);
  if (n_dims <= 0 || n_dims % 2 != 0 || n_dims > a->ne[0])
    return check_fail("rope: nDims %d must be even, positive and at most the head size %lld", n_dims,
                      (long long)a->ne[0]);
  if (pos->ne[0] != a->ne[2] || pos->ne[1] != 1 || pos->ne[2] != 1 || pos->ne[3] != 1)
    return check_fail("rope: takes one position per token: positions [%lld] for %lld tokens", (long long)pos->ne[0],
                      (long long)a->ne[2]);
  if (args.n_inputs == 3) {
    const Tensor* ff = args.in[2];
    if (ff->dtype != DType::F32) return check_fail("rope: frequency factors must be F32, got %s", dtype_name(ff->dtype));
    if (ff->ne[0] != n_dims / 2 || ff->ne[1] != 1 || ff->ne[2] != 1 || ff->ne[3] != 1)
      return check_fail("rope: frequency factors must be [%d]", n_dims / 2);
  }
  return nullptr;
}

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

const Registrar rope_kernel_reg(Op::ROPE, {check_rope, no_scratch, launch_rope});

}  // namespace
}  // namespace minfer::cuda
