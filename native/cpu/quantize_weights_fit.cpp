// The generic sub-block fits of packages/gguf/src/quant/k-quant.ts (fitScaleMin, fitScaleMinW,
// fitScaleSymmetric, fitScaleSymmetricW) and the importance weights of importance.ts, operation
// for operation in doubles.
#include "quantize_weights_fit.h"

#include <cstring>

#include "quantize_weights_lanes.h"

namespace minfer::cpu::qw {

bool all_finite(const float* x, int n) {
  // Σ(x − x) is 0 exactly when no value is NaN or ±Infinity: checked on the exponent bits instead.
  uint32_t bad = 0;
  for (int j = 0; j < n; j++) {
    uint32_t u = 0;
    std::memcpy(&u, x + j, 4);
    bad |= static_cast<uint32_t>((u & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

void importance_weights(const float* x, const float* imp, int n, double spread, double* out) {
  double sum = 0;
  for (int j = 0; j < n; j++) sum += static_cast<double>(x[j]) * static_cast<double>(x[j]);
  const double sigma2 = (spread * sum) / n;
  for (int j = 0; j < n; j++) {
    const double v = x[j];
    out[j] = static_cast<double>(imp[j]) * std::sqrt(sigma2 + v * v);
  }
}

namespace {

/** The search of fitScaleMin(W): w null for the unweighted sums, sw their total weight. */
struct MinSearch {
  const float* x;
  const double* w;
  int n;
  int nmax;
  double sw;
  double best_s;
  double best_b;
  double best_err = kInf;

  void try_grid(double iscale, double offset) {
    double sl = 0, sll = 0, sx = 0, slx = 0;
    for (int j = 0; j < n; j++) {
      const double v = x[j];
      const double l = clamp(round_away((v - offset) * iscale), 0, nmax);
      if (w) {
        const double wj = w[j];
        sl += wj * l;
        sll += wj * l * l;
        sx += wj * v;
        slx += wj * l * v;
      } else {
        sl += l;
        sll += l * l;
        sx += v;
        slx += l * v;
      }
    }
    const double det = sw * sll - sl * sl;
    double s, b;
    if (det > 0) {
      s = (sw * slx - sl * sx) / det;
      b = (sll * sx - sl * slx) / det;
    } else {
      s = 0;
      b = sx / sw;
    }
    if (b > 0) {
      b = 0;
      s = sll > 0 ? slx / sll : 0;
    }
    if (s < 0) s = 0;
    double err = 0;
    for (int j = 0; j < n; j++) {
      const double v = x[j];
      const double l = s > 0 ? clamp(round_away((v - b) / s), 0, nmax) : 0;
      const double e = s * l + b - v;
      err += w ? w[j] * e * e : e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_s = s;
      best_b = b;
    }
  }

  ScaleMin run(double lo, double hi) {
    best_s = (hi - lo) / nmax;
    best_b = lo;
    if (n <= 32 && all_finite(x, n)) {
      // The 26 grids' fits and errors several at a time, then tryGrid's comparisons in order.
      double xs[32], ds[32], s[kMinGrids], b[kMinGrids], err[kMinGrids];
      double sx = 0;
      for (int j = 0; j < n; j++) {
        xs[j] = x[j];
        ds[j] = xs[j] - lo;
        sx += w ? w[j] * xs[j] : xs[j];
      }
      lane_kernels().min_fits(xs, ds, w, n, nmax, hi - lo, sw, sx, s, b, err);
      for (int k = 0; k < kMinGrids; k++) {
        if (err[k] < best_err) {
          best_err = err[k];
          best_s = s[k];
          best_b = b[k];
        }
      }
    } else {
      for (int k = -10; k <= 15; k++) try_grid((nmax + 0.1 * k) / (hi - lo), lo);
    }
    for (int pass = 0; pass < 2 && best_s > 0; pass++) try_grid(1 / best_s, best_b);
    return {best_s, -best_b};
  }
};

}  // namespace

ScaleMin fit_scale_min(const float* x, int n, int nmax) {
  double lo = 0, hi = -kInf;
  for (int j = 0; j < n; j++) {
    const double v = x[j];
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (!(hi > lo)) return {0, -lo};
  MinSearch m{x, nullptr, n, nmax, static_cast<double>(n), 0, 0};
  return m.run(lo, hi);
}

ScaleMin fit_scale_min_w(const float* x, const double* w, int n, int nmax) {
  double lo = 0, hi = -kInf, sw = 0;
  for (int j = 0; j < n; j++) {
    const double v = x[j];
    if (v < lo) lo = v;
    if (v > hi) hi = v;
    sw += w[j];
  }
  if (!(hi > lo)) return {0, -lo};
  if (!(sw > 0)) return fit_scale_min(x, n, nmax);
  MinSearch m{x, w, n, nmax, sw, 0, 0};
  return m.run(lo, hi);
}

namespace {

/** The signed abs-max element of x[0..n) (first of equals), its magnitude in *amax. */
double abs_max(const float* x, int n, double* amax) {
  double a = 0, max = 0;
  for (int j = 0; j < n; j++) {
    const double v = x[j];
    if (std::fabs(v) > a) {
      a = std::fabs(v);
      max = v;
    }
  }
  *amax = a;
  return max;
}

}  // namespace

/** The 21 grids of fitScaleSymmetric(W) several at a time, then its comparisons in order. */
static double sym_fit_lanes(const float* x, const double* w, int n, int nneg, double max) {
  double xs[32], score[kSymGrids], ratio[kSymGrids], some[kSymGrids];
  for (int j = 0; j < n; j++) xs[j] = x[j];
  lane_kernels().sym_fits(xs, w, n, nneg, max, score, ratio, some);
  double best = max / -nneg;
  double best_score = -1;
  for (int k = 0; k < kSymGrids; k++) {
    if (score[k] > best_score) {
      best_score = score[k];
      best = w && some[k] == 0 ? best : ratio[k];
    }
  }
  return best;
}

double fit_scale_symmetric(const float* x, int n, int nneg) {
  double amax = 0;
  const double max = abs_max(x, n, &amax);
  if (amax == 0) return 0;
  if (n <= 32 && all_finite(x, n)) return sym_fit_lanes(x, nullptr, n, nneg, max);
  double best = max / -nneg;
  double best_score = -1;
  for (int k = -10; k <= 10; k++) {
    const double iscale = -(nneg + 0.1 * k) / max;
    double sll = 0, slx = 0;
    for (int j = 0; j < n; j++) {
      const double v = x[j];
      const double l = clamp(round_away(v * iscale), -nneg, nneg - 1);
      sll += l * l;
      slx += l * v;
    }
    const double score = sll > 0 ? (slx * slx) / sll : 0;
    if (score > best_score) {
      best_score = score;
      best = slx / sll;
    }
  }
  return best;
}

double fit_scale_symmetric_w(const float* x, const double* w, int n, int nneg) {
  double amax = 0;
  const double max = abs_max(x, n, &amax);
  double sw = 0;
  for (int j = 0; j < n; j++) sw += w[j];
  if (amax == 0) return 0;
  if (!(sw > 0)) return fit_scale_symmetric(x, n, nneg);
  if (n <= 32 && all_finite(x, n)) return sym_fit_lanes(x, w, n, nneg, max);
  double best = max / -nneg;
  double best_score = -1;
  for (int k = -10; k <= 10; k++) {
    const double iscale = -(nneg + 0.1 * k) / max;
    double sll = 0, slx = 0;
    for (int j = 0; j < n; j++) {
      const double v = x[j];
      const double wj = w[j];
      const double l = clamp(round_away(v * iscale), -nneg, nneg - 1);
      sll += wj * l * l;
      slx += wj * l * v;
    }
    const double score = sll > 0 ? (slx * slx) / sll : 0;
    if (score > best_score) {
      best_score = score;
      best = sll > 0 ? slx / sll : best;
    }
  }
  return best;
}

}  // namespace minfer::cpu::qw
