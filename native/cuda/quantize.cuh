// Device quantizers of the block dtypes CPY and SET_ROWS write (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q4_K, Q5_K, Q6_K): ports of native/cpu/quants.cpp's quantizers, operation by operation, so
// that they produce the CPU's bytes. Every rounding step is explicit (__fmul_rn, __dadd_rn, ...)
// so that nvcc never fuses a multiply and an add into an FMA (the CPU file turns contraction off).
//
//   qz_has_quantizer(t)        whether t is one of the dtypes above
//   qz_block_elems(t)          elements per block (32 or 256)
//   qz_block_bytes(t)          bytes per block
//   qz_quantize_block(t, x, o) quantizes the block_elems floats at x into the block at o; one
//                              thread does the whole block. o is written byte by byte (blocks of
//                              18/22 bytes are only 2-byte aligned).
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "../common/program_format.h"

namespace minfer::cuda {

__host__ __device__ inline bool qz_has_quantizer(program::DType t) {
  switch (t) {
    case program::DType::Q4_0:
    case program::DType::Q4_1:
    case program::DType::Q5_0:
    case program::DType::Q5_1:
    case program::DType::Q8_0:
    case program::DType::Q4_K:
    case program::DType::Q5_K:
    case program::DType::Q6_K: return true;
    default: return false;
  }
}
__host__ __device__ inline int qz_block_elems(program::DType t) {
  switch (t) {
    case program::DType::Q4_K:
    case program::DType::Q5_K:
    case program::DType::Q6_K: return 256;
    default: return 32;
  }
}
__host__ __device__ inline int qz_block_bytes(program::DType t) {
  switch (t) {
    case program::DType::Q4_0: return 18;
    case program::DType::Q4_1: return 20;
    case program::DType::Q5_0: return 22;
    case program::DType::Q5_1: return 24;
    case program::DType::Q8_0: return 34;
    case program::DType::Q4_K: return 144;
    case program::DType::Q5_K: return 176;
    case program::DType::Q6_K: return 210;
    default: return 0;
  }
}

namespace qz {

// A 16-bit field of a block (an f16 scale): one 16-bit store where the address allows (block
// fields are 2-byte aligned in every block layout). On the H200 the former two byte stores of a
// converted f16 lost the low byte of every scale (conformance: CPY F32→Q8_0 and friends), so the
// value also goes through a 32-bit integer register (inline asm) before any byte is split off.
__device__ inline void wr16(uint8_t* p, uint32_t v) {
  uint32_t w;
  asm volatile("and.b32 %0, %1, 65535;" : "=r"(w) : "r"(v));
  if ((reinterpret_cast<uintptr_t>(p) & 1u) == 0) {
    *reinterpret_cast<uint16_t*>(p) = static_cast<uint16_t>(w);
    return;
  }
  p[0] = static_cast<uint8_t>(w & 0xffu);
  p[1] = static_cast<uint8_t>(w >> 8);
}
__device__ inline void wr32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
__device__ inline uint32_t f16_bits(float x) { return __half_as_ushort(__float2half_rn(x)); }
// Binary16 of a double, rounded once from the double (cvt.rn.f16.f64), and its value.
__device__ inline uint32_t f16_bits_d(double x) { return __half_as_ushort(__double2half(x)); }
__device__ inline double round_to_f16(double x) { return static_cast<double>(__half2float(__double2half(x))); }
__device__ inline double fround(double x) { return static_cast<double>(static_cast<float>(x)); }
__device__ inline double round_away(double v) { return v < 0 ? -floor(-v + 0.5) : floor(v + 0.5); }
__device__ inline double clampd(double v, double lo, double hi) { return fmin(fmax(v, lo), hi); }

// ---- legacy quants (32-element blocks) ----

__device__ inline float signed_abs_max(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; j++) {
    if (amax < fabsf(x[j])) {
      amax = fabsf(x[j]);
      max = x[j];
    }
  }
  return max;
}

__device__ inline void minmax32(const float* x, float* mn, float* mx) {
  float lo = INFINITY, hi = -INFINITY;
  for (int j = 0; j < 32; j++) {
    if (x[j] < lo) lo = x[j];
    if (x[j] > hi) hi = x[j];
  }
  *mn = lo;
  *mx = hi;
}

// Q4_0 (nmax 15, offset 8.5, o + 2) and Q5_0 (nmax 31, offset 16.5, qh at o + 2, codes at o + 6).
template <bool kFive>
__device__ inline void quant_sym(const float* x, uint8_t* o) {
  const float d = __fdiv_rn(signed_abs_max(x, 32), kFive ? -16.0f : -8.0f);
  const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
  const float off = kFive ? 16.5f : 8.5f;
  const int nmax = kFive ? 31 : 15;
  wr16(o, f16_bits(d));
  uint32_t qh = 0;
  uint8_t* codes = o + (kFive ? 6 : 2);
  for (int j = 0; j < 16; j++) {
    const int q0 = min(nmax, static_cast<int>(__fadd_rn(__fmul_rn(x[j], id), off)));
    const int q1 = min(nmax, static_cast<int>(__fadd_rn(__fmul_rn(x[j + 16], id), off)));
    codes[j] = static_cast<uint8_t>((q0 & 15) | ((q1 & 15) << 4));
    qh |= (static_cast<uint32_t>(q0 >> 4) << j) | (static_cast<uint32_t>(q1 >> 4) << (j + 16));
  }
  if (kFive) wr32(o + 2, qh);
}

// Q4_1 (nmax 15, codes at o + 4) and Q5_1 (nmax 31, qh at o + 4, codes at o + 8).
template <bool kFive>
__device__ inline void quant_asym(const float* x, uint8_t* o) {
  float mn, mx;
  minmax32(x, &mn, &mx);
  const float d = __fdiv_rn(__fsub_rn(mx, mn), kFive ? 31.0f : 15.0f);
  const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
  const int nmax = kFive ? 31 : 15;
  wr16(o, f16_bits(d));
  wr16(o + 2, f16_bits(mn));
  uint32_t qh = 0;
  uint8_t* codes = o + (kFive ? 8 : 4);
  for (int j = 0; j < 16; j++) {
    const int q0 = min(nmax, static_cast<int>(__fadd_rn(__fmul_rn(__fsub_rn(x[j], mn), id), 0.5f)));
    const int q1 = min(nmax, static_cast<int>(__fadd_rn(__fmul_rn(__fsub_rn(x[j + 16], mn), id), 0.5f)));
    codes[j] = static_cast<uint8_t>((q0 & 15) | ((q1 & 15) << 4));
    qh |= (static_cast<uint32_t>(q0 >> 4) << j) | (static_cast<uint32_t>(q1 >> 4) << (j + 16));
  }
  if (kFive) wr32(o + 4, qh);
}

__device__ inline void quant_q8_0(const float* x, uint8_t* o) {
  float amax = 0.0f;
  for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
  const float d = __fdiv_rn(amax, 127.0f);
  const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
  wr16(o, f16_bits(d));
  for (int j = 0; j < 32; j++) o[2 + j] = static_cast<uint8_t>(static_cast<int>(roundf(__fmul_rn(x[j], id))) & 0xff);
}

// ---- K-quants (256-element blocks), in double as the CPU's port of k-quant.ts ----

// x[0..n) ≈ s·q − m, q in 0..nmax, s ≥ 0, m ≥ 0 (fit_scale_min).
__device__ inline void fit_scale_min(const float* x, int n, int nmax, double* s_out, double* m_out) {
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
      const double l = clampd(round_away(__dmul_rn(__dsub_rn(v, offset), iscale)), 0, nmax);
      sl = __dadd_rn(sl, l);
      sll = __dadd_rn(sll, __dmul_rn(l, l));
      sx = __dadd_rn(sx, v);
      slx = __dadd_rn(slx, __dmul_rn(l, v));
    }
    const double det = __dsub_rn(__dmul_rn(n, sll), __dmul_rn(sl, sl));
    double s, b;
    if (det > 0) {
      s = __dsub_rn(__dmul_rn(n, slx), __dmul_rn(sl, sx)) / det;
      b = __dsub_rn(__dmul_rn(sll, sx), __dmul_rn(sl, slx)) / det;
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
      const double l = s > 0 ? clampd(round_away(__dsub_rn(v, b) / s), 0, nmax) : 0;
      const double e = __dsub_rn(__dadd_rn(__dmul_rn(s, l), b), v);
      err = __dadd_rn(err, __dmul_rn(e, e));
    }
    if (err < best_err) {
      best_err = err;
      best_s = s;
      best_b = b;
    }
  };
  for (int k = -10; k <= 15; k++) try_grid(__dadd_rn(nmax, __dmul_rn(0.1, k)) / (hi - lo), lo);
  for (int pass = 0; pass < 2 && best_s > 0; pass++) try_grid(1 / best_s, best_b);
  *s_out = best_s;
  *m_out = -best_b;
}

