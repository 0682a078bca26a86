// Q2_K and Q3_K weight quantizers, ported from packages/gguf/src/quant/k-quant-low.ts: fit each
// 16-value sub-block, derive f16 super-block scales, score the integer codes within RADIUS of
// each sub-block's nearest on its actual decode, then refit the super-block scales by least
// squares and repeat while the error drops. One 256-value block per call.
//
// One departure: the TypeScript keeps the best codes in module state, so a block whose first
// round has no finite error (a NaN or ±Infinity among its values) writes the codes of whatever
// block it quantized before; here such a block writes codes 0.
#include "quantize_weights.h"
#include "quantize_weights_fit.h"
#include "quantize_weights_lanes.h"

namespace minfer::cpu::qw {
namespace {

constexpr int kRefits = 2;  // REFITS
constexpr int kRadius = 2;  // RADIUS

/** One block's search: its values, element weights (WB) and the current and best codes. */
struct LowBlock {
  const float* x;
  bool finite;  // no NaN or ±Infinity among the 256 values
  bool weighted;
  double wb[256];
  double fits[32];
  uint8_t sc[16], mc[16];
  uint8_t best_sc[16] = {}, best_mc[16] = {};
};

// ---- Q2_K --------------------------------------------------------------------------------------

/** errQ2: squared error of x[0..16) decoded as step·q − off, abandoned at bound. */
double err_q2(const float* x, const double* ws, double step, double off, double bound) {
  double err = 0;
  if (step > 0) {
    for (int j = 0; j < 16; j++) {
      const double v = x[j];
      const double y = (v + off) / step;
      const double l = y < 0.5 ? 0 : y >= 2.5 ? 3 : floor_pos(y + 0.5);
      const double e = step * l - off - v;
      err += ws[j] * e * e;
      if (err >= bound) return err;
    }
  } else {
    for (int j = 0; j < 16; j++) {
      const double e = off + x[j];
      err += ws[j] * e * e;
      if (err >= bound) return err;
    }
  }
  return err;
}

/** assignQ2: the best (scale, min) codes of every sub-block for f16 (d, dmin); the total error. */
double assign_q2(LowBlock& b, double d, double dmin) {
  double total = 0;
  for (int k = 0; k < 16; k++) {
    const float* xs = b.x + 16 * k;
    const double* ws = b.wb + 16 * k;
    const double rs = d > 0 ? clamp(round_away(b.fits[2 * k] / d), 0, 15) : 0;
    const double rm = dmin > 0 ? clamp(round_away(b.fits[2 * k + 1] / dmin), 0, 15) : 0;
    // The nearest codes first (a tie keeps them), then the candidates around them in order; with
    // finite values and scales, all their errors several at a time.
    double steps[26], offs[26], cands[26], candm[26], errs[26];
    steps[0] = fr(d * rs);
    offs[0] = fr(dmin * rm);
    int nc = 1;
    for (double s = js_max(0, rs - kRadius); s <= js_min(15, rs + kRadius); s++) {
      for (double m = js_max(0, rm - kRadius); m <= js_min(15, rm + kRadius); m++, nc++) {
        steps[nc] = fr(d * s);
        offs[nc] = fr(dmin * m);
        cands[nc] = s;
        candm[nc] = m;
      }
    }
    const bool lanes = b.finite && std::isfinite(d) && std::isfinite(dmin);
    if (lanes) lane_kernels().q2_errors(xs, ws, steps, offs, nc, errs);
    double best = lanes ? errs[0] : err_q2(xs, ws, steps[0], offs[0], kInf);
    double bs = rs, bm = rm;
    for (int c = 1; c < nc; c++) {
      const double err = lanes ? errs[c] : err_q2(xs, ws, steps[c], offs[c], best);
      if (err < best) {
        best = err;
        bs = cands[c];
        bm = candm[c];
      }
    }
    b.sc[k] = to_u8(bs);
    b.mc[k] = to_u8(bm);
    total += best;
  }
  return total;
}

/** codeQ2: the element code of v for (step, off). */
inline double code_q2(double v, double step, double off) {
  return step > 0 ? clamp(round_away((v + off) / step), 0, 3) : 0;
}

// ---- Q3_K --------------------------------------------------------------------------------------

/** errQ3 of one sub-block: x², or imp·√(σ² + x²), weighted squared error of x decoded as step·q. */
struct Q3Sub {
  const float* x;
  const double* ws;
  bool weighted;

