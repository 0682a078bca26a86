// IQ4_NL and IQ4_XS weight quantizers, ported from packages/gguf/src/quant/iq4-quant.ts: per
// 32-value group, scales that put the abs-max element at or near an end of the level table,
// nearest levels and weighted least-squares refits; IQ4_XS then codes the eight group scales as
// 6-bit integers against an f16 super-block scale. Non-finite values count as 0 in the searches.
// With an importance matrix the search is wide (both table ends, neighbouring 6-bit integers);
// without one the weights are σ² + x² and the search narrow (see the TypeScript's header).
#include "../common/iq_grids.h"
#include "quantize_weights.h"
#include "quantize_weights_js.h"

namespace minfer::cpu::qw {
namespace {

constexpr int kZeroCode = 8;       // ZERO_CODE: the level nearest zero
constexpr int kTry = 8;            // NTRY
constexpr double kF16Max = 65504;  // F16_MAX

/** LEVEL (the 16 levels as doubles) and MID (midpoints of neighbours). */
struct Levels {
  double level[16];
  double mid[15];
  Levels() {
    for (int i = 0; i < 16; i++) level[i] = quant::kvalues_iq4nl[i];
    for (int i = 0; i < 15; i++) mid[i] = (level[i] + level[i + 1]) / 2;
  }
};
const Levels kL;

/** nearest: the code of the level nearest t (ties to the larger; NaN → 0, ±Inf → an end). */
inline int nearest(double t) {
  int lo = 0, hi = 15;
  while (lo < hi) {
    const int m = (lo + hi) >> 1;
    if (t >= kL.mid[m]) lo = m + 1;
    else hi = m;
  }
  return lo;
}

/** scaleBits: f16 bits of d clamped to the finite range. */
inline uint16_t scale_bits(double d) { return f16_bits(js_min(js_max(d, -kF16Max), kF16Max)); }

/** codeOf: the code of v decoded with scale d. */
inline int code_of(double v, double d) {
  if (d == 0 || std::isnan(v)) return kZeroCode;
  return nearest(v / d);
}

/**
 * W/WO/IMPORTANCE of the TypeScript: the block's element weights (or none), the current group's
 * offset, and whether the weights are an importance matrix's.
 */
struct Weights {
  double block[256];
  const double* w = nullptr;
  int wo = 0;
  bool importance = false;

