// ROPE: rotary position embedding of a [headDim, nHead, nTokens, n3] (F32) at positions pos
// (I32 [nTokens]), ggml's definition including YaRN:
//   theta_i   = pos * freqBase^(-2i/nDims) / freqFactor_i          (i = 0 .. nDims/2 - 1)
//   theta     = freqScale * theta_i, or with extFactor != 0 the blend
//               theta = interp * (1 - ramp_i*extFactor) + theta_i * ramp_i*extFactor
//               with ramp_i = 1 - clamp((i - low) / max(0.001, high - low), 0, 1) and the magnitude
//               multiplied by 1 + 0.1 ln(1/freqScale)
//   mscale    = attnFactor (times the YaRN factor above)
//   (x0, x1) -> (x0 cos - x1 sin, x0 sin + x1 cos) * mscale on pairs (2i, 2i+1) (mode 0) or
//   (i, i + nDims/2) (mode 2, neox); elements past nDims are copied.
// The angles and their cosines/sines are computed in double once per token (and reused across
// heads), so large positions keep full precision.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "../common/contract_rope.h"
#include "kernel.h"

namespace minfer::cpu {
namespace {

using program::Op;
namespace P = program::param::ROPE;

void run_rope(const NodeArgs& args, int, int ith, int nth) {
  const Tensor *a = args.in[0], *pos = args.in[1], *o = args.out[0];
  const Tensor* ff = args.n_inputs == 3 ? args.in[2] : nullptr;
  const int mode = param_i32(args, P::mode);
  const int n_dims = param_i32(args, P::nDims);
  const int n_ctx_orig = param_i32(args, P::nCtxOrig);
  const double base = param_f32(args, P::freqBase);
  const double freq_scale = param_f32(args, P::freqScale);
  const double ext_factor = param_f32(args, P::extFactor);
  const double attn_factor = param_f32(args, P::attnFactor);
  const double beta_fast = param_f32(args, P::betaFast);
  const double beta_slow = param_f32(args, P::betaSlow);
  const int half = n_dims / 2;

  // YaRN correction range: the dimensions whose wavelength spans beta rotations over nCtxOrig.
  double low = 0, high = 0;
  if (ext_factor != 0) {
    auto corr_dim = [&](double n_rot) {
      return n_dims * std::log(n_ctx_orig / (n_rot * 2 * M_PI)) / (2 * std::log(base));
    };
    low = std::max(0.0, std::floor(corr_dim(beta_fast)));
    high = std::min(static_cast<double>(n_dims - 1), std::ceil(corr_dim(beta_slow)));
  }
  double mscale = attn_factor;
  if (ext_factor != 0) mscale *= 1.0 + 0.1 * std::log(1.0 / freq_scale);

  std::vector<double> inv_freq(half);
  std::vector<float> cs(2 * half);
  for (int i = 0; i < half; i++) {
    inv_freq[i] = std::pow(base, -2.0 * i / n_dims);
    if (ff) inv_freq[i] /= *reinterpret_cast<const float*>(ff->data + i * ff->nb[0]);
  }

  const int64_t hd = a->ne[0], nh = a->ne[1], nt = a->ne[2], n3 = a->ne[3];
  int64_t r0, r1;
  split_range(nh * nt * n3, ith, nth, &r0, &r1);
  int64_t cached_token = -1;
  for (int64_t r = r0; r < r1; r++) {
    const int64_t i1 = r % nh, i2 = (r / nh) % nt, i3 = r / (nh * nt);
    if (i2 != cached_token) {
      cached_token = i2;
      const double p = *reinterpret_cast<const int32_t*>(pos->data + i2 * pos->nb[0]);
      for (int i = 0; i < half; i++) {
        const double extrap = p * inv_freq[i];
        double theta = freq_scale * extrap;
        if (ext_factor != 0) {
          const double y = (i - low) / std::max(0.001, high - low);
          const double mix = (1.0 - std::min(1.0, std::max(0.0, y))) * ext_factor;
          theta = theta * (1 - mix) + extrap * mix;
        }
        cs[2 * i] = static_cast<float>(std::cos(theta) * mscale);
        cs[2 * i + 1] = static_cast<float>(std::sin(theta) * mscale);
      }
    }
    const uint8_t* src = a->data + i1 * a->nb[1] + i2 * a->nb[2] + i3 * a->nb[3];
    uint8_t* dst = o->data + i1 * o->nb[1] + i2 * o->nb[2] + i3 * o->nb[3];
    auto in = [&](int64_t i) { return *reinterpret_cast<const float*>(src + i * a->nb[0]); };
    auto out = [&](int64_t i) -> float& { return *reinterpret_cast<float*>(dst + i * o->nb[0]); };
    for (int i = 0; i < half; i++) {
      const int64_t j0 = mode == 2 ? i : 2 * i;
      const int64_t j1 = mode == 2 ? i + half : 2 * i + 1;
      const float x0 = in(j0), x1 = in(j1), c = cs[2 * i], s = cs[2 * i + 1];
      out(j0) = x0 * c - x1 * s;
      out(j1) = x0 * s + x1 * c;
    }
    for (int64_t i = n_dims; i < hd; i++) out(i) = in(i);
  }
}

const Registrar rope_kernel(Op::ROPE, {contract::check_rope, no_scratch, 1, run_rope});

}  // namespace
}  // namespace minfer::cpu