// x[0..n) ≈ s·q, q in −nneg..nneg−1 (fit_scale_symmetric).
__device__ inline double fit_scale_symmetric(const float* x, int n, int nneg) {
  double amax = 0, max = 0;
  for (int j = 0; j < n; j++) {
    const double v = x[j];
    if (fabs(v) > amax) {
      amax = fabs(v);
      max = v;
    }
  }
  if (amax == 0) return 0;
  double best = max / -nneg, best_score = -1;
  for (int k = -10; k <= 10; k++) {
    const double iscale = -__dadd_rn(nneg, __dmul_rn(0.1, k)) / max;
    double sll = 0, slx = 0;
    for (int j = 0; j < n; j++) {
      const double v = x[j];
      const double l = clampd(round_away(__dmul_rn(v, iscale)), -nneg, nneg - 1);
      sll = __dadd_rn(sll, __dmul_rn(l, l));
      slx = __dadd_rn(slx, __dmul_rn(l, v));
    }
    const double score = sll > 0 ? __dmul_rn(slx, slx) / sll : 0;
    if (score > best_score) {
      best_score = score;
      best = slx / sll;
    }
  }
  return best;
}

// The shared body of Q4_K (nmax 15) and Q5_K (nmax 31): d, dmin and the packed scales at o, the
// 256 codes (natural order) to q.
__device__ inline void quantize_asym_block(const float* x, int nmax, uint8_t* o, uint8_t* q) {
  double scales[8], mins[8], max_scale = 0, max_min = 0;
  for (int k = 0; k < 8; k++) {
    fit_scale_min(x + 32 * k, 32, nmax, &scales[k], &mins[k]);
    if (scales[k] > max_scale) max_scale = scales[k];
    if (mins[k] > max_min) max_min = mins[k];
  }
  const double d = round_to_f16(max_scale / 63);
  const double dmin = round_to_f16(max_min / 63);
  wr16(o, f16_bits_d(d));
  wr16(o + 2, f16_bits_d(dmin));
  uint8_t ls[8], lm[8];
  for (int k = 0; k < 8; k++) {
    const float* xs = x + 32 * k;
    const int rs = d > 0 ? static_cast<int>(clampd(round_away(scales[k] / d), 0, 63)) : 0;
    const int rm = dmin > 0 ? static_cast<int>(clampd(round_away(mins[k] / dmin), 0, 63)) : 0;
    double best_err = INFINITY;
    ls[k] = 0;
    lm[k] = 0;
    for (int cs = max(0, rs - 1); cs <= min(63, rs + 1); cs++) {
      for (int cm = max(0, rm - 1); cm <= min(63, rm + 1); cm++) {
        const double step = fround(__dmul_rn(d, cs));
        const double off = fround(__dmul_rn(dmin, cm));
        double err = 0;
        for (int j = 0; j < 32; j++) {
          const double v = xs[j];
          const double l = step > 0 ? clampd(round_away(__dadd_rn(v, off) / step), 0, nmax) : 0;
          const double e = __dsub_rn(__dsub_rn(__dmul_rn(step, l), off), v);
          err = __dadd_rn(err, __dmul_rn(e, e));
        }
        if (err < best_err) {
          best_err = err;
          ls[k] = static_cast<uint8_t>(cs);
          lm[k] = static_cast<uint8_t>(cm);
        }
      }
    }
    const double step = fround(__dmul_rn(d, ls[k]));
    const double off = fround(__dmul_rn(dmin, lm[k]));
    for (int j = 0; j < 32; j++)
      q[32 * k + j] = step > 0 ? static_cast<uint8_t>(clampd(round_away(__dadd_rn(xs[j], off) / step), 0, nmax)) : 0;
  }
  for (int j = 0; j < 4; j++) {
    o[4 + j] = static_cast<uint8_t>(ls[j] | ((ls[j + 4] >> 4) << 6));
    o[4 + j + 4] = static_cast<uint8_t>(lm[j] | ((lm[j + 4] >> 4) << 6));
    o[4 + j + 8] = static_cast<uint8_t>((ls[j + 4] & 15) | ((lm[j + 4] & 15) << 4));
  }
}

