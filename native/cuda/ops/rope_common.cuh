// RoPE's parameters and angles, shared by the ROPE kernel (rope.cu) and the fused RoPE + KV-store
// kernel (rope_store.cu), exactly as native/cpu/rope.cpp computes them:
//   theta_i = pos * freqBase^(-2i/nDims) / freqFactor_i, theta = freqScale * theta_i, or with
//   extFactor != 0 the YaRN ramp blend of the two; (cos, sin) scaled by mscale (attnFactor, times
//   1 + 0.1 ln(1/freqScale) with YaRN). Angles are formed in double and rounded to float once; the
//   base frequencies come from the host (one pow per pair per launch instead of per block).
#pragma once
#include <cmath>

#include "../kernel.h"

namespace minfer::cuda {

constexpr int kRopeTable = 256;  // pairs whose base frequencies travel with the launch

struct RopeParams {
  int mode, n_dims;
  bool has_ff;
  bool table;  // inv_freq holds freqBase^(-2i/nDims) of every pair (nDims/2 <= kRopeTable)
  double base, freq_scale, ext_factor, mscale, low, high;  // low/high: the YaRN correction range
  double inv_freq[kRopeTable];  // formed on the host with the CPU backend's pow: the same bits
};

// The parameters of a ROPE node (checked by contract::check_rope, native/common/contract_rope.h),
// with the YaRN range on the host.
inline RopeParams rope_params(const NodeArgs& args) {
  namespace P = program::param::ROPE;
  RopeParams p;
  p.mode = param_i32(args, P::mode);
  p.n_dims = param_i32(args, P::nDims);
  p.has_ff = args.n_inputs == 3;
  const int n_ctx_orig = param_i32(args, P::nCtxOrig);
  p.base = param_f32(args, P::freqBase);
  p.freq_scale = param_f32(args, P::freqScale);
  p.ext_factor = param_f32(args, P::extFactor);
  const double attn_factor = param_f32(args, P::attnFactor);
  const double beta_fast = param_f32(args, P::betaFast);
  const double beta_slow = param_f32(args, P::betaSlow);
  p.low = 0;
  p.high = 0;
  if (p.ext_factor != 0) {
    auto corr_dim = [&](double n_rot) {
      return p.n_dims * std::log(n_ctx_orig / (n_rot * 2 * M_PI)) / (2 * std::log(p.base));
    };
    p.low = std::fmax(0.0, std::floor(corr_dim(beta_fast)));
    p.high = std::fmin(static_cast<double>(p.n_dims - 1), std::ceil(corr_dim(beta_slow)));
  }
  p.mscale = attn_factor;
  if (p.ext_factor != 0) p.mscale *= 1.0 + 0.1 * std::log(1.0 / p.freq_scale);
  p.table = p.n_dims / 2 <= kRopeTable;
  for (int i = 0; i < kRopeTable; i++) p.inv_freq[i] = p.table && i < p.n_dims / 2 ? std::pow(p.base, -2.0 * i / p.n_dims) : 0.0;
  return p;
}

#ifdef __CUDACC__
// (cos, sin) * mscale of pair i at position pos; ff: the frequency factors (read when has_ff).
__device__ inline float2 rope_cos_sin(const RopeParams& p, const Tensor& ff, double pos, int i) {
  double inv_freq = p.table ? p.inv_freq[i] : pow(p.base, -2.0 * i / p.n_dims);
  if (p.has_ff) inv_freq /= *reinterpret_cast<const float*>(ff.data + i * ff.nb[0]);
  const double extrap = pos * inv_freq;
  double theta = p.freq_scale * extrap;
  if (p.ext_factor != 0) {
    const double y = (i - p.low) / fmax(0.001, p.high - p.low);
    const double mix = (1.0 - fmin(1.0, fmax(0.0, y))) * p.ext_factor;
    theta = theta * (1 - mix) + extrap * mix;
  }
  return make_float2(static_cast<float>(cos(theta) * p.mscale), static_cast<float>(sin(theta) * p.mscale));
}

// The rotated pair: (x0 c - x1 s, x0 s + x1 c), rounded as the CPU rounds it.
__device__ inline float2 rope_rotate(float x0, float x1, float2 cs) {
  return make_float2(__fsub_rn(__fmul_rn(x0, cs.x), __fmul_rn(x1, cs.y)), __fadd_rn(__fmul_rn(x0, cs.y), __fmul_rn(x1, cs.x)));
}
#endif

}  // namespace minfer::cuda
