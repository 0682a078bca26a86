// AVX-512 VNNI panel GEMM (see gemm.h) for Q4_K weights against ActQ8K activations
// {d, q[256], bsums[16]}.
//
// Q4_K super-block (256 elements): value = d·sc_j·q − dmin·m_j in sub-block j (32 elements), with
// 4-bit codes q and 6-bit scales sc_j and mins m_j. A panel holds kRows = 32 rows; per super-block:
//   float  dsc[8][32]          d·sc_j of each row
//   float  dmin[32]
//   int16  mins[4][32][2]      (m_2p, m_2p+1) of each row, one 32-bit lane per row
//   uint8  q[8][8][32][4]      sub-block j, group g: each row's codes 4g..4g+3
// Per column and sub-block, eight vpdpbusd give the rows' integer dot products (lanes = rows),
// scaled in float by d·sc_j; the mins term Σ_j m_j·(Σ q_a over sub-block j) is four vpdpwssd
// against the column's pair sums of bsums; the super-block then scales by the column's d.
// Compiled with AVX-512 F/BW/VL/DQ/VNNI flags; only called after run-time dispatch.
#if defined(__x86_64__) || defined(_M_X64)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "gemm.h"
#include "gemm_avx512_util.h"
#include "quants_internal.h"

namespace minfer::cpu::q {
namespace {

using gemm_util::h2f;
using gemm_util::panel_buffer;
using gemm_util::transpose8;

constexpr int kRows = kGemmPanelRows;
constexpr int kPM = kRows / 16;
constexpr int kRN = 4;
constexpr size_t kOffDmin = 8 * kRows * 4;
constexpr size_t kOffMins = kOffDmin + kRows * 4;
constexpr size_t kOffQ = kOffMins + 4 * kRows * 4;
constexpr size_t kSub = 8 * kRows * 4;       // codes of one sub-block
constexpr size_t kBlk = kOffQ + 8 * kSub;    // panel bytes per super-block
constexpr int kWBytes = 144;                 // one Q4_K block
static_assert(kBlk % 64 == 0, "panel blocks stay 64-byte aligned");

void decode_panel(const uint8_t* w, int64_t nb1, int nrows, int64_t nb, uint8_t* panel) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  for (int64_t b = 0; b < nb; b++) {
    uint8_t* pb = panel + b * kBlk;
    float* dsc = reinterpret_cast<float*>(pb);
    float* dmin = reinterpret_cast<float*>(pb + kOffDmin);
    int16_t* mins = reinterpret_cast<int16_t*>(pb + kOffMins);
    for (int g8 = 0; g8 < kRows / 8; g8++) {
      __m256i codes[8][8];  // [row in group][sub-block]
      for (int i = 0; i < 8; i++) {
        const int row = 8 * g8 + i;
        if (row >= nrows) {
          for (int j = 0; j < 8; j++) {
            codes[i][j] = _mm256_setzero_si256();
            dsc[j * kRows + row] = 0.0f;
          }
          dmin[row] = 0.0f;
          for (int p = 0; p < 8; p++) mins[(p / 2) * kRows * 2 + row * 2 + p % 2] = 0;
          continue;
        }
        const uint8_t* x = w + row * nb1 + b * kWBytes;
        const float d = h2f(x);
        dmin[row] = h2f(x + 2);
        for (int j = 0; j < 8; j++) {
          int sc, mn;
          scale_min_k4(j, x + 4, &sc, &mn);
          dsc[j * kRows + row] = d * static_cast<float>(sc);
          mins[(j / 2) * kRows * 2 + row * 2 + j % 2] = static_cast<int16_t>(mn);
        }
        for (int c = 0; c < 4; c++) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 16 + 32 * c));
          codes[i][2 * c] = _mm256_and_si256(v, m4);
          codes[i][2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        }
      }
      for (int j = 0; j < 8; j++) {
        __m256i r[8], o[8];
        for (int i = 0; i < 8; i++) r[i] = codes[i][j];
        transpose8(r, o);
        for (int g = 0; g < 8; g++)
          _mm256_store_si256(reinterpret_cast<__m256i*>(pb + kOffQ + j * kSub + g * kRows * 4 + 32 * g8), o[g]);
      }
    }
  }
}

