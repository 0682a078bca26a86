// Row conversions (quants.h) and the scalar reference kernels of the matmul dot products.
//
// dequantize_row / quantize_row follow @minfer/gguf's reference TypeScript (packages/gguf/src/
// quant) operation by operation, with every intermediate rounded to f32, so they produce the same
// values and bytes. The activation quantizers and the scalar vec_dots define what the SIMD
// versions (quants_avx2.cpp, quants_avx512.cpp) must reproduce.
//
// Baseline file: no AVX here. Floating-point contraction is switched off so that d*q - m is two
// roundings, as in the reference.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>
#include <cmath>
#include <cstring>

#include "../common/fp16.h"
#include "kernel.h"
#include "quants.h"
#include "quants_internal.h"

namespace minfer::cpu {

using program::DType;
using namespace q;

namespace {
inline void wr16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v & 0xff);
  p[1] = static_cast<uint8_t>(v >> 8);
}
inline void wr32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// ------------------------------------------------------------------------------------------------
// Dequantizers (element order and f32 rounding as packages/gguf/src/quant/*.ts).

void deq_q4_0(const uint8_t* s, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, s += 18, y += 32) {
    const float d = f16_at(s);
    for (int j = 0; j < 16; j++) {
      const int b = s[2 + j];
      y[j] = static_cast<float>((b & 15) - 8) * d;
      y[j + 16] = static_cast<float>((b >> 4) - 8) * d;
    }
  }
}

void deq_q4_1(const uint8_t* s, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, s += 20, y += 32) {
    const float d = f16_at(s), m = f16_at(s + 2);
    for (int j = 0; j < 16; j++) {
      const int b = s[4 + j];
      y[j] = static_cast<float>(b & 15) * d + m;
      y[j + 16] = static_cast<float>(b >> 4) * d + m;
    }
  }
}

void deq_q5_0(const uint8_t* s, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, s += 22, y += 32) {
    const float d = f16_at(s);
    const uint32_t qh = rd32(s + 2);
    for (int j = 0; j < 16; j++) {
      const int b = s[6 + j];
      const int h0 = ((qh >> j) & 1) << 4;
      const int h1 = ((qh >> (j + 16)) & 1) << 4;
      y[j] = static_cast<float>((b & 15) + h0 - 16) * d;
      y[j + 16] = static_cast<float>((b >> 4) + h1 - 16) * d;
    }
  }
}

void deq_q5_1(const uint8_t* s, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, s += 24, y += 32) {
    const float d = f16_at(s), m = f16_at(s + 2);
    const uint32_t qh = rd32(s + 4);
    for (int j = 0; j < 16; j++) {
      const int b = s[8 + j];
      const int h0 = ((qh >> j) & 1) << 4;
      const int h1 = ((qh >> (j + 16)) & 1) << 4;
      y[j] = static_cast<float>((b & 15) + h0) * d + m;
      y[j + 16] = static_cast<float>((b >> 4) + h1) * d + m;
    }
  }
}

void deq_q8_0(const uint8_t* s, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, s += 34, y += 32) {
    const float d = f16_at(s);
    for (int j = 0; j < 32; j++) y[j] = static_cast<float>(static_cast<int8_t>(s[2 + j])) * d;
  }
}

void deq_q2_k(const uint8_t* s, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, s += 84) {
    const float d = f16_at(s + 80), dmin = f16_at(s + 82);
    int k = 0;
    for (int h = 0; h < 2; h++) {
      const uint8_t* q = s + 16 + 32 * h;
      for (int shift = 0; shift < 8; shift += 2) {
        for (int half = 0; half < 2; half++, k++) {
          const int sc = s[k];
          const float dl = d * static_cast<float>(sc & 15);
          const float ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; l++) {
            const float p = dl * static_cast<float>((q[16 * half + l] >> shift) & 3);
            *y++ = p - ml;
          }
        }
      }
    }
  }
}

void deq_q3_k(const uint8_t* s, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, s += 110) {
    const float d = f16_at(s + 108);
    int8_t sc[16];
    scales_q3k(s + 96, sc);
    int k = 0, bit = 0;
    for (int h = 0; h < 2; h++) {
      const uint8_t* q = s + 32 + 32 * h;
      for (int shift = 0; shift < 8; shift += 2, bit++) {
        for (int half = 0; half < 2; half++, k++) {
          const float dl = d * static_cast<float>(sc[k]);
          for (int l = 16 * half; l < 16 * half + 16; l++) {
            const int hi = (s[l] >> bit) & 1;
            *y++ = dl * static_cast<float>(((q[l] >> shift) & 3) - (hi ? 0 : 4));
          }
        }
      }
    }
  }
}

void deq_q4_k(const uint8_t* s, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, s += 144) {
    const float d = f16_at(s), dmin = f16_at(s + 2);
    for (int c = 0; c < 4; c++) {
      int s1, m1, s2, m2;
      scale_min_k4(2 * c, s + 4, &s1, &m1);
      scale_min_k4(2 * c + 1, s + 4, &s2, &m2);
      const float d1 = d * static_cast<float>(s1), n1 = dmin * static_cast<float>(m1);
      const float d2 = d * static_cast<float>(s2), n2 = dmin * static_cast<float>(m2);
      const uint8_t* q = s + 16 + 32 * c;
      for (int l = 0; l < 32; l++) {
        const float p = d1 * static_cast<float>(q[l] & 15);
        *y++ = p - n1;
      }
      for (int l = 0; l < 32; l++) {
        const float p = d2 * static_cast<float>(q[l] >> 4);
        *y++ = p - n2;
      }
    }
  }
}

