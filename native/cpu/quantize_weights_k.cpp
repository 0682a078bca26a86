// Q4_K, Q5_K and Q6_K weight quantizers, ported from packages/gguf/src/quant/k-quant.ts
// (quantizeAsymBlock, quantizeAsymBlockW, quantizeQ4K, quantizeQ5K, quantizeQ6K): per sub-block
// fits, sub-block scales coded against f16 super-block scales, then every element re-coded
// against the scale it is decoded with. One 256-value block per call.
#include "quantize_weights.h"
#include "quantize_weights_fit.h"
#include "quantize_weights_lanes.h"

namespace minfer::cpu::qw {
namespace {

/** packScaleMinK4: 8 six-bit scales and mins into 12 bytes. */
void pack_scale_min(const uint8_t* sc, const uint8_t* mn, uint8_t* dst) {
  for (int j = 0; j < 4; j++) {
    dst[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    dst[j + 4] = static_cast<uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
    dst[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
}

/** The code of y for nmax levels: 0 below zero, else ⌊y + 0.5⌋ capped at nmax. */
inline double level(double y, int nmax) {
  const double t = y + 0.5;
  return y < 0 ? 0 : t >= nmax ? nmax : floor_pos(t);
}

/** errStepOff: squared error of decoding x[0..32) with (step, off), abandoned at bound. */
double err_step_off(const float* x, int nmax, double step, double off, double bound) {
  double err = 0;
  if (step > 0) {
    for (int j = 0; j < 32; j++) {
      const double v = x[j];
      const double l = level((v + off) / step, nmax);
      const double e = step * l - off - v;
      err += e * e;
      if (err >= bound) return err;
    }
  } else {
    const double z = step * 0;
    for (int j = 0; j < 32; j++) {
      const double e = z - off - x[j];
      err += e * e;
      if (err >= bound) return err;
    }
  }
  return err;
}

/** errStepOffW: the weighted squared error of decoding x[0..32) with (step, off). */
double err_step_off_w(const float* x, const double* w, int nmax, double step, double off) {
  double err = 0;
  for (int j = 0; j < 32; j++) {
    const double v = x[j];
    const double l = step > 0 ? clamp(round_away((v + off) / step), 0, nmax) : 0;
    const double e = step * l - off - v;
    err += w[j] * e * e;
  }
  return err;
}

/**
 * quantizeAsymBlock(W): writes d, dmin and the packed scales of one Q4_K/Q5_K block at dst and
 * the 256 codes (0..nmax) to q. `imp` non-null and the values finite: the weighted search.
 */
void asym_block(const float* x, const float* imp, int nmax, uint8_t* dst, uint8_t* q) {
  const bool finite = all_finite(x, 256);
  const bool weighted = imp && finite;
  double w[256];
  if (weighted) importance_weights(x, imp, 256, 2, w);
  double scales[8], mins[8];
  double max_scale = 0, max_min = 0;
  for (int k = 0; k < 8; k++) {
    const ScaleMin f = weighted ? fit_scale_min_w(x + 32 * k, w + 32 * k, 32, nmax)
                                : fit_scale_min_fast(x + 32 * k, 32, nmax);
    scales[k] = f.s;
    mins[k] = f.m;
    if (f.s > max_scale) max_scale = f.s;
    if (f.m > max_min) max_min = f.m;
  }
  const double d = round_to_f16(max_scale / 63);
  const double dmin = round_to_f16(max_min / 63);
  put_u16(dst, f16_bits(d));
  put_u16(dst + 2, f16_bits(dmin));
  uint8_t ls[8], lm[8];
  for (int k = 0; k < 8; k++) {
    const float* xs = x + 32 * k;
    const double rs = d > 0 ? clamp(round_away(scales[k] / d), 0, 63) : 0;
    const double rm = dmin > 0 ? clamp(round_away(mins[k] / dmin), 0, 63) : 0;
    if (weighted) {
      const double* wk = w + 32 * k;
      ls[k] = to_u8(rs);
      lm[k] = to_u8(rm);
      // The nearest codes' error first, then the (up to 5 × 5) candidates around them in order;
      // with finite scales, all their errors several at a time.
      double steps[26], offs[26], cands[26], candm[26], errs[26];
      steps[0] = fr(d * rs);
      offs[0] = fr(dmin * rm);
      int nc = 1;
      for (double cs = js_max(0, rs - 2); cs <= js_min(63, rs + 2); cs++) {
        for (double cm = js_max(0, rm - 2); cm <= js_min(63, rm + 2); cm++, nc++) {
          steps[nc] = fr(d * cs);
          offs[nc] = fr(dmin * cm);
          cands[nc] = cs;
          candm[nc] = cm;
        }
      }
      if (std::isfinite(d) && std::isfinite(dmin)) {
        lane_kernels().step_off_errors(xs, wk, nmax, steps, offs, nc, errs);
      } else {
        for (int c = 0; c < nc; c++) errs[c] = err_step_off_w(xs, wk, nmax, steps[c], offs[c]);
      }
      double best = errs[0];
      for (int c = 1; c < nc; c++) {
        if (errs[c] < best) {
          best = errs[c];
          ls[k] = to_u8(cands[c]);
          lm[k] = to_u8(candm[c]);
        }
      }
    } else {
      ls[k] = 0;
      lm[k] = 0;
      double best = kInf, best_step = kNaN, best_off = kNaN;
      const double cs1 = js_min(63, rs + 1);
      const double cm0 = js_max(0, rm - 1);
      const double cm1 = js_min(63, rm + 1);
      // The (up to 3 × 3) candidates in the TypeScript's order; with finite values, all their
      // errors first, several at a time.
      double steps[9], offs[9], cands[9], candm[9], errs[9];
      int nc = 0;
      for (double cs = js_max(0, rs - 1); cs <= cs1; cs++) {
        for (double cm = cm0; cm <= cm1; cm++, nc++) {
          steps[nc] = fr(d * cs);
          offs[nc] = fr(dmin * cm);
          cands[nc] = cs;
          candm[nc] = cm;
        }
      }
      const bool lanes = finite && std::isfinite(d) && std::isfinite(dmin);
      if (lanes) lane_kernels().step_off_errors(xs, nullptr, nmax, steps, offs, nc, errs);
      for (int c = 0; c < nc; c++) {
        const double step = steps[c], off = offs[c];
        if (step == best_step && off == best_off) continue;
        const double err = lanes ? errs[c] : err_step_off(xs, nmax, step, off, best);
        if (err < best) {
          best = err;
          best_step = step;
          best_off = off;
          ls[k] = to_u8(cands[c]);
          lm[k] = to_u8(candm[c]);
        }
      }
    }
    const double step = fr(d * ls[k]);
    const double off = fr(dmin * lm[k]);
    uint8_t* qk = q + 32 * k;
    if (weighted) {
      for (int j = 0; j < 32; j++) qk[j] = to_u8(step > 0 ? clamp(round_away((xs[j] + off) / step), 0, nmax) : 0);
    } else if (step > 0) {
      for (int j = 0; j < 32; j++) qk[j] = to_u8(level((xs[j] + off) / step, nmax));
    } else {
      for (int j = 0; j < 32; j++) qk[j] = 0;
    }
  }
  pack_scale_min(ls, lm, dst + 4);
}

/** errQ6W: weighted squared error of x[0..16) decoded with Q6_K step `step`. */
double err_q6_w(const float* x, const double* w, double step) {
  double err = 0;
  for (int j = 0; j < 16; j++) {
    const double v = x[j];
    const double l = step != 0 ? clamp(round_away(v / step), -32, 31) : 0;
    const double e = step * l - v;
    err += w[j] * e * e;
  }
  return err;
}

/** bestQ6Code: the int8 scale code among ls and its two neighbours each way with the least error. */
double best_q6_code(const float* x, const double* w, double d, double ls) {
  double best = ls;
  double best_err = err_q6_w(x, w, fr(d * ls));
  for (double c = js_max(-128, ls - 2); c <= js_min(127, ls + 2); c++) {
    const double err = err_q6_w(x, w, fr(d * c));
    if (err < best_err) {
      best_err = err;
      best = c;
    }
  }
  return best;
}

}  // namespace

void quantize_q4_k(const float* x, const float* imp, uint8_t* dst) {
  uint8_t q[256];
  asym_block(x, imp, 15, dst, q);
  for (int c = 0; c < 4; c++) {
    for (int l = 0; l < 32; l++) dst[16 + 32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
  }
}

void quantize_q5_k(const float* x, const float* imp, uint8_t* dst) {
  uint8_t q[256];
  asym_block(x, imp, 31, dst, q);
  for (int j = 16; j < 48; j++) dst[j] = 0;
  for (int c = 0; c < 4; c++) {
    for (int l = 0; l < 32; l++) {
      const int lo = q[64 * c + l];
      const int hi = q[64 * c + 32 + l];
      dst[48 + 32 * c + l] = static_cast<uint8_t>((lo & 15) | ((hi & 15) << 4));
      dst[16 + l] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
    }
  }
}

void quantize_q6_k(const float* x, const float* imp, uint8_t* dst) {
  const bool finite = all_finite(x, 256);
  const bool weighted = imp && finite;
  double w[256];
  if (weighted) {
    for (int j = 0; j < 256; j++) w[j] = imp[j];
  }
  double scales[16];
  double amax = 0, max = 0;
  for (int k = 0; k < 16; k++) {
    const double s = weighted ? fit_scale_symmetric_w(x + 16 * k, w + 16 * k, 16, 32)
                              : fit_scale_symmetric_fast(x + 16 * k, 16, 32);
    scales[k] = s;
    if (std::fabs(s) > amax) {
      amax = std::fabs(s);
      max = s;
    }
  }
  const double d = round_to_f16(max / -128);
  put_u16(dst + 208, f16_bits(d));
  uint8_t q[256];
  for (int k = 0; k < 16; k++) {
    double ls = d != 0 ? clamp(round_away(scales[k] / d), -128, 127) : 0;
    if (weighted && d != 0) ls = best_q6_code(x + 16 * k, w + 16 * k, d, ls);
    dst[192 + k] = to_u8(ls);
    const double step = fr(d * ls);
    const float* xk = x + 16 * k;
    if (step != 0 && finite && std::isfinite(step)) {
      lane_kernels().q6_codes(xk, step, q + 16 * k);
    } else if (step != 0) {
      for (int j = 0; j < 16; j++) q[16 * k + j] = to_u8(clamp(round_away(xk[j] / step), -32, 31) + 32);
    } else {
      for (int j = 0; j < 16; j++) q[16 * k + j] = 32;
    }
  }
  for (int h = 0; h < 2; h++) {
    for (int l = 0; l < 32; l++) {
      const int y = 128 * h + l;
      const int q1 = q[y], q2 = q[y + 32], q3 = q[y + 64], q4 = q[y + 96];
      dst[64 * h + l] = static_cast<uint8_t>((q1 & 15) | ((q3 & 15) << 4));
      dst[64 * h + l + 32] = static_cast<uint8_t>((q2 & 15) | ((q4 & 15) << 4));
      dst[128 + 32 * h + l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
    }
  }
}

}  // namespace minfer::cpu::qw