  /**
   * setWeights: without importance σ² + x² (non-finite values as 0); with it, the importance of
   * x[0..n) when every value is finite and some weight > 0.
   */
  void set(const float* x, const float* imp, int n) {
    w = nullptr;
    wo = 0;
    importance = imp != nullptr;
    if (!imp) {
      double s2 = 0;
      for (int j = 0; j < n; j++) {
        const double v = x[j];
        block[j] = v - v == 0 ? v * v : 0;
        s2 += block[j];
      }
      s2 *= 2.0 / n;
      for (int j = 0; j < n; j++) block[j] += s2;
      w = block;
      return;
    }
    for (int j = 0; j < n; j++) {
      if (static_cast<double>(x[j]) - static_cast<double>(x[j]) != 0) return;
    }
    double sw = 0;
    for (int j = 0; j < n; j++) {
      block[j] = imp[j];
      sw += block[j];
    }
    if (sw > 0) w = block;
  }
};

/** fitIQ4Scale: the signed scale d of x[0..32) ≈ d·LEVEL[q], 0 for a zero group. */
double fit_scale(const float* x, const Weights& W) {
  double xs[32];
  double amax = 0, max = 0;
  for (int j = 0; j < 32; j++) {
    double v = x[j];
    if (v - v != 0) v = 0;
    xs[j] = v;
    const double a = v < 0 ? -v : v;
    if (a > amax) {
      amax = a;
      max = v;
    }
  }
  if (amax == 0) return 0;
  double best_d = 0, best_score = 0;
  const double* w = W.w;
  const int wo = W.wo;
  if (w) {
    double sw = 0;
    for (int j = 0; j < 32; j++) sw += w[wo + j];
    if (!(sw > 0)) w = nullptr;
  }
  const auto score = [&](double id) {
    double sqx = 0, sq2 = 0;
    if (w) {
      for (int j = 0; j < 32; j++) {
        const double v = xs[j];
        const double q = kL.level[nearest(v * id)];
        const double wq = w[wo + j] * q;
        sqx += wq * v;
        sq2 += wq * q;
      }
    } else {
      for (int j = 0; j < 32; j++) {
        const double v = xs[j];
        const double q = kL.level[nearest(v * id)];
        sqx += q * v;
        sq2 += q * q;
      }
    }
    if (!(sq2 > 0)) return;
    if (sqx * sqx > best_score * sq2) {
      best_score = (sqx * sqx) / sq2;
      best_d = sqx / sq2;
    }
  };
  for (int k = -kTry; k <= kTry; k++) {
    score((kL.level[0] + k) / max);
    if (W.importance) score((kL.level[15] + k) / max);
  }
  for (int round = 0; round < 8 && best_d != 0; round++) {
    const double before = best_score;
    score(1 / best_d);
    if (!(best_score > before)) break;
  }
  return best_d;
}

/** writeCodes: x[0..32) decoded with scale d, element j low nibble / j + 16 high nibble of byte j. */
void write_codes(const float* x, double d, uint8_t* dst) {
  for (int j = 0; j < 16; j++) dst[j] = static_cast<uint8_t>(code_of(x[j], d) | (code_of(x[j + 16], d) << 4));
}

/** groupError: squared error of x[0..32) with scale d (non-finite values as 0), abandoned at bound. */
double group_error(const float* x, double d, double bound, const Weights& W) {
  double err = 0;
  for (int j = 0; j < 32; j++) {
    double v = x[j];
    if (v - v != 0) v = 0;
    const double e = v - d * kL.level[code_of(v, d)];
    err += W.w ? W.w[W.wo + j] * e * e : e * e;
    if (err >= bound) return err;
  }
  return err;
}

/** chooseScales: each group's 6-bit scale for super-block scale d into l; the total error. */
double choose_scales(const float* x, double d, const double* scale, Weights& W, int8_t* l) {
  double total = 0;
  for (int ib = 0; ib < 8; ib++) {
    W.wo = 32 * ib;
    const double l0 = js_min(js_max(js_round(scale[ib] / d), -32), 31);
    double best = kInf, best_l = 0;
    const double r = W.importance ? 1 : 0;
    for (double c = l0 - r; c <= l0 + r; c++) {
      if (c < -32 || c > 31) continue;
      const double err = group_error(x + 32 * ib, d * c, best, W);
      if (err < best) {
        best = err;
        best_l = c;
      }
    }
    l[ib] = static_cast<int8_t>(to_u8(best_l));
    total += best;
  }
  return total;
}

}  // namespace

void quantize_iq4_nl(const float* x, const float* imp, uint8_t* dst) {
  Weights W;
  W.set(x, imp, 32);
  uint16_t bits = scale_bits(fit_scale(x, W));
  if ((bits & 0x7fff) == 0) bits = 0;
  put_u16(dst, bits);
  write_codes(x, f16_value(bits), dst + 2);
}

void quantize_iq4_xs(const float* x, const float* imp, uint8_t* dst) {
  Weights W;
  W.set(x, imp, 256);
  double scale[8];
  double max_scale = 0;
  for (int ib = 0; ib < 8; ib++) {
    W.wo = 32 * ib;
    const double s = fit_scale(x + 32 * ib, W);
    scale[ib] = s;
    if (std::fabs(s) > std::fabs(max_scale)) max_scale = s;
  }
  uint16_t bits = 0;
  int8_t best_l[8] = {}, l[8] = {};
  if (max_scale != 0) {
    double best_err = kInf;
    for (int c = 0; c < 4; c++) {
      const uint16_t b = scale_bits(-max_scale / (32 - c / 2.0));
      const double d = f16_value(b);
      if (d == 0) continue;
      const double err = choose_scales(x, d, scale, W, l);
      if (err < best_err) {
        best_err = err;
        bits = b;
        for (int ib = 0; ib < 8; ib++) best_l[ib] = l[ib];
      }
    }
  }
  const double d = f16_value(bits);
  put_u16(dst, bits);
  uint32_t scales_h = 0;
  for (int ib = 0; ib < 8; ib++) {
    const int li = best_l[ib];
    const int biased = li + 32;
    if (ib % 2 == 0) dst[4 + (ib >> 1)] = static_cast<uint8_t>(biased & 15);
    else dst[4 + (ib >> 1)] |= static_cast<uint8_t>((biased & 15) << 4);
    scales_h |= static_cast<uint32_t>(biased >> 4) << (2 * ib);
    write_codes(x + 32 * ib, d * li, dst + 8 + 16 * ib);
  }
  put_u16(dst + 2, scales_h);
}

}  // namespace minfer::cpu::qw