void deq_q5_k(const uint8_t* s, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, s += 176) {
    const float d = f16_at(s), dmin = f16_at(s + 2);
    const uint8_t* qh = s + 16;
    for (int c = 0; c < 4; c++) {
      int s1, m1, s2, m2;
      scale_min_k4(2 * c, s + 4, &s1, &m1);
      scale_min_k4(2 * c + 1, s + 4, &s2, &m2);
      const float d1 = d * static_cast<float>(s1), n1 = dmin * static_cast<float>(m1);
      const float d2 = d * static_cast<float>(s2), n2 = dmin * static_cast<float>(m2);
      const uint8_t* q = s + 48 + 32 * c;
      for (int l = 0; l < 32; l++) {
        const int hi = ((qh[l] >> (2 * c)) & 1) << 4;
        const float p = d1 * static_cast<float>((q[l] & 15) | hi);
        *y++ = p - n1;
      }
      for (int l = 0; l < 32; l++) {
        const int hi = ((qh[l] >> (2 * c + 1)) & 1) << 4;
        const float p = d2 * static_cast<float>((q[l] >> 4) | hi);
        *y++ = p - n2;
      }
    }
  }
}

void deq_q6_k(const uint8_t* s, float* out, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, s += 210, out += 256) {
    const float d = f16_at(s + 208);
    const int8_t* scales = reinterpret_cast<const int8_t*>(s + 192);
    for (int h = 0; h < 2; h++) {
      float* y = out + 128 * h;
      for (int l = 0; l < 32; l++) {
        const int a = s[64 * h + l];
        const int b = s[64 * h + l + 32];
        const int c = s[128 + 32 * h + l];
        const int q1 = ((a & 15) | ((c & 3) << 4)) - 32;
        const int q2 = ((b & 15) | (((c >> 2) & 3) << 4)) - 32;
        const int q3 = ((a >> 4) | (((c >> 4) & 3) << 4)) - 32;
        const int q4 = ((b >> 4) | (((c >> 6) & 3) << 4)) - 32;
        const int8_t* sc = scales + 8 * h + (l >> 4);
        y[l] = (d * static_cast<float>(sc[0])) * static_cast<float>(q1);
        y[l + 32] = (d * static_cast<float>(sc[2])) * static_cast<float>(q2);
        y[l + 64] = (d * static_cast<float>(sc[4])) * static_cast<float>(q3);
        y[l + 96] = (d * static_cast<float>(sc[6])) * static_cast<float>(q4);
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Quantizers (ggml's reference algorithms, as packages/gguf/src/quant/legacy.ts; the K-quants
// as packages/gguf/src/quant/k-quant.ts).

float signed_abs_max(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; j++) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void quant_q4_0(const float* x, uint8_t* o, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, x += 32, o += 18) {
    const float d = signed_abs_max(x, 32) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    wr16(o, f32_to_fp16(d));
    for (int j = 0; j < 16; j++) {
      const float v0 = x[j] * id, v1 = x[j + 16] * id;
      const int q0 = std::min(15, static_cast<int>(v0 + 8.5f));
      const int q1 = std::min(15, static_cast<int>(v1 + 8.5f));
      o[2 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void minmax32(const float* x, float* mn, float* mx) {
  float lo = INFINITY, hi = -INFINITY;
  for (int j = 0; j < 32; j++) {
    if (x[j] < lo) lo = x[j];
    if (x[j] > hi) hi = x[j];
  }
  *mn = lo;
  *mx = hi;
}

void quant_q4_1(const float* x, uint8_t* o, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, x += 32, o += 20) {
    float mn, mx;
    minmax32(x, &mn, &mx);
    const float d = (mx - mn) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    wr16(o, f32_to_fp16(d));
    wr16(o + 2, f32_to_fp16(mn));
    for (int j = 0; j < 16; j++) {
      const float v0 = (x[j] - mn) * id, v1 = (x[j + 16] - mn) * id;
      const int q0 = std::min(15, static_cast<int>(v0 + 0.5f));
      const int q1 = std::min(15, static_cast<int>(v1 + 0.5f));
      o[4 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void quant_q5_0(const float* x, uint8_t* o, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, x += 32, o += 22) {
    const float d = signed_abs_max(x, 32) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    wr16(o, f32_to_fp16(d));
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
      const float v0 = x[j] * id, v1 = x[j + 16] * id;
      const int q0 = std::min(31, static_cast<int>(v0 + 16.5f));
      const int q1 = std::min(31, static_cast<int>(v1 + 16.5f));
      o[6 + j] = static_cast<uint8_t>((q0 & 15) | ((q1 & 15) << 4));
      qh |= (static_cast<uint32_t>(q0 >> 4) << j) | (static_cast<uint32_t>(q1 >> 4) << (j + 16));
    }
    wr32(o + 2, qh);
  }
}

void quant_q5_1(const float* x, uint8_t* o, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, x += 32, o += 24) {
    float mn, mx;
    minmax32(x, &mn, &mx);
    const float d = (mx - mn) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    wr16(o, f32_to_fp16(d));
    wr16(o + 2, f32_to_fp16(mn));
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
      const float v0 = (x[j] - mn) * id, v1 = (x[j + 16] - mn) * id;
      const int q0 = std::min(31, static_cast<int>(v0 + 0.5f));
      const int q1 = std::min(31, static_cast<int>(v1 + 0.5f));
      o[8 + j] = static_cast<uint8_t>((q0 & 15) | ((q1 & 15) << 4));
      qh |= (static_cast<uint32_t>(q0 >> 4) << j) | (static_cast<uint32_t>(q1 >> 4) << (j + 16));
    }
    wr32(o + 4, qh);
  }
}

void quant_q8_0(const float* x, uint8_t* o, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, x += 32, o += 34) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    wr16(o, f32_to_fp16(d));
    for (int j = 0; j < 32; j++) {
      const float v = x[j] * id;
      o[2 + j] = static_cast<uint8_t>(static_cast<int>(std::round(v)) & 0xff);
    }
  }
}

// ------------------------------------------------------------------------------------------------
// K-quant quantizers (Q4_K, Q5_K, Q6_K): ports of packages/gguf/src/quant/k-quant.ts. The TS
// works in float64 (JS numbers) except where it rounds explicitly (Math.fround → f32,
// roundToF16 → f16), so these do too, operation by operation, to produce the same bytes.

// IEEE binary16 bits of the double x, rounded to nearest even directly from x (f32ToF16 in f16.ts;
// f32_to_fp16 would round to f32 first).
double round_half_even(double v) {
  const double f = std::floor(v);
  const double r = v - f;
  if (r > 0.5) return f + 1;
  if (r < 0.5) return f;
  return std::fmod(f, 2.0) == 0.0 ? f : f + 1;
}

uint16_t f16_bits_from_double(double x) {
  if (std::isnan(x)) return 0x7e00;
  const uint32_t sign = std::signbit(x) ? 0x8000u : 0u;
  const double a = std::fabs(x);
  if (a >= 65520.0) return static_cast<uint16_t>(sign | 0x7c00u);
  if (a < std::ldexp(1.0, -14)) return static_cast<uint16_t>(sign | static_cast<uint32_t>(round_half_even(a * 16777216.0)));
  int ex;
  std::frexp(a, &ex);  // a = f·2^ex, f in [0.5, 1): 2^(ex-1) ≤ a < 2^ex
  const int e = ex - 1;
  const int m = static_cast<int>(round_half_even(a * std::ldexp(1.0, 10 - e)));  // 1024..2048
  return static_cast<uint16_t>(sign | static_cast<uint32_t>(((e + 15) << 10) + (m - 1024)));
}

// The f16 value nearest to x (roundToF16).
double round_to_f16(double x) { return static_cast<double>(fp16_to_f32(f16_bits_from_double(x))); }
// Math.fround.
inline double fround(double x) { return static_cast<double>(static_cast<float>(x)); }
// Nearest integer, halves away from zero (roundAway).
inline double round_away(double v) { return v < 0 ? -std::floor(-v + 0.5) : std::floor(v + 0.5); }
// Math.min(Math.max(v, lo), hi) for finite v.
inline double clampd(double v, double lo, double hi) { return std::min(std::max(v, lo), hi); }

// fitScaleMin: x[0..n) ≈ s·q − m, q in 0..nmax, s ≥ 0, m ≥ 0. Returns s and m.
void fit_scale_min(const float* x, int n, int nmax, double* s_out, double* m_out) {
  double lo = 0, hi = -INFINITY;
  for (int j = 0; j < n; j++) {
    const double v = x[j];
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (!(hi > lo)) {
    *s_out = 0;
    *m_out = -lo;
    return;
  }
  double best_s = (hi - lo) / nmax, best_b = lo, best_err = INFINITY;
  auto try_grid = [&](double iscale, double offset) {
    double sl = 0, sll = 0, sx = 0, slx = 0;
    for (int j = 0; j < n; j++) {
      const double v = x[j];
      const double l = clampd(round_away((v - offset) * iscale), 0, nmax);
      sl += l;
      sll += l * l;
      sx += v;
      slx += l * v;
    }
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
    double err = 0;
    for (int j = 0; j < n; j++) {
      const double v = x[j];
      const double l = s > 0 ? clampd(round_away((v - b) / s), 0, nmax) : 0;
      const double e = s * l + b - v;
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_s = s;
      best_b = b;
    }
  };
  for (int k = -10; k <= 15; k++) try_grid((nmax + 0.1 * k) / (hi - lo), lo);
  for (int pass = 0; pass < 2 && best_s > 0; pass++) try_grid(1 / best_s, best_b);
  *s_out = best_s;
  *m_out = -best_b;
}

// fitScaleSymmetric: x[0..n) ≈ s·q, q in −nneg..nneg−1.
double fit_scale_symmetric(const float* x, int n, int nneg) {
  double amax = 0, max = 0;
  for (int j = 0; j < n; j++) {
    const double v = x[j];
    if (std::fabs(v) > amax) {
      amax = std::fabs(v);
      max = v;
    }
  }
  if (amax == 0) return 0;
  double best = max / -nneg, best_score = -1;
  for (int k = -10; k <= 10; k++) {
    const double iscale = -(nneg + 0.1 * k) / max;
    double sll = 0, slx = 0;
    for (int j = 0; j < n; j++) {
      const double v = x[j];
      const double l = clampd(round_away(v * iscale), -nneg, nneg - 1);
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

// quantizeAsymBlock: the shared body of Q4_K and Q5_K for one 256-element block at x; writes d,
// dmin and the packed scales at o and the 256 codes (natural order) to q.
void quantize_asym_block(const float* x, int nmax, uint8_t* o, uint8_t* q) {
  double scales[8], mins[8], max_scale = 0, max_min = 0;
  for (int k = 0; k < 8; k++) {
    fit_scale_min(x + 32 * k, 32, nmax, &scales[k], &mins[k]);
    if (scales[k] > max_scale) max_scale = scales[k];
    if (mins[k] > max_min) max_min = mins[k];
  }
  const double d = round_to_f16(max_scale / 63);
  const double dmin = round_to_f16(max_min / 63);
  wr16(o, f16_bits_from_double(d));
  wr16(o + 2, f16_bits_from_double(dmin));
  uint8_t ls[8], lm[8];
  for (int k = 0; k < 8; k++) {
    const float* xs = x + 32 * k;
    const int rs = d > 0 ? static_cast<int>(clampd(round_away(scales[k] / d), 0, 63)) : 0;
    const int rm = dmin > 0 ? static_cast<int>(clampd(round_away(mins[k] / dmin), 0, 63)) : 0;
    double best_err = INFINITY;
    ls[k] = 0;
    lm[k] = 0;
    for (int cs = std::max(0, rs - 1); cs <= std::min(63, rs + 1); cs++) {
      for (int cm = std::max(0, rm - 1); cm <= std::min(63, rm + 1); cm++) {
        const double step = fround(d * cs);
        const double off = fround(dmin * cm);
        double err = 0;
        for (int j = 0; j < 32; j++) {
          const double v = xs[j];
          const double l = step > 0 ? clampd(round_away((v + off) / step), 0, nmax) : 0;
          const double e = step * l - off - v;
          err += e * e;
        }
        if (err < best_err) {
          best_err = err;
          ls[k] = static_cast<uint8_t>(cs);
          lm[k] = static_cast<uint8_t>(cm);
        }
      }
    }
    const double step = fround(d * ls[k]);
    const double off = fround(dmin * lm[k]);
    for (int j = 0; j < 32; j++)
      q[32 * k + j] = step > 0 ? static_cast<uint8_t>(clampd(round_away((xs[j] + off) / step), 0, nmax)) : 0;
  }
  // packScaleMinK4
  for (int j = 0; j < 4; j++) {
    o[4 + j] = static_cast<uint8_t>(ls[j] | ((ls[j + 4] >> 4) << 6));
    o[4 + j + 4] = static_cast<uint8_t>(lm[j] | ((lm[j + 4] >> 4) << 6));
    o[4 + j + 8] = static_cast<uint8_t>((ls[j + 4] & 15) | ((lm[j + 4] & 15) << 4));
  }
}

void quant_q4_k(const float* x, uint8_t* o, int64_t nb) {
  uint8_t q[256];
  for (int64_t i = 0; i < nb; i++, x += 256, o += 144) {
    quantize_asym_block(x, 15, o, q);
    for (int c = 0; c < 4; c++)
      for (int l = 0; l < 32; l++) o[16 + 32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
  }
}

void quant_q5_k(const float* x, uint8_t* o, int64_t nb) {
  uint8_t q[256];
  for (int64_t i = 0; i < nb; i++, x += 256, o += 176) {
    quantize_asym_block(x, 31, o, q);
    std::memset(o + 16, 0, 32);
    for (int c = 0; c < 4; c++)
      for (int l = 0; l < 32; l++) {
        const int lo = q[64 * c + l], hi = q[64 * c + 32 + l];
        o[48 + 32 * c + l] = static_cast<uint8_t>((lo & 15) | ((hi & 15) << 4));
        o[16 + l] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
  }
}

void quant_q6_k(const float* x, uint8_t* o, int64_t nb) {
  double scales[16];
  uint8_t q[256];
  for (int64_t i = 0; i < nb; i++, x += 256, o += 210) {
    double amax = 0, max = 0;
    for (int k = 0; k < 16; k++) {
      scales[k] = fit_scale_symmetric(x + 16 * k, 16, 32);
      if (std::fabs(scales[k]) > amax) {
        amax = std::fabs(scales[k]);
        max = scales[k];
      }
    }
    const double d = round_to_f16(max / -128);
    wr16(o + 208, f16_bits_from_double(d));
    for (int k = 0; k < 16; k++) {
      const int ls = d != 0 ? static_cast<int>(clampd(round_away(scales[k] / d), -128, 127)) : 0;
      o[192 + k] = static_cast<uint8_t>(ls & 0xff);
      const double step = fround(d * ls);
      for (int j = 0; j < 16; j++) {
        const double v = x[16 * k + j];
        q[16 * k + j] = step != 0 ? static_cast<uint8_t>(static_cast<int>(clampd(round_away(v / step), -32, 31)) + 32) : 32;
      }
    }
    for (int h = 0; h < 2; h++)
      for (int l = 0; l < 32; l++) {
        const int y = 128 * h + l;
        const int q1 = q[y], q2 = q[y + 32], q3 = q[y + 64], q4 = q[y + 96];
        o[64 * h + l] = static_cast<uint8_t>((q1 & 15) | ((q3 & 15) << 4));
        o[64 * h + l + 32] = static_cast<uint8_t>((q2 & 15) | ((q4 & 15) << 4));
        o[128 + 32 * h + l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
      }
  }
}

int block_of(DType t) {
  for (const auto& l : program::kBlockLayouts)
    if (l.dtype == static_cast<int32_t>(t)) return l.block_size;
  return 0;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// quants.h

bool has_dequantize(DType t) {
  switch (t) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q8_0:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ2_XXS:
    case DType::IQ2_XS:
    case DType::IQ2_S:
    case DType::IQ3_XXS:
    case DType::IQ3_S:
    case DType::IQ1_S:
    case DType::IQ1_M:
    case DType::IQ4_NL:
    case DType::IQ4_XS:
    case DType::TQ1_0:
    case DType::TQ2_0:
    case DType::MXFP4:
      return true;
    default:
      return false;
  }
}

bool has_quantize(DType t) {
  switch (t) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q8_0:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
      return true;
    default:
      return false;
  }
}

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint8_t*>(src);
  const int bs = block_of(t);
  const int64_t nb = bs > 0 ? n / bs : 0;
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      break;
    case DType::F16:
      for (int64_t i = 0; i < n; i++) dst[i] = fp16_to_f32(rd16(s + 2 * i));
      break;
    case DType::BF16:
      for (int64_t i = 0; i < n; i++) dst[i] = bf16_to_f32(rd16(s + 2 * i));
      break;
    case DType::Q4_0: deq_q4_0(s, dst, nb); break;
    case DType::Q4_1: deq_q4_1(s, dst, nb); break;
    case DType::Q5_0: deq_q5_0(s, dst, nb); break;
    case DType::Q5_1: deq_q5_1(s, dst, nb); break;
    case DType::Q8_0: deq_q8_0(s, dst, nb); break;
    case DType::Q2_K: deq_q2_k(s, dst, nb); break;
    case DType::Q3_K: deq_q3_k(s, dst, nb); break;
    case DType::Q4_K: deq_q4_k(s, dst, nb); break;
    case DType::Q5_K: deq_q5_k(s, dst, nb); break;
    case DType::Q6_K: deq_q6_k(s, dst, nb); break;
    case DType::IQ2_XXS: deq_iq2_xxs(s, dst, nb); break;
    case DType::IQ2_XS: deq_iq2_xs(s, dst, nb); break;
    case DType::IQ2_S: deq_iq2_s(s, dst, nb); break;
    case DType::IQ3_XXS: deq_iq3_xxs(s, dst, nb); break;
    case DType::IQ3_S: deq_iq3_s(s, dst, nb); break;
    case DType::IQ1_S: deq_iq1_s(s, dst, nb); break;
    case DType::IQ1_M: deq_iq1_m(s, dst, nb); break;
    case DType::IQ4_NL: deq_iq4_nl(s, dst, nb); break;
    case DType::IQ4_XS: deq_iq4_xs(s, dst, nb); break;
    case DType::TQ1_0: deq_tq1_0(s, dst, nb); break;
    case DType::TQ2_0: deq_tq2_0(s, dst, nb); break;
    case DType::MXFP4: deq_mxfp4(s, dst, nb); break;
    default:
      for (int64_t i = 0; i < n; i++) dst[i] = NAN;  // unsupported: callers check has_dequantize
      break;
  }
}

void quantize_row(DType t, const float* src, void* dst, int64_t n) {
  auto* o = static_cast<uint8_t*>(dst);
  const int bs = block_of(t);
  const int64_t nb = bs > 0 ? n / bs : 0;
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      break;
    case DType::F16:
      for (int64_t i = 0; i < n; i++) wr16(o + 2 * i, f32_to_fp16(src[i]));
      break;
    case DType::BF16:
      for (int64_t i = 0; i < n; i++) wr16(o + 2 * i, f32_to_bf16(src[i]));
      break;
    case DType::Q4_0: quant_q4_0(src, o, nb); break;
    case DType::Q4_1: quant_q4_1(src, o, nb); break;
    case DType::Q5_0: quant_q5_0(src, o, nb); break;
    case DType::Q5_1: quant_q5_1(src, o, nb); break;
    case DType::Q8_0: quant_q8_0(src, o, nb); break;
    case DType::Q4_K: quant_q4_k(src, o, nb); break;
    case DType::Q5_K: quant_q5_k(src, o, nb); break;
    case DType::Q6_K: quant_q6_k(src, o, nb); break;
    default: break;  // unsupported: callers check has_quantize
  }
}

namespace q {

// ------------------------------------------------------------------------------------------------
// Activation quantization (scalar reference; SIMD versions must give identical bytes).
// d = amax/127, q = nearest-even(x · (1/d)).

void quantize_q8a_scalar(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8A*>(dst);
  for (int64_t i = 0; i < n / 32; i++, x += 32) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int j = 0; j < 32; j++) {
      const int v = static_cast<int>(std::nearbyint(x[j] * id));
      y[i].qs[j] = static_cast<int8_t>(v);
      sum += v;
    }
    y[i].d = act_scale_f16(d);
    y[i].s = y[i].d * static_cast<float>(sum);
  }
}

void quantize_q8k_scalar(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8K*>(dst);
  for (int64_t i = 0; i < n / 256; i++, x += 256) {
    float amax = 0.0f;
    for (int j = 0; j < 256; j++) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 256; j++) y[i].qs[j] = static_cast<int8_t>(std::nearbyint(x[j] * id));
    for (int g = 0; g < 16; g++) {
      int s = 0;
      for (int j = 0; j < 16; j++) s += y[i].qs[16 * g + j];
      y[i].bsums[g] = static_cast<int16_t>(s);
    }
    y[i].d = d;
  }
}

// ------------------------------------------------------------------------------------------------
// Scalar vec_dots.

#define COLS_LOOP for (int c = 0; c < nc; c++)
#define ACT(T) reinterpret_cast<const T*>(static_cast<const uint8_t*>(act) + c * act_stride)

void vec_dot_f32_scalar(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                        float* out) {
  const auto* x = static_cast<const float*>(w);
  COLS_LOOP {
    const float* a = ACT(float);
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) s += x[i] * a[i];
    out[c] = s;
  }
}

void vec_dot_f16_scalar(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                        float* out) {
  const auto* x = static_cast<const uint8_t*>(w);
  COLS_LOOP {
    const float* a = ACT(float);
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) s += fp16_to_f32(rd16(x + 2 * i)) * a[i];
    out[c] = s;
  }
}

void vec_dot_bf16_scalar(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                         float* out) {
  const auto* x = static_cast<const uint8_t*>(w);
  COLS_LOOP {
    const float* a = ACT(float);
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) s += bf16_to_f32(rd16(x + 2 * i)) * a[i];
    out[c] = s;
  }
}

// 32-element types: integer dot of the unsigned codes q (0..15 or 0..31) or signed q (Q8_0)
// with the activation codes, then  d·da·Σq·a + (offset term)·s_a  per block.
void vec_dot_q4_0_scalar(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                         float* out) {
  const int64_t nb = n / 32;
  COLS_LOOP {
    const BlockQ8A* a = ACT(BlockQ8A);
    const auto* x = static_cast<const uint8_t*>(w);
    float s = 0.0f;
    for (int64_t i = 0; i < nb; i++, x += 18) {
      int isum = 0;
      for (int j = 0; j < 16; j++)
        isum += (x[2 + j] & 15) * a[i].qs[j] + (x[2 + j] >> 4) * a[i].qs[j + 16];
      const float d = fp16_to_f32(rd16(x));
      s += d * (a[i].d * static_cast<float>(isum) - 8.0f * a[i].s);
    }
    out[c] = s;
  }
}

void vec_dot_q4_1_scalar(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                         float* out) {
  const int64_t nb = n / 32;
  COLS_LOOP {
    const BlockQ8A* a = ACT(BlockQ8A);
    const auto* x = static_cast<const uint8_t*>(w);
    float s = 0.0f;
    for (int64_t i = 0; i < nb; i++, x += 20) {
      int isum = 0;
      for (int j = 0; j < 16; j++)
        isum += (x[4 + j] & 15) * a[i].qs[j] + (x[4 + j] >> 4) * a[i].qs[j + 16];
      const float d = fp16_to_f32(rd16(x)), m = fp16_to_f32(rd16(x + 2));
      s += d * a[i].d * static_cast<float>(isum) + m * a[i].s;
    }
    out[c] = s;
  }
}

void vec_dot_q5_0_scalar(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                         float* out) {
  const int64_t nb = n / 32;
  COLS_LOOP {
    const BlockQ8A* a = ACT(BlockQ8A);
    const auto* x = static_cast<const uint8_t*>(w);
    float s = 0.0f;
    for (int64_t i = 0; i < nb; i++, x += 22) {
      const uint32_t qh = rd32(x + 2);
      int isum = 0;
      for (int j = 0; j < 16; j++) {
        const int q0 = (x[6 + j] & 15) | (((qh >> j) & 1) << 4);
        const int q1 = (x[6 + j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
        isum += q0 * a[i].qs[j] + q1 * a[i].qs[j + 16];
      }
      const float d = fp16_to_f32(rd16(x));
      s += d * (a[i].d * static_cast<float>(isum) - 16.0f * a[i].s);
    }
    out[c] = s;
  }
}

void vec_dot_q5_1_scalar(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                         float* out) {
  const int64_t nb = n / 32;
  COLS_LOOP {
    const BlockQ8A* a = ACT(BlockQ8A);
    const auto* x = static_cast<const uint8_t*>(w);
    float s = 0.0f;
    for (int64_t i = 0; i < nb; i++, x += 24) {
      const uint32_t qh = rd32(x + 4);
      int isum = 0;
      for (int j = 0; j < 16; j++) {
        const int q0 = (x[8 + j] & 15) | (((qh >> j) & 1) << 4);
        const int q1 = (x[8 + j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
        isum += q0 * a[i].qs[j] + q1 * a[i].qs[j + 16];
      }
      const float d = fp16_to_f32(rd16(x)), m = fp16_to_f32(rd16(x + 2));
      s += d * a[i].d * static_cast<float>(isum) + m * a[i].s;
    }
    out[c] = s;
  }
}

void vec_dot_q8_0_scalar(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                         float* out) {
  const int64_t nb = n / 32;
  COLS_LOOP {
    const BlockQ8A* a = ACT(BlockQ8A);
    const auto* x = static_cast<const uint8_t*>(w);
    float s = 0.0f;
    for (int64_t i = 0; i < nb; i++, x += 34) {
      int isum = 0;
      for (int j = 0; j < 32; j++) isum += static_cast<int8_t>(x[2 + j]) * a[i].qs[j];
      s += fp16_to_f32(rd16(x)) * a[i].d * static_cast<float>(isum);
    }
    out[c] = s;
  }
}

// K-quants against Q8_K: per super-block, Σ_sub scale·(Σ q·a) in integers, min/offset terms via
// the activation's 16-element sums, then × d·da (and dmin·da) in float.
void vec_dot_q2_k_scalar(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                         float* out) {
  const int64_t nb = n / 256;
  COLS_LOOP {
    const BlockQ8K* a = ACT(BlockQ8K);
    const auto* x = static_cast<const uint8_t*>(w);
    float s = 0.0f;
    for (int64_t i = 0; i < nb; i++, x += 84) {
      const int8_t* aq = a[i].qs;
      int sumi = 0, summ = 0, k = 0;
      for (int h = 0; h < 2; h++) {
        const uint8_t* q = x + 16 + 32 * h;
        for (int shift = 0; shift < 8; shift += 2) {
          for (int half = 0; half < 2; half++, k++) {
            int is = 0;
            for (int l = 0; l < 16; l++) is += ((q[16 * half + l] >> shift) & 3) * aq[l];
            aq += 16;
            sumi += (x[k] & 15) * is;
            summ += (x[k] >> 4) * a[i].bsums[k];
          }
        }
      }
      const float d = fp16_to_f32(rd16(x + 80)), dmin = fp16_to_f32(rd16(x + 82));
      s += a[i].d * (d * static_cast<float>(sumi) - dmin * static_cast<float>(summ));
    }
    out[c] = s;
  }
}

void vec_dot_q3_k_scalar(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                         float* out) {
  const int64_t nb = n / 256;
  COLS_LOOP {
    const BlockQ8K* a = ACT(BlockQ8K);
    const auto* x = static_cast<const uint8_t*>(w);
    float s = 0.0f;
    for (int64_t i = 0; i < nb; i++, x += 110) {
      int8_t sc[16];
      scales_q3k(x + 96, sc);
      const int8_t* aq = a[i].qs;
      int sumi = 0, k = 0, bit = 0;
      for (int h = 0; h < 2; h++) {
        const uint8_t* q = x + 32 + 32 * h;
        for (int shift = 0; shift < 8; shift += 2, bit++) {
          for (int half = 0; half < 2; half++, k++) {
            int is = 0;
            for (int l = 16 * half; l < 16 * half + 16; l++) {
              const int u = ((q[l] >> shift) & 3) | (((x[l] >> bit) & 1) << 2);  // q + 4
              is += u * aq[l - 16 * half];
            }
            aq += 16;
            sumi += sc[k] * (is - 4 * a[i].bsums[k]);
          }
        }
      }
      s += fp16_to_f32(rd16(x + 108)) * a[i].d * static_cast<float>(sumi);
    }
    out[c] = s;
  }
}

void vec_dot_q4_k_scalar(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                         float* out) {
  const int64_t nb = n / 256;
  COLS_LOOP {
    const BlockQ8K* a = ACT(BlockQ8K);
    const auto* x = static_cast<const uint8_t*>(w);
    float s = 0.0f;
    for (int64_t i = 0; i < nb; i++, x += 144) {
      const int8_t* aq = a[i].qs;
      int sumi = 0, summ = 0;
      for (int c4 = 0; c4 < 4; c4++) {
        int s1, m1, s2, m2;
        scale_min_k4(2 * c4, x + 4, &s1, &m1);
        scale_min_k4(2 * c4 + 1, x + 4, &s2, &m2);
        const uint8_t* q = x + 16 + 32 * c4;
        int i1 = 0, i2 = 0;
        for (int l = 0; l < 32; l++) {
          i1 += (q[l] & 15) * aq[l];
          i2 += (q[l] >> 4) * aq[l + 32];
        }
        aq += 64;
        sumi += s1 * i1 + s2 * i2;
        const int16_t* bs = a[i].bsums + 4 * c4;
        summ += m1 * (bs[0] + bs[1]) + m2 * (bs[2] + bs[3]);
      }
      const float d = fp16_to_f32(rd16(x)), dmin = fp16_to_f32(rd16(x + 2));
      s += a[i].d * (d * static_cast<float>(sumi) - dmin * static_cast<float>(summ));
    }
    out[c] = s;
  }
}

void vec_dot_q5_k_scalar(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                         float* out) {
  const int64_t nb = n / 256;
  COLS_LOOP {
    const BlockQ8K* a = ACT(BlockQ8K);
    const auto* x = static_cast<const uint8_t*>(w);
    float s = 0.0f;
    for (int64_t i = 0; i < nb; i++, x += 176) {
      const int8_t* aq = a[i].qs;
      const uint8_t* qh = x + 16;
      int sumi = 0, summ = 0;
      for (int c4 = 0; c4 < 4; c4++) {
        int s1, m1, s2, m2;
        scale_min_k4(2 * c4, x + 4, &s1, &m1);
        scale_min_k4(2 * c4 + 1, x + 4, &s2, &m2);
        const uint8_t* q = x + 48 + 32 * c4;
        int i1 = 0, i2 = 0;
        for (int l = 0; l < 32; l++) {
          i1 += ((q[l] & 15) | (((qh[l] >> (2 * c4)) & 1) << 4)) * aq[l];
          i2 += ((q[l] >> 4) | (((qh[l] >> (2 * c4 + 1)) & 1) << 4)) * aq[l + 32];
        }
        aq += 64;
        sumi += s1 * i1 + s2 * i2;
        const int16_t* bs = a[i].bsums + 4 * c4;
        summ += m1 * (bs[0] + bs[1]) + m2 * (bs[2] + bs[3]);
      }
      const float d = fp16_to_f32(rd16(x)), dmin = fp16_to_f32(rd16(x + 2));
      s += a[i].d * (d * static_cast<float>(sumi) - dmin * static_cast<float>(summ));
    }
    out[c] = s;
  }
}

void vec_dot_q6_k_scalar(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                         float* out) {
  const int64_t nb = n / 256;
  COLS_LOOP {
    const BlockQ8K* a = ACT(BlockQ8K);
    const auto* x = static_cast<const uint8_t*>(w);
    float s = 0.0f;
    for (int64_t i = 0; i < nb; i++, x += 210) {
      const int8_t* sc = reinterpret_cast<const int8_t*>(x + 192);
      int sub[16] = {0};  // Σ u·a per 16-element sub-block, u = q + 32 in 0..63
      for (int h = 0; h < 2; h++) {
        const int8_t* aq = a[i].qs + 128 * h;
        for (int l = 0; l < 32; l++) {
          const int A = x[64 * h + l], B = x[64 * h + l + 32], C = x[128 + 32 * h + l];
          const int g = 8 * h + (l >> 4);
          sub[g] += ((A & 15) | ((C & 3) << 4)) * aq[l];
          sub[g + 2] += ((B & 15) | (((C >> 2) & 3) << 4)) * aq[l + 32];
          sub[g + 4] += ((A >> 4) | (((C >> 4) & 3) << 4)) * aq[l + 64];
          sub[g + 6] += ((B >> 4) | (((C >> 6) & 3) << 4)) * aq[l + 96];
        }
      }
      int sumi = 0;
      for (int g = 0; g < 16; g++) sumi += sc[g] * (sub[g] - 32 * a[i].bsums[g]);
      s += fp16_to_f32(rd16(x + 208)) * a[i].d * static_cast<float>(sumi);
    }
    out[c] = s;
  }
}

#undef COLS_LOOP
#undef ACT

// ------------------------------------------------------------------------------------------------
// Traits and dispatch.

namespace {

// dot[0] scalar; dot[1] AVX2 (x86-64) or NEON (arm64); dot[2] AVX-512. A null entry falls back.
#if defined(__x86_64__) || defined(_M_X64)
#define DOTS(name) {vec_dot_##name##_scalar, vec_dot_##name##_avx2, vec_dot_##name##_avx512}
#elif defined(__aarch64__)
// NEON kernels are looked up by neon_vec_dot (quants_neon*.cpp), dot[1] filled in weight_traits.
#define DOTS(name) {vec_dot_##name##_scalar, nullptr, nullptr}
#else
#define DOTS(name) {vec_dot_##name##_scalar, nullptr, nullptr}
#endif

const WeightTraits kUnsupported = {false, 1, 1, ActFormat::F32, {nullptr, nullptr, nullptr}};
const WeightTraits kF32 = {true, 1, 4, ActFormat::F32, DOTS(f32)};
const WeightTraits kF16 = {true, 1, 2, ActFormat::F32, DOTS(f16)};
const WeightTraits kBF16 = {true, 1, 2, ActFormat::F32, DOTS(bf16)};
const WeightTraits kQ4_0 = {true, 32, 18, ActFormat::Q8A, DOTS(q4_0)};
const WeightTraits kQ4_1 = {true, 32, 20, ActFormat::Q8A, DOTS(q4_1)};
const WeightTraits kQ5_0 = {true, 32, 22, ActFormat::Q8A, DOTS(q5_0)};
const WeightTraits kQ5_1 = {true, 32, 24, ActFormat::Q8A, DOTS(q5_1)};
const WeightTraits kQ8_0 = {true, 32, 34, ActFormat::Q8A, DOTS(q8_0)};
const WeightTraits kQ2_K = {true, 256, 84, ActFormat::Q8K, DOTS(q2_k)};
const WeightTraits kQ3_K = {true, 256, 110, ActFormat::Q8K, DOTS(q3_k)};
const WeightTraits kQ4_K = {true, 256, 144, ActFormat::Q8K, DOTS(q4_k)};
const WeightTraits kQ5_K = {true, 256, 176, ActFormat::Q8K, DOTS(q5_k)};
const WeightTraits kQ6_K = {true, 256, 210, ActFormat::Q8K, DOTS(q6_k)};
// The i-quants, ternary types and MXFP4: AVX2 / AVX-512 in quants_iq4_x86.h (IQ4_NL, IQ4_XS,
// MXFP4), quants_iq23_x86.h (IQ2_*, IQ3_*) and quants_iq1t_x86.h (IQ1_S, IQ1_M, TQ1_0, TQ2_0).
const WeightTraits kIQ2_XXS = {true, 256, 66, ActFormat::Q8K, DOTS(iq2_xxs)};
const WeightTraits kIQ2_XS = {true, 256, 74, ActFormat::Q8K, DOTS(iq2_xs)};
const WeightTraits kIQ2_S = {true, 256, 82, ActFormat::Q8K, DOTS(iq2_s)};
const WeightTraits kIQ3_XXS = {true, 256, 98, ActFormat::Q8K, DOTS(iq3_xxs)};
const WeightTraits kIQ3_S = {true, 256, 110, ActFormat::Q8K, DOTS(iq3_s)};
const WeightTraits kIQ1_S = {true, 256, 50, ActFormat::Q8K, DOTS(iq1_s)};
const WeightTraits kIQ1_M = {true, 256, 56, ActFormat::Q8K, DOTS(iq1_m)};
const WeightTraits kIQ4_NL = {true, 32, 18, ActFormat::Q8A, DOTS(iq4_nl)};
const WeightTraits kIQ4_XS = {true, 256, 136, ActFormat::Q8K, DOTS(iq4_xs)};
const WeightTraits kTQ1_0 = {true, 256, 54, ActFormat::Q8K, DOTS(tq1_0)};
const WeightTraits kTQ2_0 = {true, 256, 66, ActFormat::Q8K, DOTS(tq2_0)};
const WeightTraits kMXFP4 = {true, 32, 17, ActFormat::Q8A, DOTS(mxfp4)};
#undef DOTS

int level_index(SimdLevel level) {
  switch (level) {
    case SimdLevel::AVX512: return 2;
    case SimdLevel::AVX2:
    case SimdLevel::NEON: return 1;
    default: return 0;
  }
}

}  // namespace

namespace {
const WeightTraits& base_traits(DType t) {
  switch (t) {
    case DType::F32: return kF32;
    case DType::F16: return kF16;
    case DType::BF16: return kBF16;
    case DType::Q4_0: return kQ4_0;
    case DType::Q4_1: return kQ4_1;
    case DType::Q5_0: return kQ5_0;
    case DType::Q5_1: return kQ5_1;
    case DType::Q8_0: return kQ8_0;
    case DType::Q2_K: return kQ2_K;
    case DType::Q3_K: return kQ3_K;
    case DType::Q4_K: return kQ4_K;
    case DType::Q5_K: return kQ5_K;
    case DType::Q6_K: return kQ6_K;
    case DType::IQ2_XXS: return kIQ2_XXS;
    case DType::IQ2_XS: return kIQ2_XS;
    case DType::IQ2_S: return kIQ2_S;
    case DType::IQ3_XXS: return kIQ3_XXS;
    case DType::IQ3_S: return kIQ3_S;
    case DType::IQ1_S: return kIQ1_S;
    case DType::IQ1_M: return kIQ1_M;
    case DType::IQ4_NL: return kIQ4_NL;
    case DType::IQ4_XS: return kIQ4_XS;
    case DType::TQ1_0: return kTQ1_0;
    case DType::TQ2_0: return kTQ2_0;
    case DType::MXFP4: return kMXFP4;
    default: return kUnsupported;
  }
}
}  // namespace

const WeightTraits& weight_traits(DType t) {
#if defined(__aarch64__)
  // dot[1] of each type is its NEON kernel, where quants_neon*.cpp has one (neon_vec_dot).
  constexpr int kTable = 64;
  struct Table {
    WeightTraits v[kTable];
    Table() {
      for (int i = 0; i < kTable; i++) {
        v[i] = base_traits(static_cast<DType>(i));
        if (v[i].supported) v[i].dot[1] = neon_vec_dot(static_cast<DType>(i));
      }
    }
  };
  static const Table table;
  const int i = static_cast<int>(t);
  return i >= 0 && i < kTable ? table.v[i] : base_traits(t);
#else
  return base_traits(t);
#endif
}

VecDotFn vec_dot_for(DType t, SimdLevel level) {
  const WeightTraits& tr = weight_traits(t);
  if (!tr.supported) return nullptr;
  for (int i = level_index(level); i >= 0; i--)
    if (tr.dot[i]) return tr.dot[i];
  return nullptr;
}

int act_block(ActFormat fmt) {
  switch (fmt) {
    case ActFormat::Q8A: return 32;
    case ActFormat::Q8K: return 256;
    default: return 1;
  }
}

size_t act_row_bytes(ActFormat fmt, int64_t n) {
  switch (fmt) {
    case ActFormat::Q8A: return static_cast<size_t>(n / 32) * sizeof(BlockQ8A);
    case ActFormat::Q8K: return static_cast<size_t>(n / 256) * sizeof(BlockQ8K);
    default: return static_cast<size_t>(n) * 4;
  }
}

void quantize_act(ActFormat fmt, SimdLevel level, const float* x, void* dst, int64_t n) {
  const int li = level_index(level);
  switch (fmt) {
    case ActFormat::Q8A:
#if defined(__x86_64__) || defined(_M_X64)
      if (li == 2) return quantize_q8a_avx512(x, dst, n);
      if (li == 1) return quantize_q8a_avx2(x, dst, n);
#elif defined(__aarch64__)
      if (li == 1) return quantize_q8a_neon(x, dst, n);
#endif
      return quantize_q8a_scalar(x, dst, n);
    case ActFormat::Q8K:
#if defined(__x86_64__) || defined(_M_X64)
      if (li == 2) return quantize_q8k_avx512(x, dst, n);
      if (li == 1) return quantize_q8k_avx2(x, dst, n);
#endif
      return quantize_q8k_scalar(x, dst, n);
    default:
      if (x != dst) std::memcpy(dst, x, static_cast<size_t>(n) * 4);
      return;
  }
  (void)li;
}

}  // namespace q
}  // namespace minfer::cpu