template <int NC>
void panel_cols(int64_t nb, const uint8_t* panel, const uint8_t* const* a, float* const* out, int nrows) {
  __m512 acc[kPM][NC];
  for (int p = 0; p < kPM; p++)
    for (int c = 0; c < NC; c++) acc[p][c] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; b++) {
    const uint8_t* pb = panel + b * kBlk;
    const BlockQ8K* ab[NC];
    for (int c = 0; c < NC; c++) ab[c] = reinterpret_cast<const BlockQ8K*>(a[c]) + b;
    __m512 t[kPM][NC];
    for (int p = 0; p < kPM; p++)
      for (int c = 0; c < NC; c++) t[p][c] = _mm512_setzero_ps();
    for (int j = 0; j < 8; j++) {
      __m512i is[kPM][NC];
#pragma GCC unroll 8
      for (int g = 0; g < 8; g++) {
        __m512i wv[kPM];
        for (int p = 0; p < kPM; p++)
          wv[p] = _mm512_load_si512(reinterpret_cast<const __m512i*>(pb + kOffQ + j * kSub + g * kRows * 4 + 64 * p));
#pragma GCC unroll 4
        for (int c = 0; c < NC; c++) {
          int32_t q4;
          std::memcpy(&q4, ab[c]->qs + 32 * j + 4 * g, 4);
          const __m512i av = _mm512_set1_epi32(q4);
          for (int p = 0; p < kPM; p++)
            is[p][c] = g == 0 ? _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[p], av)
                              : _mm512_dpbusd_epi32(is[p][c], wv[p], av);
        }
      }
      for (int p = 0; p < kPM; p++) {
        const __m512 dsc = _mm512_load_ps(reinterpret_cast<const float*>(pb + j * kRows * 4 + 64 * p));
        for (int c = 0; c < NC; c++) t[p][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[p][c]), dsc, t[p][c]);
      }
    }
    // Mins: Σ_j m_j · (sum of the column's codes over sub-block j), as int16 pairs.
#pragma GCC unroll 4
    for (int c = 0; c < NC; c++) {
      alignas(16) int32_t pairs[4];
      _mm_store_si128(reinterpret_cast<__m128i*>(pairs),
                      _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ab[c]->bsums)),
                                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(ab[c]->bsums + 8))));
      __m512i im[kPM];
      for (int p = 0; p < kPM; p++) im[p] = _mm512_setzero_si512();
      for (int q2 = 0; q2 < 4; q2++) {
        const __m512i bv = _mm512_set1_epi32(pairs[q2]);
        for (int p = 0; p < kPM; p++)
          im[p] = _mm512_dpwssd_epi32(
              im[p], _mm512_load_si512(reinterpret_cast<const __m512i*>(pb + kOffMins + q2 * kRows * 4 + 64 * p)), bv);
      }
      const __m512 da = _mm512_set1_ps(ab[c]->d);
      for (int p = 0; p < kPM; p++) {
        const __m512 dmin = _mm512_load_ps(reinterpret_cast<const float*>(pb + kOffDmin + 64 * p));
        acc[p][c] = _mm512_fmadd_ps(_mm512_fnmadd_ps(_mm512_cvtepi32_ps(im[p]), dmin, t[p][c]), da, acc[p][c]);
      }
    }
  }
  for (int c = 0; c < NC; c++)
    for (int p = 0; p < kPM; p++) {
      const int left = nrows - 16 * p;
      if (left >= 16) _mm512_storeu_ps(out[c] + 16 * p, acc[p][c]);
      else if (left > 0) _mm512_mask_storeu_ps(out[c] + 16 * p, static_cast<__mmask16>((1u << left) - 1), acc[p][c]);
    }
}

}  // namespace

void gemm_q4_k_avx512(int64_t k, const uint8_t* w, int64_t w_nb1, int64_t r0, int64_t r1, const uint8_t* act,
                      size_t stride, int64_t c0, int64_t c1, OutColFn out_col, const void* ctx) {
  const int64_t nb = k / 256;
  uint8_t* panel = panel_buffer(static_cast<size_t>(nb) * kBlk);
  for (int64_t pr = r0; pr < r1; pr += kRows) {
    const int nrows = static_cast<int>(std::min<int64_t>(kRows, r1 - pr));
    decode_panel(w + pr * w_nb1, w_nb1, nrows, nb, panel);
    for (int64_t cb = c0; cb < c1; cb += kRN) {
      const int nc = static_cast<int>(std::min<int64_t>(kRN, c1 - cb));
      const uint8_t* a[kRN];
      float* o[kRN];
      for (int c = 0; c < nc; c++) a[c] = act + (cb + c) * stride, o[c] = out_col(ctx, cb + c) + pr;
      switch (nc) {
        case 1: panel_cols<1>(nb, panel, a, o, nrows); break;
        case 2: panel_cols<2>(nb, panel, a, o, nrows); break;
        case 3: panel_cols<3>(nb, panel, a, o, nrows); break;
        default: panel_cols<kRN>(nb, panel, a, o, nrows); break;
      }
    }
  }
}

}  // namespace minfer::cpu::q
#endif
