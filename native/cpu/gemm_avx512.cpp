// AVX-512 VNNI panel GEMM (see gemm.h) for the 32-element weight types with a constant code
// offset: Q4_0 (codes 0..15, offset 8), Q5_0 (0..31, offset 16), Q8_0 (signed codes stored
// as code + 128, offset 128), and the two table types whose 4-bit codes select integer levels:
// IQ4_NL (kvalues_iq4nl + 128, offset 128; f16 scale) and MXFP4 (kvalues_mxfp4 + 12, offset 12;
// scale half the E8M0 exponent, the table being the doubled E2M1 values). A table decoder looks
// the 32 nibbles up with one byte shuffle of the offset levels. Activations are ActQ8A blocks
// {d, s = d·Σq, q[32]}.
//
// A panel holds kRows = 32 weight rows. Per 32-element block it is laid out as
//   float d[32]                   the rows' scales
//   uint8 q[8][32][4]             group j: each row's codes 4j..4j+3 (unsigned, offset added)
// so that one vpdpbusd of a 64-byte group vector against the column's four activation bytes
// broadcast to all lanes adds a 4-element partial dot product for 16 rows at once. After the 8
// groups, each 16-row lane vector holds the block's integer dot products Σ u·qa; the block's
// contribution is d_w · (d_a · Σ u·qa − offset · s_a), one conversion, one FMS and one FMA per
// 16 rows. The panel is decoded once and reused by every column (it stays in L1/L2).
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
#include <vector>

#include "../common/iq_grids.h"
#include "gemm.h"
#include "gemm_avx512_util.h"
#include "quants_internal.h"

namespace minfer::cpu::q {
namespace {

using gemm_util::h2f;
using gemm_util::panel_buffer;
using gemm_util::transpose8;

constexpr int kRows = kGemmPanelRows;       // rows per panel
constexpr int kPM = kRows / 16;             // 16-row lane vectors per panel
constexpr int kRN = 4;                      // columns per register tile
constexpr size_t kBlk = kRows * 4 + 8 * kRows * 4;  // panel bytes per 32-element block
constexpr size_t kA = sizeof(BlockQ8A);

inline __m256i nibbles16(const uint8_t* p) {
  const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_and_si256(_mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), _mm256_set1_epi8(0x0f));
}

// The 16 levels of a table type plus its offset (each then 0..255), in both 128-bit lanes, for
// vpshufb.
struct alignas(32) LevelTable {
  uint8_t b[32];
};
constexpr LevelTable level_table(const int8_t (&lv)[16], int off) {
  LevelTable t{};
  for (int i = 0; i < 32; i++) t.b[i] = static_cast<uint8_t>(lv[i % 16] + off);
  return t;
}
constexpr LevelTable kLevelsIQ4_NL = level_table(quant::kvalues_iq4nl, 128);
constexpr LevelTable kLevelsMXFP4 = level_table(quant::kvalues_mxfp4, 12);
inline __m256i lookup(const LevelTable& t, __m256i codes) {
  return _mm256_shuffle_epi8(_mm256_load_si256(reinterpret_cast<const __m256i*>(t.b)), codes);
}

// Decoders: one block → 32 unsigned codes in element order (q), and the block's scale (d).
// Blocks that start with an f16 scale share F16Scale.
struct F16Scale {
  static inline float d(const uint8_t* x) { return h2f(x); }
};
struct DecQ4_0 : F16Scale {
  static constexpr int kBytes = 18;
  static constexpr float kOff = 8.0f;
  static inline __m256i q(const uint8_t* x) { return nibbles16(x + 2); }
};
struct DecQ5_0 : F16Scale {
  static constexpr int kBytes = 22;
  static constexpr float kOff = 16.0f;
  static inline __m256i q(const uint8_t* x) {
    uint32_t qh;
    std::memcpy(&qh, x + 2, 4);
    return _mm256_or_si256(nibbles16(x + 6), _mm256_maskz_mov_epi8(static_cast<__mmask32>(qh), _mm256_set1_epi8(0x10)));
  }
};
struct DecQ8_0 : F16Scale {
  static constexpr int kBytes = 34;
  static constexpr float kOff = 128.0f;
  static inline __m256i q(const uint8_t* x) {
    return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 2)), _mm256_set1_epi8(-128));
  }
};
// nibbles16 masks every code to 4 bits, so the shuffle index stays in the table.
struct DecIQ4_NL : F16Scale {
  static constexpr int kBytes = 18;
  static constexpr float kOff = 128.0f;
  static inline __m256i q(const uint8_t* x) {
    return lookup(kLevelsIQ4_NL, nibbles16(x + 2));
  }
};
struct DecMXFP4 {
  static constexpr int kBytes = 17;
  static constexpr float kOff = 12.0f;  // levels −12..12: a small offset, little cancellation in the FMS
  static inline float d(const uint8_t* x) { return e8m0_half(x[0]); }
  static inline __m256i q(const uint8_t* x) {
    return lookup(kLevelsMXFP4, nibbles16(x + 1));
  }
};

// Rows [0, nrows) of the panel from w (row stride nb1); rows beyond are zero.
template <class D>
void decode_panel(const uint8_t* w, int64_t nb1, int nrows, int64_t nb, uint8_t* panel) {
  for (int64_t b = 0; b < nb; b++) {
    uint8_t* pb = panel + b * kBlk;
    float* d = reinterpret_cast<float*>(pb);
    for (int g = 0; g < kRows / 8; g++) {
      __m256i r[8], o[8];
      for (int i = 0; i < 8; i++) {
        const int row = 8 * g + i;
        if (row < nrows) {
          const uint8_t* x = w + row * nb1 + b * D::kBytes;
          r[i] = D::q(x);
          d[row] = D::d(x);
        } else {
          r[i] = _mm256_setzero_si256();
          d[row] = 0.0f;
        }
      }
      transpose8(r, o);
      for (int j = 0; j < 8; j++)
        _mm256_store_si256(reinterpret_cast<__m256i*>(pb + kRows * 4 + j * kRows * 4 + 32 * g), o[j]);
    }
  }
}

