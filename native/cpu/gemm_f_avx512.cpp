// AVX-512 panel GEMM (see gemm.h) for float weights: F32, F16 and BF16 rows against F32
// activation columns (the activation format of these types).
//
// A panel of kRows = 32 weight rows is converted once to F32 and stored transposed,
//   float p[k][32]               element k of every row of the panel, row after row
// so that one k is two 16-lane vectors. A group of kRN columns then runs over k with one
// broadcast of each column's activation and two FMAs per column: acc[p][c] += w[k][16p..] · a_c[k].
// The accumulators are the panel's 32 outputs of each column, stored as they are — no horizontal
// sums, and the weights are converted once for all the columns instead of once a column group.
// Compiled with AVX-512 F/BW/VL/DQ flags; only called after run-time dispatch.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "gemm.h"
#include "gemm_avx512_util.h"

namespace minfer::cpu::q {
namespace {

using gemm_util::panel_buffer;

constexpr int kRows = kGemmPanelRows;  // rows per panel
constexpr int kRN = 12;                // columns per register tile: 24 accumulators

// Decoders: elements [k0, k0 + 16) of a row as F32.
struct DecF32 {
  static constexpr int kSize = 4;
  static inline __m512 load(const uint8_t* row, int64_t k0) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + k0);
  }
  static inline float one(const uint8_t* row, int64_t k) {
    float v;
    std::memcpy(&v, row + 4 * k, 4);
    return v;
  }
};
struct DecF16 {
  static constexpr int kSize = 2;
  static inline __m512 load(const uint8_t* row, int64_t k0) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * k0)));
  }
  static inline float one(const uint8_t* row, int64_t k) {
    uint16_t h;
    std::memcpy(&h, row + 2 * k, 2);
    return _cvtsh_ss(h);
  }
};
struct DecBF16 {
  static constexpr int kSize = 2;
  static inline __m512 load(const uint8_t* row, int64_t k0) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * k0));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static inline float one(const uint8_t* row, int64_t k) {
    uint16_t h;
    std::memcpy(&h, row + 2 * k, 2);
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float v;
    std::memcpy(&v, &u, 4);
    return v;
  }
};

// 16×16 transpose of floats: r[i] lane j → o[j] lane i.
inline void transpose16(const __m512* r, __m512* o) {
  __m512 t[16], s[16];
  for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; i++) {
    const __m512d* u = reinterpret_cast<const __m512d*>(t + 4 * i);
    s[4 * i + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(u[0], u[2]));
    s[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(u[0], u[2]));
    s[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(u[1], u[3]));
    s[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(u[1], u[3]));
  }
  // s[4i + j] holds, in each 128-bit lane L, row pair group i's element 4L + j; gather the lanes.
  for (int j = 0; j < 4; j++) {
    const __m512 a = _mm512_shuffle_f32x4(s[j], s[4 + j], 0x88);       // lanes 0, 2 of each
    const __m512 b = _mm512_shuffle_f32x4(s[j], s[4 + j], 0xdd);       // lanes 1, 3 of each
    const __m512 c = _mm512_shuffle_f32x4(s[8 + j], s[12 + j], 0x88);
    const __m512 d = _mm512_shuffle_f32x4(s[8 + j], s[12 + j], 0xdd);
    o[j] = _mm512_shuffle_f32x4(a, c, 0x88);
    o[8 + j] = _mm512_shuffle_f32x4(a, c, 0xdd);
    o[4 + j] = _mm512_shuffle_f32x4(b, d, 0x88);
    o[12 + j] = _mm512_shuffle_f32x4(b, d, 0xdd);
  }
}

// Rows [0, nrows) of the panel from w (row stride nb1) as p[k][32]; rows beyond are zero.
template <class D>
void decode_panel(const uint8_t* w, int64_t nb1, int nrows, int64_t k, float* panel) {
  const int64_t k16 = k / 16 * 16;
  for (int h = 0; h < kRows / 16; h++) {
    for (int64_t k0 = 0; k0 < k16; k0 += 16) {
      __m512 r[16], o[16];
      for (int i = 0; i < 16; i++) {
        const int row = 16 * h + i;
        r[i] = row < nrows ? D::load(w + row * nb1, k0) : _mm512_setzero_ps();
      }
      transpose16(r, o);
      for (int j = 0; j < 16; j++) _mm512_store_ps(panel + (k0 + j) * kRows + 16 * h, o[j]);
    }
  }
  for (int64_t kk = k16; kk < k; kk++)
    for (int row = 0; row < kRows; row++) panel[kk * kRows + row] = row < nrows ? D::one(w + row * nb1, kk) : 0.0f;
}