  double err(double step, double bound) {
    double e2 = 0;
    if (step != 0) {
      for (int j = 0; j < 16; j++) {
        const double v = x[j];
        const double l = clamp(round_away(v / step), -4, 3);
        const double e = step * l - v;
        e2 += ws[j] * e * e;
        if (e2 >= bound) return e2;
      }
      return e2;
    }
    for (int j = 0; j < 16; j++) {
      const double v = x[j];
      e2 += weighted ? ws[j] * v * v : v * v * (v * v);
      if (e2 >= bound) return e2;
    }
    return e2;
  }
};

/** assignQ3: the best biased scale code (0..63) of every sub-block for f16 d; the total error. */
double assign_q3(LowBlock& b, Q3Sub* subs, double d) {
  double total = 0;
  for (int k = 0; k < 16; k++) {
    const double rc = d != 0 ? clamp(round_away(b.fits[k] / d), -32, 31) + 32 : 32;
    double best = subs[k].err(fr(d * (rc - 32)), kInf);
    double bs = rc;
    for (double c = js_max(0, rc - kRadius); c <= js_min(63, rc + kRadius); c++) {
      const double err = subs[k].err(fr(d * (c - 32)), best);
      if (err < best) {
        best = err;
        bs = c;
      }
    }
    b.sc[k] = to_u8(bs);
    total += best;
  }
  return total;
}

/** codeQ3: the element code (−4..3) of v for step. */
inline double code_q3(double v, double step) { return step != 0 ? clamp(round_away(v / step), -4, 3) : 0; }

}  // namespace

void quantize_q2_k(const float* x, const float* imp, uint8_t* dst) {
  LowBlock b;
  b.x = x;
  b.finite = all_finite(x, 256);
  b.weighted = imp && b.finite;
  if (b.weighted) importance_weights(x, imp, 256, 1, b.wb);
  else for (double& w : b.wb) w = 1;
  double max_scale = 0, max_min = 0;
  for (int k = 0; k < 16; k++) {
    const ScaleMin f = b.weighted ? fit_scale_min_w(x + 16 * k, b.wb + 16 * k, 16, 3) : fit_scale_min(x + 16 * k, 16, 3);
    b.fits[2 * k] = f.s;
    b.fits[2 * k + 1] = f.m;
    if (f.s > max_scale) max_scale = f.s;
    if (f.m > max_min) max_min = f.m;
  }
  double d = round_to_f16(max_scale / 15);
  double dmin = round_to_f16(max_min / 15);
  double best_d = d, best_dmin = dmin, best_err = kInf;
  for (int round = 0; round <= kRefits; round++) {
    const double err = assign_q2(b, d, dmin);
    if (!(err < best_err)) break;
    best_err = err;
    best_d = d;
    best_dmin = dmin;
    for (int k = 0; k < 16; k++) {
      b.best_sc[k] = b.sc[k];
      b.best_mc[k] = b.mc[k];
    }
    if (round == kRefits) break;
    // Least squares for (d, dmin) in x ≈ d·a − dmin·b, a = scale code·q, b = min code.
    double saa = 0, sab = 0, sbb = 0, sax = 0, sbx = 0;
    for (int k = 0; k < 16; k++) {
      const double step = fr(d * b.sc[k]);
      const double off = fr(dmin * b.mc[k]);
      const double bk = b.mc[k];
      for (int j = 0; j < 16; j++) {
        const double v = x[16 * k + j];
        const double wt = b.wb[16 * k + j];
        const double a = b.sc[k] * code_q2(v, step, off);
        saa += wt * a * a;
        sab += wt * a * bk;
        sbb += wt * bk * bk;
        sax += wt * a * v;
        sbx += wt * bk * v;
      }
    }
    const double det = saa * sbb - sab * sab;
    double nd = det > 0 ? (sax * sbb - sbx * sab) / det : saa > 0 ? sax / saa : 0;
    double nm = det > 0 ? (sax * sab - sbx * saa) / det : 0;
    if (nm < 0) {
      nm = 0;
      nd = saa > 0 ? sax / saa : 0;
    }
    if (nd < 0) {
      nd = 0;
      nm = sbb > 0 ? js_max(0, -sbx / sbb) : 0;
    }
    nd = round_to_f16(nd);
    nm = round_to_f16(nm);
    if (nd == d && nm == dmin) break;
    d = nd;
    dmin = nm;
  }
  put_u16(dst + 80, f16_bits(best_d));
  put_u16(dst + 82, f16_bits(best_dmin));
  int8_t q[256];
  for (int k = 0; k < 16; k++) {
    dst[k] = static_cast<uint8_t>(b.best_sc[k] | (b.best_mc[k] << 4));
    const double step = fr(best_d * b.best_sc[k]);
    const double off = fr(best_dmin * b.best_mc[k]);
    for (int j = 0; j < 16; j++) q[16 * k + j] = static_cast<int8_t>(to_u8(code_q2(x[16 * k + j], step, off)));
  }
  for (int h = 0; h < 2; h++) {
    for (int l = 0; l < 32; l++) {
      const int y = 128 * h + l;
      dst[16 + 32 * h + l] = static_cast<uint8_t>(q[y] | (q[y + 32] << 2) | (q[y + 64] << 4) | (q[y + 96] << 6));
    }
  }
}

void quantize_q3_k(const float* x, const float* imp, uint8_t* dst) {
  LowBlock b;
  b.x = x;
  b.finite = all_finite(x, 256);
  b.weighted = imp && b.finite;
  if (b.weighted) {
    importance_weights(x, imp, 256, 2, b.wb);  // Q3_WEIGHT "sigma"
  } else {
    for (int j = 0; j < 256; j++) b.wb[j] = static_cast<double>(x[j]) * static_cast<double>(x[j]);
  }
  double amax = 0, max = 0;
  for (int k = 0; k < 16; k++) {
    const double s = b.weighted ? fit_scale_symmetric_w(x + 16 * k, b.wb + 16 * k, 16, 4) : fit_scale_symmetric(x + 16 * k, 16, 4);
    b.fits[k] = s;
    if (std::fabs(s) > amax) {
      amax = std::fabs(s);
      max = s;
    }
  }
  Q3Sub subs[16];
  for (int k = 0; k < 16; k++) subs[k] = Q3Sub{x + 16 * k, b.wb + 16 * k, b.weighted};
  double d = round_to_f16(max / -32);
  double best_d = d, best_err = kInf;
  for (int round = 0; round <= kRefits; round++) {
    const double err = assign_q3(b, subs, d);
    if (!(err < best_err)) break;
    best_err = err;
    best_d = d;
    for (int k = 0; k < 16; k++) b.best_sc[k] = b.sc[k];
    if (round == kRefits) break;
    // Least squares for d in x ≈ d·a, a = (code − 32)·q, weighted as the error.
    double saa = 0, sax = 0;
    for (int k = 0; k < 16; k++) {
      const double c = b.sc[k] - 32;
      const double step = fr(d * c);
      for (int j = 0; j < 16; j++) {
        const double v = x[16 * k + j];
        const double wt = b.wb[16 * k + j];
        const double a = c * code_q3(v, step);
        saa += wt * a * a;
        sax += wt * a * v;
      }
    }
    const double nd = round_to_f16(saa > 0 ? sax / saa : 0);
    if (nd == d) break;
    d = nd;
  }
  put_u16(dst + 108, f16_bits(best_d));
  for (int j = 0; j < 32; j++) dst[j] = 0;         // hmask
  for (int j = 96; j < 108; j++) dst[j] = 0;       // scales
  int8_t q[256];
  for (int k = 0; k < 16; k++) {
    const int c = b.best_sc[k];
    if (k < 8) dst[96 + k] |= static_cast<uint8_t>(c & 15);
    else dst[96 + k - 8] |= static_cast<uint8_t>((c & 15) << 4);
    dst[104 + (k % 4)] |= static_cast<uint8_t>((c >> 4) << (2 * (k >> 2)));
    const double step = fr(best_d * (c - 32));
    for (int j = 0; j < 16; j++) q[16 * k + j] = static_cast<int8_t>(to_u8(code_q3(x[16 * k + j], step)));
  }
  for (int n = 0; n < 256; n++) {
    if (q[n] >= 0) dst[n & 31] |= static_cast<uint8_t>(1 << (n >> 5));
  }
  for (int h = 0; h < 2; h++) {
    for (int l = 0; l < 32; l++) {
      const int y = 128 * h + l;
      dst[32 + 32 * h + l] = static_cast<uint8_t>(((q[y] + 4) & 3) | (((q[y + 32] + 4) & 3) << 2) |
                                                  (((q[y + 64] + 4) & 3) << 4) | (((q[y + 96] + 4) & 3) << 6));
    }
  }
}

}  // namespace minfer::cpu::qw