// The panel against NC columns (a[c] → column c's first activation block): writes the kRows
// results of each column to out[c] (only the first nrows).
template <int NC>
void panel_cols(int64_t nb, const uint8_t* panel, const uint8_t* const* a, float off, float* const* out, int nrows) {
  __m512 acc[kPM][NC];
  for (int p = 0; p < kPM; p++)
    for (int c = 0; c < NC; c++) acc[p][c] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; b++) {
    const uint8_t* pb = panel + b * kBlk;
    __m512i isum[kPM][NC];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
      __m512i wv[kPM];
      for (int p = 0; p < kPM; p++)
        wv[p] = _mm512_load_si512(reinterpret_cast<const __m512i*>(pb + kRows * 4 + j * kRows * 4 + 64 * p));
#pragma GCC unroll 8
      for (int c = 0; c < NC; c++) {
        int32_t q4;
        std::memcpy(&q4, a[c] + b * kA + 8 + 4 * j, 4);
        const __m512i av = _mm512_set1_epi32(q4);
        for (int p = 0; p < kPM; p++)
          isum[p][c] = j == 0 ? _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[p], av)
                              : _mm512_dpbusd_epi32(isum[p][c], wv[p], av);
      }
    }
#pragma GCC unroll 4
    for (int c = 0; c < NC; c++) {
      const BlockQ8A* ab = reinterpret_cast<const BlockQ8A*>(a[c] + b * kA);
      const __m512 da = _mm512_set1_ps(ab->d);
      const __m512 so = _mm512_set1_ps(off * ab->s);
      for (int p = 0; p < kPM; p++) {
        const __m512 dw = _mm512_load_ps(reinterpret_cast<const float*>(pb + 64 * p));
        acc[p][c] = _mm512_fmadd_ps(_mm512_fmsub_ps(_mm512_cvtepi32_ps(isum[p][c]), da, so), dw, acc[p][c]);
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

template <class D>
void gemm(int64_t k, const uint8_t* w, int64_t w_nb1, int64_t r0, int64_t r1, const uint8_t* act, size_t stride,
          int64_t c0, int64_t c1, OutColFn out_col, const void* ctx) {
  const int64_t nb = k / 32;
  uint8_t* panel = panel_buffer(static_cast<size_t>(nb) * kBlk);
  for (int64_t pr = r0; pr < r1; pr += kRows) {
    const int nrows = static_cast<int>(std::min<int64_t>(kRows, r1 - pr));
    decode_panel<D>(w + pr * w_nb1, w_nb1, nrows, nb, panel);
    for (int64_t cb = c0; cb < c1; cb += kRN) {
      const int nc = static_cast<int>(std::min<int64_t>(kRN, c1 - cb));
      const uint8_t* a[kRN];
      float* o[kRN];
      for (int c = 0; c < nc; c++) a[c] = act + (cb + c) * stride, o[c] = out_col(ctx, cb + c) + pr;
      switch (nc) {
        case 1: panel_cols<1>(nb, panel, a, D::kOff, o, nrows); break;
        case 2: panel_cols<2>(nb, panel, a, D::kOff, o, nrows); break;
        case 3: panel_cols<3>(nb, panel, a, D::kOff, o, nrows); break;
        case 4: panel_cols<4>(nb, panel, a, D::kOff, o, nrows); break;
        default: panel_cols<kRN>(nb, panel, a, D::kOff, o, nrows); break;
      }
    }
  }
}

}  // namespace

void gemm_q4_0_avx512(int64_t k, const uint8_t* w, int64_t nb1, int64_t r0, int64_t r1, const uint8_t* act,
                      size_t stride, int64_t c0, int64_t c1, OutColFn out_col, const void* ctx) {
  gemm<DecQ4_0>(k, w, nb1, r0, r1, act, stride, c0, c1, out_col, ctx);
}
void gemm_q5_0_avx512(int64_t k, const uint8_t* w, int64_t nb1, int64_t r0, int64_t r1, const uint8_t* act,
                      size_t stride, int64_t c0, int64_t c1, OutColFn out_col, const void* ctx) {
  gemm<DecQ5_0>(k, w, nb1, r0, r1, act, stride, c0, c1, out_col, ctx);
}
void gemm_q8_0_avx512(int64_t k, const uint8_t* w, int64_t nb1, int64_t r0, int64_t r1, const uint8_t* act,
                      size_t stride, int64_t c0, int64_t c1, OutColFn out_col, const void* ctx) {
  gemm<DecQ8_0>(k, w, nb1, r0, r1, act, stride, c0, c1, out_col, ctx);
}
void gemm_iq4_nl_avx512(int64_t k, const uint8_t* w, int64_t nb1, int64_t r0, int64_t r1, const uint8_t* act,
                        size_t stride, int64_t c0, int64_t c1, OutColFn out_col, const void* ctx) {
  gemm<DecIQ4_NL>(k, w, nb1, r0, r1, act, stride, c0, c1, out_col, ctx);
}
void gemm_mxfp4_avx512(int64_t k, const uint8_t* w, int64_t nb1, int64_t r0, int64_t r1, const uint8_t* act,
                       size_t stride, int64_t c0, int64_t c1, OutColFn out_col, const void* ctx) {
  gemm<DecMXFP4>(k, w, nb1, r0, r1, act, stride, c0, c1, out_col, ctx);
}

}  // namespace minfer::cpu::q
#endif