// The panel against NC columns (a[c]: column c's k activations): the kRows results of each
// column go to out[c] (only the first nrows).
template <int NC>
void panel_cols(int64_t k, const float* panel, const float* const* a, float* const* out, int nrows) {
  __m512 acc0[NC], acc1[NC];
  for (int c = 0; c < NC; c++) acc0[c] = acc1[c] = _mm512_setzero_ps();
  for (int64_t kk = 0; kk < k; kk++) {
    const __m512 w0 = _mm512_load_ps(panel + kk * kRows);
    const __m512 w1 = _mm512_load_ps(panel + kk * kRows + 16);
#pragma GCC unroll 12
    for (int c = 0; c < NC; c++) {
      const __m512 b = _mm512_set1_ps(a[c][kk]);
      acc0[c] = _mm512_fmadd_ps(w0, b, acc0[c]);
      acc1[c] = _mm512_fmadd_ps(w1, b, acc1[c]);
    }
  }
  const __mmask16 m0 = nrows >= 16 ? 0xffff : static_cast<__mmask16>((1u << nrows) - 1);
  const __mmask16 m1 = nrows >= 32 ? 0xffff : nrows <= 16 ? 0 : static_cast<__mmask16>((1u << (nrows - 16)) - 1);
  for (int c = 0; c < NC; c++) {
    _mm512_mask_storeu_ps(out[c], m0, acc0[c]);
    _mm512_mask_storeu_ps(out[c] + 16, m1, acc1[c]);
  }
}

template <int NC>
void run_cols(int64_t k, const float* panel, const uint8_t* act, size_t stride, int64_t cb, int64_t pr,
              OutColFn out_col, const void* ctx, int nrows) {
  const float* a[NC];
  float* o[NC];
  for (int c = 0; c < NC; c++) {
    a[c] = reinterpret_cast<const float*>(act + (cb + c) * stride);
    o[c] = out_col(ctx, cb + c) + pr;
  }
  panel_cols<NC>(k, panel, a, o, nrows);
}

template <class D>
void gemm(int64_t k, const uint8_t* w, int64_t w_nb1, int64_t r0, int64_t r1, const uint8_t* act, size_t stride,
          int64_t c0, int64_t c1, OutColFn out_col, const void* ctx) {
  float* panel = reinterpret_cast<float*>(panel_buffer(static_cast<size_t>(k) * kRows * sizeof(float)));
  for (int64_t pr = r0; pr < r1; pr += kRows) {
    const int nrows = static_cast<int>(std::min<int64_t>(kRows, r1 - pr));
    decode_panel<D>(w + pr * w_nb1, w_nb1, nrows, k, panel);
    int64_t cb = c0;
    for (; cb + kRN <= c1; cb += kRN) run_cols<kRN>(k, panel, act, stride, cb, pr, out_col, ctx, nrows);
    // the last columns: a tile of 8, then of 4, then one at a time
    if (cb + 8 <= c1) run_cols<8>(k, panel, act, stride, cb, pr, out_col, ctx, nrows), cb += 8;
    if (cb + 4 <= c1) run_cols<4>(k, panel, act, stride, cb, pr, out_col, ctx, nrows), cb += 4;
    for (; cb < c1; cb++) run_cols<1>(k, panel, act, stride, cb, pr, out_col, ctx, nrows);
  }
}

}  // namespace

void gemm_f32_avx512(int64_t k, const uint8_t* w, int64_t nb1, int64_t r0, int64_t r1, const uint8_t* act,
                     size_t stride, int64_t c0, int64_t c1, OutColFn out_col, const void* ctx) {
  gemm<DecF32>(k, w, nb1, r0, r1, act, stride, c0, c1, out_col, ctx);
}
void gemm_f16_avx512(int64_t k, const uint8_t* w, int64_t nb1, int64_t r0, int64_t r1, const uint8_t* act,
                     size_t stride, int64_t c0, int64_t c1, OutColFn out_col, const void* ctx) {
  gemm<DecF16>(k, w, nb1, r0, r1, act, stride, c0, c1, out_col, ctx);
}
void gemm_bf16_avx512(int64_t k, const uint8_t* w, int64_t nb1, int64_t r0, int64_t r1, const uint8_t* act,
                      size_t stride, int64_t c0, int64_t c1, OutColFn out_col, const void* ctx) {
  gemm<DecBF16>(k, w, nb1, r0, r1, act, stride, c0, c1, out_col, ctx);
}

}  // namespace minfer::cpu::q
#endif