__device__ inline void quant_q4_k(const float* x, uint8_t* o) {
  uint8_t q[256];
  quantize_asym_block(x, 15, o, q);
  for (int c = 0; c < 4; c++)
    for (int l = 0; l < 32; l++) o[16 + 32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
}

__device__ inline void quant_q5_k(const float* x, uint8_t* o) {
  uint8_t q[256], qh[32];
  quantize_asym_block(x, 31, o, q);
  for (int l = 0; l < 32; l++) qh[l] = 0;
  for (int c = 0; c < 4; c++)
    for (int l = 0; l < 32; l++) {
      const int lo = q[64 * c + l], hi = q[64 * c + 32 + l];
      o[48 + 32 * c + l] = static_cast<uint8_t>((lo & 15) | ((hi & 15) << 4));
      qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
    }
  for (int l = 0; l < 32; l++) o[16 + l] = qh[l];
}

__device__ inline void quant_q6_k(const float* x, uint8_t* o) {
  double scales[16];
  uint8_t q[256];
  double amax = 0, max = 0;
  for (int k = 0; k < 16; k++) {
    scales[k] = fit_scale_symmetric(x + 16 * k, 16, 32);
    if (fabs(scales[k]) > amax) {
      amax = fabs(scales[k]);
      max = scales[k];
    }
  }
  const double d = round_to_f16(max / -128);
  wr16(o + 208, f16_bits_d(d));
  for (int k = 0; k < 16; k++) {
    const int ls = d != 0 ? static_cast<int>(clampd(round_away(scales[k] / d), -128, 127)) : 0;
    o[192 + k] = static_cast<uint8_t>(ls & 0xff);
    const double step = fround(__dmul_rn(d, ls));
    for (int j = 0; j < 16; j++) {
      const double v = x[16 * k + j];
      q[16 * k + j] =
          step != 0 ? static_cast<uint8_t>(static_cast<int>(clampd(round_away(v / step), -32, 31)) + 32) : 32;
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

}  // namespace qz

__device__ inline void qz_quantize_block(program::DType t, const float* x, uint8_t* o) {
  switch (t) {
    case program::DType::Q4_0: qz::quant_sym<false>(x, o); break;
    case program::DType::Q5_0: qz::quant_sym<true>(x, o); break;
    case program::DType::Q4_1: qz::quant_asym<false>(x, o); break;
    case program::DType::Q5_1: qz::quant_asym<true>(x, o); break;
    case program::DType::Q8_0: qz::quant_q8_0(x, o); break;
    case program::DType::Q4_K: qz::quant_q4_k(x, o); break;
    case program::DType::Q5_K: qz::quant_q5_k(x, o); break;
    case program::DType::Q6_K: qz::quant_q6_k(x, o); break;
    default: break;  // callers check qz_has_quantizer
  }
}

}  // namespace minfer::cuda
