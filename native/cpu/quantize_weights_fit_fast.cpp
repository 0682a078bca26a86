// The fast paths of packages/gguf/src/quant/k-quant.ts (fitScaleMinFast, fitScaleSymmetricFast
// and their helpers): the same candidates with the same sums, compared in the same order, the
// candidates' sums computed several at a time (quantize_weights_lanes.h). Where the TypeScript
// stops an error sum once it reaches the best error, these sum to the end: a stopped sum is never
// below the best, and neither is the whole one, so every comparison comes out the same. A
// sub-block holding a non-finite value takes the generic fit (quantize_weights_fit.cpp).
#include "quantize_weights_fit.h"
#include "quantize_weights_lanes.h"

namespace minfer::cpu::qw {
namespace {

/** The state of one fitScaleMinFast search (FIT of the TypeScript). */
struct Fit {
  double best_s, best_b, best_err;
  double last_s, last_b;
  const double* xs;
  int n;
  int nmax;
  double sx;

  /** solveScaleMin: the least-squares (s, b) for the sums. */
  void solve(double sl, double sll, double slx, double* s_out, double* b_out) const {
    const double det = n * sll - sl * sl;
    double s, b;
    if (det > 0) {
      s = (n * slx - sl * sx) / det;
      b = (sll * sx - sl * slx) / det;
    } else {
      s = 0;
      b = sx / n;
    }
    if (b > 0) {
      b = 0;
      s = sll > 0 ? slx / sll : 0;
    }
    if (s < 0) s = 0;
    *s_out = s;
    *b_out = b;
  }

  /** seen: (s, b) was scored already (its error cannot beat the best). */
  bool seen(double s, double b) const {
    return (s == last_s && b == last_b) || (s == best_s && b == best_b && best_err < kInf);
  }

  /** The rounded code of y, 0..nmax (y < 0 → 0; else ⌊y + 0.5⌋ capped). */
  double level(double y) const {
    const double t = y + 0.5;
    return y < 0 ? 0 : t >= nmax ? nmax : floor_pos(t);
  }

  /** errScaleMin: squared error of (s, b), abandoned once it reaches bound. */
  double error(double s, double b, double bound) const {
    double err = 0;
    if (s > 0) {
      for (int j = 0; j < n; j++) {
        const double v = xs[j];
        const double l = level((v - b) / s);
        const double e = s * l + b - v;
        err += e * e;
        if (err >= bound) return err;
      }
    } else {
      const double z = s * 0;
      for (int j = 0; j < n; j++) {
        const double e = z + b - xs[j];
        err += e * e;
        if (err >= bound) return err;
      }
    }
    return err;
  }

  /** offer: (s, b) with error err becomes the last scored, and the best if it beats it. */
  void offer(double s, double b, double err) {
    last_s = s;
    last_b = b;
    if (err < best_err) {
      best_s = s;
      best_b = b;
      best_err = err;
    }
  }
};

}  // namespace

ScaleMin fit_scale_min_fast(const float* x, int n, int nmax) {
  if (!all_finite(x, n)) return fit_scale_min(x, n, nmax);
  double xs[32], ds[32];
  double lo = 0, hi = -kInf;
  for (int j = 0; j < n; j++) {
    const double v = x[j];
    xs[j] = v;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  if (!(hi > lo)) return {0, -lo};
  double sx = 0;
  for (int j = 0; j < n; j++) {
    sx += xs[j];
    ds[j] = xs[j] - lo;
  }
  const double range = hi - lo;
  Fit f{range / nmax, lo, kInf, kNaN, kNaN, xs, n, nmax, sx};
  // The 26 grids' least-squares fits: l = clamp(round((v − lo)·i), 0, nmax), where v − lo ≥ 0
  // and i > 0, so rounding half away from zero is ⌊(v − lo)·i + 0.5⌋.
  const LaneKernels& lk = lane_kernels();
  double cs[kMinGrids], cb[kMinGrids];
  lk.min_grids(xs, ds, n, nmax, range, sx, cs, cb);
  // Every distinct candidate's error, then scorePair's bookkeeping over them in the TypeScript's
  // order (a candidate it would not score is skipped here too).
  double us[kMinGrids], ub[kMinGrids], ue[kMinGrids];
  int which[kMinGrids];
  int nu = 0;
  for (int k = 0; k < kMinGrids; k++) {
    // Neighbouring grids often round alike: a candidate equal to the one before is not scored
    // again (equal candidates further apart are, for the same error).
    if (nu == 0 || !(us[nu - 1] == cs[k] && ub[nu - 1] == cb[k])) {
      us[nu] = cs[k];
      ub[nu] = cb[k];
      nu++;
    }
    which[k] = nu - 1;
  }
  lk.min_errors(xs, n, nmax, us, ub, nu, ue);
  for (int k = 0; k < kMinGrids; k += 2) {
    const double s0 = cs[k], b0 = cb[k], s1 = cs[k + 1], b1 = cb[k + 1];
    const bool need0 = !f.seen(s0, b0);
    const bool need1 = !f.seen(s1, b1) && !(s1 == s0 && b1 == b0);
    if (need0) f.offer(s0, b0, ue[which[k]]);
    if (need1) f.offer(s1, b1, ue[which[k + 1]]);
  }
  for (int pass = 0; pass < 2 && f.best_s > 0; pass++) {
    const double iscale = 1 / f.best_s;
    const double offset = f.best_b;
    double sl = 0, sll = 0, slx = 0;
    for (int j = 0; j < n; j++) {
      const double v = xs[j];
      const double l = f.level((v - offset) * iscale);
      sl += l;
      sll += l * l;
      slx += l * v;
    }
    double s, b;
    f.solve(sl, sll, slx, &s, &b);
    if (!f.seen(s, b)) f.offer(s, b, f.error(s, b, f.best_err));
  }
  return {f.best_s, -f.best_b};
}

double fit_scale_symmetric_fast(const float* x, int n, int nneg) {
  if (!all_finite(x, n)) return fit_scale_symmetric(x, n, nneg);
  double as[32], cap[32];
  double amax = 0;
  for (int j = 0; j < n; j++) {
    const double v = x[j];
    as[j] = v < 0 ? -v : v;
    amax = as[j] > amax ? as[j] : amax;
  }
  if (amax == 0) return 0;
  double max = 0;  // the first element of the largest magnitude, with its sign
  for (int j = 0; j < n; j++) {
    if (as[j] == amax) {
      max = x[j];
      break;
    }
  }
  // iscale = −(nneg + δ)/max has the sign of −max; v·iscale < 0 exactly when v has max's sign
  // (v ≠ 0), where l may reach −nneg, else nneg − 1. l·v = sign(iscale)·|l|·|v|.
  for (int j = 0; j < n; j++) {
    const double v = x[j];
    cap[j] = nneg - 1 + static_cast<int>((v != 0) & ((v < 0) == (max < 0)));
  }
  const double sign = max < 0 ? 1 : -1;
  double best = max / -nneg;
  double best_score = -1;
  // The 21 grids δ = −1.0 … +1.0; a·i + 0.5 ≤ nneg + 1.5, so truncation is floor.
  double score[kSymGrids], scale[kSymGrids];
  lane_kernels().sym_grids(as, cap, n, nneg, amax, sign, score, scale);
  for (int k = 0; k < kSymGrids; k++) {
    if (score[k] > best_score) {
      best_score = score[k];
      best = scale[k];
    }
  }
  return best;
}

}  // namespace minfer::cpu::qw
