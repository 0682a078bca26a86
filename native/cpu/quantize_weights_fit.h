// The sub-block fits the K-quant weight quantizers share (quantize_weights_fit.cpp: the generic
// searches of k-quant.ts and importance.ts; quantize_weights_fit_fast.cpp: its fast paths, same
// results). x points at the sub-block's first value, w (when taken) at its first weight.
#pragma once
#include "quantize_weights_js.h"

namespace minfer::cpu::qw {

/** (s, m) of x ≈ s·q − m, q ∈ 0..nmax, s ≥ 0, m ≥ 0 (fitScaleMin). */
struct ScaleMin {
  double s;
  double m;
};

/** Whether x[0..n) holds only finite values (allFinite: a NaN sum of x − x). */
bool all_finite(const float* x, int n);

/** out[j] = imp[j]·√(σ² + x[j]²), σ² = spread·mean(x²) (importanceWeights). */
void importance_weights(const float* x, const float* imp, int n, double spread, double* out);

ScaleMin fit_scale_min(const float* x, int n, int nmax);
ScaleMin fit_scale_min_w(const float* x, const double* w, int n, int nmax);
double fit_scale_symmetric(const float* x, int n, int nneg);
double fit_scale_symmetric_w(const float* x, const double* w, int n, int nneg);

/** fitScaleMinFast / fitScaleSymmetricFast: the same results, less work (n ≤ 32). */
ScaleMin fit_scale_min_fast(const float* x, int n, int nmax);
double fit_scale_symmetric_fast(const float* x, int n, int nneg);

}  // namespace minfer::cpu::qw
