// The candidate searches of the K-quant weight quantizers that run several candidates per
// instruction (quantize_weights_simd.h): one definition, compiled once per vector width
// (quantize_weights_lanes.cpp: 2 lanes; quantize_weights_lanes_avx2.cpp: 4) and chosen at run
// time by lane_kernels(). Every candidate's sums run over the elements in order, as the
// TypeScript's (packages/gguf/src/quant/k-quant.ts, k-quant-low.ts) do.
#pragma once
#include "quantize_weights_simd.h"

namespace minfer::cpu::qw {

/** The grids δ = −1.0 … +1.5 (26) of fitScaleMin and −1.0 … +1.0 (21) of fitScaleSymmetric. */
constexpr int kMinGrids = 26;
constexpr int kSymGrids = 21;

/** The searches, one instance per vector width. */
struct LaneKernels {
  /**
   * fitScaleMinFast's grids: for δ = 0.1·(k − 10), k < 26, l_j = min(nmax, ⌊ds_j·i + 0.5⌋) with
   * i = (nmax + δ)/range (ds_j ≥ 0), the sums Σl, Σl², Σl·xs_j and from them the least-squares
   * (s[k], b[k]) of solveScaleMin (sx = Σxs_j).
   */
  void (*min_grids)(const double* xs, const double* ds, int n, int nmax, double range, double sx, double* s,
                    double* b);
  /** errScaleMin of candidates (s[c], b[c]), c < count, on finite xs[0..n), summed to the end. */
  void (*min_errors)(const double* xs, int n, int nmax, const double* s, const double* b, int count, double* err);
  /**
   * errStepOff (w null) or errStepOffW (element weights w) of candidates (step[c], off[c]),
   * c < count, on finite x[0..32) with finite steps and offsets, summed to the end.
   */
  void (*step_off_errors)(const float* x, const double* w, int nmax, const double* step, const double* off, int count,
                          double* err);
  /**
   * fitScaleSymmetricFast's grids: for δ = 0.1·(k − 10), k < 21, l_j = min(cap_j, ⌊as_j·i + 0.5⌋)
   * with i = (nneg + δ)/amax (as_j ≥ 0), the sums sll = Σl², slx = Σl·as_j, and from them
   * score[k] = sll > 0 ? slx²/sll : 0 and scale[k] = sign·slx/sll.
   */
  void (*sym_grids)(const double* as, const double* cap, int n, int nneg, double amax, double sign, double* score,
                    double* scale);
  /**
   * Q6_K's element codes: clamp(roundAway(x_j / step), −32, 31) + 32 for j < 16, step finite and
   * non-zero, x finite.
   */
  void (*q6_codes)(const float* x, double step, uint8_t* q);
  /**
   * fitScaleMin's (w null) or fitScaleMinW's tryGrid over the 26 grids of finite xs[0..n):
   * l_j = clamp(roundAway(ds_j·i), 0, nmax), i = (nmax + δ)/range, ds_j = xs_j − lo; the weighted
   * least-squares (s[k], b[k]) (total weight sw, Σw·x = sx) and its squared error err[k].
   */
  void (*min_fits)(const double* xs, const double* ds, const double* w, int n, int nmax, double range, double sw,
                   double sx, double* s, double* b, double* err);
  /**
   * fitScaleSymmetric's (w null) or fitScaleSymmetricW's grids over finite xs[0..n): l_j =
   * clamp(roundAway(xs_j·i), −nneg, nneg − 1), i = −(nneg + δ)/max; score[k] = sll > 0 ?
   * slx²/sll : 0, ratio[k] = slx/sll and some[k] = (sll > 0) as 1 or 0.
   */
  void (*sym_fits)(const double* xs, const double* w, int n, int nneg, double max, double* score, double* ratio,
                   double* some);
  /** errQ2 of candidates (step[c], off[c]) on finite x[0..16), weights ws, summed to the end. */
  void (*q2_errors)(const float* x, const double* ws, const double* step, const double* off, int count, double* err);
};

/** The widest instance this CPU runs (AVX2 where the CPU and OS allow it). */
const LaneKernels& lane_kernels();

namespace lanes_impl {

// Two vectors per pass: twice the candidates of one vector, and two independent sums to overlap.

/** solveScaleMin in every lane: the branches become selects between values computed alike. */
template <class V>
inline void solve_lanes(V n, V sx, V sl, V sll, V slx, V* s_out, V* b_out) {
  const V zero = splat<V>(0);
  const V det = n * sll - sl * sl;
  const auto pos = det > zero;
  V s = select(pos, (n * slx - sl * sx) / det, zero);
  V b = select(pos, (sll * sx - sl * slx) / det, sx / n);
  const auto up = b > zero;  // the offset must be ≤ 0: the scale alone with b = 0
  s = select(up, select(sll > zero, slx / sll, zero), s);
  b = select(up, zero, b);
  *s_out = select(s < zero, zero, s);
  *b_out = b;
}

template <class V>
void min_grids(const double* xs, const double* ds, int n, int nmax, double range, double sx, double* s, double* b) {
  constexpr int W = kLanes<V>;
  const V half = splat<V>(0.5), top = splat<V>(nmax);
  for (int g = 0; g < kMinGrids; g += 2 * W) {
    V inv[2], a[2], q[2], c[2];
    for (int h = 0; h < 2; h++) {
      for (int i = 0; i < W; i++) inv[h][i] = (nmax + 0.1 * (g + h * W + i - 10)) / range;
      a[h] = q[h] = c[h] = splat<V>(0);
    }
    for (int j = 0; j < n; j++) {
      const V v = splat<V>(xs[j]), dv = splat<V>(ds[j]);
      for (int h = 0; h < 2; h++) {
        const V l = vtrunc(vmin(dv * inv[h] + half, top));  // t ≥ nmax → nmax, else ⌊t⌋
        a[h] += l;
        q[h] += l * l;
        c[h] += l * v;
      }
    }
    for (int h = 0; h < 2; h++) {
      V sv, bv;
      solve_lanes(splat<V>(n), splat<V>(sx), a[h], q[h], c[h], &sv, &bv);
      for (int i = 0; i < W && g + h * W + i < kMinGrids; i++) {
        s[g + h * W + i] = sv[i];
        b[g + h * W + i] = bv[i];
      }
    }
  }
}

/** errScaleMin of candidates c0 … c0 + H·W − 1 (padded past count), H vectors of W lanes. */
template <class V, int H>
void min_errors_pass(const double* xs, int n, int nmax, const double* s, const double* b, int c0, int count,
                     double* err) {
  constexpr int W = kLanes<V>;
  const V half = splat<V>(0.5), zero = splat<V>(0), one = splat<V>(1), top = splat<V>(nmax);
  V ss[H], bb[H], sd[H], pos[H], acc[H];
  for (int h = 0; h < H; h++) {
    ss[h] = load_lanes<V>(s, c0 + h * W, count, 0);
    bb[h] = load_lanes<V>(b, c0 + h * W, count, 0);
    sd[h] = select(ss[h] > zero, ss[h], one);  // s ≤ 0: every level is 0 (errScaleMin's second loop)
    pos[h] = select(ss[h] > zero, one, zero);
    acc[h] = zero;
  }
  for (int j = 0; j < n; j++) {
    const V v = splat<V>(xs[j]);
    for (int h = 0; h < H; h++) {
      const V y = (v - bb[h]) / sd[h];
      const V l = vtrunc(vmin(vmax(y + half, zero), top)) * pos[h];  // y < 0 → 0, t ≥ nmax → nmax, else ⌊t⌋
      const V e = ss[h] * l + bb[h] - v;
      acc[h] += e * e;
    }
  }
  for (int c = c0; c < c0 + H * W && c < count; c++) err[c] = acc[(c - c0) / W][(c - c0) % W];
}

template <class V>
void min_errors(const double* xs, int n, int nmax, const double* s, const double* b, int count, double* err) {
  constexpr int W = kLanes<V>;
  int c0 = 0;
  for (; count - c0 > W; c0 += 2 * W) min_errors_pass<V, 2>(xs, n, nmax, s, b, c0, count, err);
  if (c0 < count) min_errors_pass<V, 1>(xs, n, nmax, s, b, c0, count, err);
}

/** errStepOff of candidates c0 … c0 + H·W − 1 (padded past count), H vectors of W lanes. */
template <class V, int H>
void step_off_pass(const float* x, const double* w, int nmax, const double* step, const double* off, int c0, int count,
                   double* err) {
  constexpr int W = kLanes<V>;
  const V half = splat<V>(0.5), zero = splat<V>(0), one = splat<V>(1), top = splat<V>(nmax);
  V st[H], of[H], sd[H], pos[H], acc[H];
  for (int h = 0; h < H; h++) {
    st[h] = load_lanes<V>(step, c0 + h * W, count, 0);
    of[h] = load_lanes<V>(off, c0 + h * W, count, 0);
    sd[h] = select(st[h] > zero, st[h], one);  // step ≤ 0: every level is 0 (errStepOff's second loop)
    pos[h] = select(st[h] > zero, one, zero);
    acc[h] = zero;
  }
  for (int j = 0; j < 32; j++) {
    const V v = splat<V>(x[j]);
    for (int h = 0; h < H; h++) {
      const V y = (v + of[h]) / sd[h];
      const V l = vtrunc(vmin(vmax(y + half, zero), top)) * pos[h];
      const V e = st[h] * l - of[h] - v;
      if (w) acc[h] += splat<V>(w[j]) * e * e;
      else acc[h] += e * e;
    }
  }
  for (int c = c0; c < c0 + H * W && c < count; c++) err[c] = acc[(c - c0) / W][(c - c0) % W];
}

template <class V>
void step_off_errors(const float* x, const double* w, int nmax, const double* step, const double* off, int count,
                     double* err) {
  constexpr int W = kLanes<V>;
  int c0 = 0;
  for (; count - c0 > W; c0 += 2 * W) step_off_pass<V, 2>(x, w, nmax, step, off, c0, count, err);
  if (c0 < count) step_off_pass<V, 1>(x, w, nmax, step, off, c0, count, err);
}

template <class V>
void sym_grids(const double* as, const double* cap, int n, int nneg, double amax, double sign, double* score,
               double* scale) {
  constexpr int W = kLanes<V>;
  const V half = splat<V>(0.5), zero = splat<V>(0);
  for (int g = 0; g < kSymGrids; g += 2 * W) {
    V inv[2], a[2], b[2];
    for (int h = 0; h < 2; h++) {
      for (int i = 0; i < W; i++) inv[h][i] = (nneg + 0.1 * (g + h * W + i - 10)) / amax;
      a[h] = b[h] = zero;
    }
    for (int j = 0; j < n; j++) {
      const V av = splat<V>(as[j]), c = splat<V>(cap[j]);
      for (int h = 0; h < 2; h++) {
        const V l = vmin(vtrunc(av * inv[h] + half), c);  // av·i + 0.5 ≤ nneg + 1.5
        a[h] += l * l;
        b[h] += l * av;
      }
    }
    for (int h = 0; h < 2; h++) {
      const V sc = select(a[h] > zero, (b[h] * b[h]) / a[h], zero);
      const V sv = (splat<V>(sign) * b[h]) / a[h];
      for (int i = 0; i < W && g + h * W + i < kSymGrids; i++) {
        score[g + h * W + i] = sc[i];
        scale[g + h * W + i] = sv[i];
      }
    }
  }
}

template <class V>
void q6_codes(const float* x, double step, uint8_t* q) {
  constexpr int W = kLanes<V>;
  const V st = splat<V>(step), zero = splat<V>(0), half = splat<V>(0.5), cap = splat<V>(40);
  for (int j0 = 0; j0 < 16; j0 += W) {
    V v;
    for (int i = 0; i < W; i++) v[i] = x[j0 + i];
    const V y = v / st;
    const V a = select(y < zero, -y, y) + half;  // |y| + 0.5 (y finite)
    const V r = vtrunc(vmin(a, cap));                                   // ⌊|y| + 0.5⌋; the clamp saturates past 40
    const V c = select(y < zero, -vmin(r, splat<V>(32)), vmin(r, splat<V>(31)));  // roundAway, clamped
    for (int i = 0; i < W; i++) q[j0 + i] = static_cast<uint8_t>(static_cast<int32_t>(c[i]) + 32);
  }
}

template <class V>
void min_fits(const double* xs, const double* ds, const double* w, int n, int nmax, double range, double sw, double sx,
              double* s, double* b, double* err) {
  constexpr int W = kLanes<V>;
  const V half = splat<V>(0.5), zero = splat<V>(0), one = splat<V>(1), top = splat<V>(nmax);
  for (int g = 0; g < kMinGrids; g += 2 * W) {
    V inv[2], a[2], q[2], c[2];
    for (int h = 0; h < 2; h++) {
      for (int i = 0; i < W; i++) inv[h][i] = (nmax + 0.1 * (g + h * W + i - 10)) / range;
      a[h] = q[h] = c[h] = zero;
    }
    for (int j = 0; j < n; j++) {
      const V v = splat<V>(xs[j]), dv = splat<V>(ds[j]);
      for (int h = 0; h < 2; h++) {
        const V l = vtrunc(vmin(dv * inv[h] + half, top));  // roundAway of a value ≥ 0, clamped
        if (w) {
          const V wl = splat<V>(w[j]) * l;
          a[h] += wl;
          q[h] += wl * l;
          c[h] += wl * v;
        } else {
          a[h] += l;
          q[h] += l * l;
          c[h] += l * v;
        }
      }
    }
    V ss[2], bb[2], sd[2], pos[2], acc[2];
    for (int h = 0; h < 2; h++) {
      solve_lanes(splat<V>(sw), splat<V>(sx), a[h], q[h], c[h], &ss[h], &bb[h]);
      sd[h] = select(ss[h] > zero, ss[h], one);  // s ≤ 0: every level is 0
      pos[h] = select(ss[h] > zero, one, zero);
      acc[h] = zero;
    }
    for (int j = 0; j < n; j++) {
      const V v = splat<V>(xs[j]);
      for (int h = 0; h < 2; h++) {
        const V y = (v - bb[h]) / sd[h];
        const V l = vtrunc(vmin(vmax(y + half, zero), top)) * pos[h];  // clamp(roundAway(y), 0, nmax)
        const V e = ss[h] * l + bb[h] - v;
        if (w) acc[h] += splat<V>(w[j]) * e * e;
        else acc[h] += e * e;
      }
    }
    for (int k = g; k < g + 2 * W && k < kMinGrids; k++) {
      s[k] = ss[(k - g) / W][(k - g) % W];
      b[k] = bb[(k - g) / W][(k - g) % W];
      err[k] = acc[(k - g) / W][(k - g) % W];
    }
  }
}

template <class V>
void sym_fits(const double* xs, const double* w, int n, int nneg, double max, double* score, double* ratio,
              double* some) {
  constexpr int W = kLanes<V>;
  const V half = splat<V>(0.5), zero = splat<V>(0), one = splat<V>(1);
  const V neg = splat<V>(nneg), posmax = splat<V>(nneg - 1), cap = splat<V>(nneg + 2);
  for (int g = 0; g < kSymGrids; g += 2 * W) {
    V is[2], a[2], c[2];
    for (int h = 0; h < 2; h++) {
      for (int i = 0; i < W; i++) is[h][i] = -(nneg + 0.1 * (g + h * W + i - 10)) / max;
      a[h] = c[h] = zero;
    }
    for (int j = 0; j < n; j++) {
      const V v = splat<V>(xs[j]);
      for (int h = 0; h < 2; h++) {
        const V y = v * is[h];  // |y| ≤ nneg + 1
        const V r = vtrunc(vmin(select(y < zero, -y, y) + half, cap));
        const V l = select(y < zero, -vmin(r, neg), vmin(r, posmax));  // roundAway, clamped (−0 kept)
        if (w) {
          const V wl = splat<V>(w[j]) * l;
          a[h] += wl * l;
          c[h] += wl * v;
        } else {
          a[h] += l * l;
          c[h] += l * v;
        }
      }
    }
    for (int h = 0; h < 2; h++) {
      const V sc = select(a[h] > zero, (c[h] * c[h]) / a[h], zero);
      const V ra = c[h] / a[h];
      const V so = select(a[h] > zero, one, zero);
      for (int i = 0; i < W && g + h * W + i < kSymGrids; i++) {
        score[g + h * W + i] = sc[i];
        ratio[g + h * W + i] = ra[i];
        some[g + h * W + i] = so[i];
      }
    }
  }
}

/** errQ2 of candidates c0 … c0 + H·W − 1 (padded past count). */
template <class V, int H>
void q2_pass(const float* x, const double* ws, const double* step, const double* off, int c0, int count,
             double* err) {
  constexpr int W = kLanes<V>;
  const V half = splat<V>(0.5), zero = splat<V>(0), one = splat<V>(1), lo = splat<V>(0.5), hi = splat<V>(2.5),
          three = splat<V>(3);
  V st[H], of[H], sd[H], pos[H], acc[H];
  for (int h = 0; h < H; h++) {
    st[h] = load_lanes<V>(step, c0 + h * W, count, 0);
    of[h] = load_lanes<V>(off, c0 + h * W, count, 0);
    sd[h] = select(st[h] > zero, st[h], one);  // step ≤ 0: e = −(off + v), the same square as off + v
    pos[h] = select(st[h] > zero, one, zero);
    acc[h] = zero;
  }
  for (int j = 0; j < 16; j++) {
    const V v = splat<V>(x[j]);
    for (int h = 0; h < H; h++) {
      const V y = (v + of[h]) / sd[h];
      // y < 0.5 → 0, y ≥ 2.5 → 3, else ⌊y + 0.5⌋ (compared on y, as errQ2 does)
      const V l = select(y < lo, zero, select(y >= hi, three, vtrunc(vmin(vmax(y + half, zero), three)))) * pos[h];
      const V e = st[h] * l - of[h] - v;
      acc[h] += splat<V>(ws[j]) * e * e;
    }
  }
  for (int c = c0; c < c0 + H * W && c < count; c++) err[c] = acc[(c - c0) / W][(c - c0) % W];
}

template <class V>
void q2_errors(const float* x, const double* ws, const double* step, const double* off, int count, double* err) {
  constexpr int W = kLanes<V>;
  int c0 = 0;
  for (; count - c0 > W; c0 += 2 * W) q2_pass<V, 2>(x, ws, step, off, c0, count, err);
  if (c0 < count) q2_pass<V, 1>(x, ws, step, off, c0, count, err);
}

template <class V>
constexpr LaneKernels kernels() {
  return {min_grids<V>, min_errors<V>, step_off_errors<V>, sym_grids<V>, q6_codes<V>,
          min_fits<V>,  sym_fits<V>,   q2_errors<V>};
}

}  // namespace lanes_impl
}  // namespace minfer::cpu::qw
