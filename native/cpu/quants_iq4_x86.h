// x86 SIMD vec_dots of IQ4_NL, IQ4_XS and MXFP4, shared by quants_iq4_avx2.cpp and
// quants_iq4_avx512.cpp. Include inside namespace minfer::cpu::q, after <immintrin.h>, <cstdint>,
// <cstring>, "quants_internal.h" and "../common/iq_grids.h", having defined
//   MQ4_SUFFIX   avx2 or avx512 (names the exported functions)
//   MQ4_AVX512   1 to use VNNI vpdpbusd (256-bit, AVX-512VL) for the u8×s8 dot products
//
// A 4-bit code selects one of 16 int8 levels (kvalues_iq4nl, kvalues_mxfp4): the codes of one
// 32-element group (16 bytes, element j in the low nibble of byte j, element j + 16 in the high
// one) are unpacked to 32 bytes and looked up with one vpshufb of the table. Σ level·a is then an
// int8×int8 dot product, done as u8×s8 with the sign moved onto the activation:
// |level| · sign(a, level) (vpmaddubsw + vpmaddwd, or one vpdpbusd); |level| ≤ 127 and
// |a| ≤ 127, so the int16 pair sums of vpmaddubsw cannot saturate. IQ4_XS at AVX-512 instead
// takes level + 128 as the unsigned operand of vpdpbusd and subtracts 128·Σa from the Q8K
// block's bsums (no abs / sign per group). The integer sums are exact.
//
// Float work: bit-identical to the scalar kernels (quants_iq4.cpp). Four groups' integer sums are
// reduced together (one hadd tree) to four int32 lanes, converted and scaled lane-wise with the
// scalar kernel's products in its order — IQ4_NL (d_w·d_a)·Σ, MXFP4 (d_a·2^(e−128))·Σ, IQ4_XS
// ((d_w·d_a)·ls)·Σ — and then added to the column's float sum one group after the other, in the
// scalar kernel's order. Contraction is off (no FMA may fuse a product with the sum), so every
// result equals vec_dot_*_scalar's bit for bit, for every nc. Each weight group is decoded once
// for all nc columns.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define MQ4_CAT2(a, b) a##b
#define MQ4_CAT(a, b) MQ4_CAT2(a, b)
#define MQ4_NAME(base) MQ4_CAT(base, MQ4_SUFFIX)

#include "quants_x86_util.h"

namespace {

constexpr size_t kQ8A = sizeof(BlockQ8A);  // 40
constexpr size_t kQ8K = sizeof(BlockQ8K);  // 292

// The 16-entry level table in both 128-bit lanes (for vpshufb).
inline __m256i table16(const int8_t* t) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
}

// The 32 levels of one 16-byte nibble group: byte j ← table[low nibble of p[j]], byte j + 16 ←
// table[high nibble of p[j]] (the order of levels32 in quants_iq4.cpp).
inline __m256i levels32(const uint8_t* p, __m256i tbl) {
  const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m256i codes =
      _mm256_and_si256(_mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), _mm256_set1_epi8(0x0f));
  return _mm256_shuffle_epi8(tbl, codes);
}

// Σ over groups of 4 of |v|·sign(a, v) = v·a → 8 int32 lanes (va = |v|).
inline __m256i dot_ss(__m256i v, __m256i va, __m256i a) {
  const __m256i sa = _mm256_sign_epi8(a, v);
#if MQ4_AVX512
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), va, sa);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(va, sa), _mm256_set1_epi16(1));
#endif
}

#if MQ4_AVX512
// Σ over groups of 4 of u·a, u unsigned (levels + 128) → 8 int32 lanes.
inline __m256i dot_u(__m256i u, __m256i a) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, a); }
#endif

// Four vectors of 8 int32 → their four totals, in order, as 4 int32 lanes.
inline __m128i hsum4x8(__m256i p0, __m256i p1, __m256i p2, __m256i p3) {
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// Four groups' Σ level·a: levels v[u] (|v| in va[u]) against the 32 activation bytes at a + u·step.
template <size_t kStep>
inline __m128i dot4(const __m256i* v, const __m256i* va, const uint8_t* a) {
  return hsum4x8(dot_ss(v[0], va[0], load32(a)), dot_ss(v[1], va[1], load32(a + kStep)),
                 dot_ss(v[2], va[2], load32(a + 2 * kStep)), dot_ss(v[3], va[3], load32(a + 3 * kStep)));
}

#if MQ4_AVX512
// dot4 with unsigned levels u = level + 128: Σ u·a (the caller subtracts 128·Σa).
template <size_t kStep>
inline __m128i dot4u(const __m256i* u, const uint8_t* a) {
  return hsum4x8(dot_u(u[0], load32(a)), dot_u(u[1], load32(a + kStep)), dot_u(u[2], load32(a + 2 * kStep)),
                 dot_u(u[3], load32(a + 3 * kStep)));
}
#endif

// s + p[0] + p[1] + p[2] + p[3], added in that order (the scalar kernel's order).
inline float add4_in_order(float s, __m128 p) {
  s += _mm_cvtss_f32(p);
  s += _mm_cvtss_f32(_mm_movehdup_ps(p));
  s += _mm_cvtss_f32(_mm_movehl_ps(p, p));
  s += _mm_cvtss_f32(_mm_shuffle_ps(p, p, 0xff));
  return s;
}

// ---- IQ4_NL and MXFP4: 32-element blocks against ActQ8A blocks ----

struct DecIq4Nl {
  static constexpr int kBytes = 18, kQs = 2;  // { f16 d; u8 qs[16] }
  static const int8_t* table() { return minfer::quant::kvalues_iq4nl; }
  static inline float scale(const uint8_t* x) { return _cvtsh_ss(ld16(x)); }
  // Four consecutive blocks' d as f32 lanes.
  // (The four f16 are packed in a general register: no vector-port inserts.)
  static inline __m128 scales4(const uint8_t* x) {
    const uint64_t h = static_cast<uint64_t>(ld16(x)) | (static_cast<uint64_t>(ld16(x + kBytes)) << 16) |
                       (static_cast<uint64_t>(ld16(x + 2 * kBytes)) << 32) |
                       (static_cast<uint64_t>(ld16(x + 3 * kBytes)) << 48);
    return _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(h)));
  }
  // The scalar kernel's d * a.d * Σ.
  static inline float prod(float dw, float da, float sum) { return dw * da * sum; }
  static inline __m128 prod4(__m128 dw, __m128 da, __m128 sum) { return _mm_mul_ps(_mm_mul_ps(dw, da), sum); }
};

struct DecMxfp4 {
  static constexpr int kBytes = 17, kQs = 1;  // { u8 e; u8 qs[16] }
  static const int8_t* table() { return minfer::quant::kvalues_mxfp4; }
  static inline float scale(const uint8_t* x) { return e8m0_half(x[0]); }
  // e8m0_half of four consecutive blocks' e, lane-wise.
  static inline __m128 scales4(const uint8_t* x) {
    const uint32_t e4 = static_cast<uint32_t>(x[0]) | (static_cast<uint32_t>(x[kBytes]) << 8) |
                        (static_cast<uint32_t>(x[2 * kBytes]) << 16) | (static_cast<uint32_t>(x[3 * kBytes]) << 24);
    const __m128i e = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(e4)));
    const __m128i normal = _mm_slli_epi32(_mm_sub_epi32(e, _mm_set1_epi32(1)), 23);
    const __m128i sub = _mm_sllv_epi32(_mm_set1_epi32(0x00200000), e);
    return _mm_castsi128_ps(_mm_blendv_epi8(normal, sub, _mm_cmpgt_epi32(_mm_set1_epi32(2), e)));
  }
  // The scalar kernel's a.d * dh * Σ.
  static inline float prod(float dw, float da, float sum) { return da * dw * sum; }
  static inline __m128 prod4(__m128 dw, __m128 da, __m128 sum) { return _mm_mul_ps(_mm_mul_ps(da, dw), sum); }
};

template <class D, int NC>
void dot_q8a_blocks(int64_t n, const uint8_t* x, const uint8_t* act, size_t stride, float* out) {
  const int64_t nb = n / 32;
  const __m256i tbl = table16(D::table());
  float s[NC];
#pragma GCC unroll 4
  for (int c = 0; c < NC; c++) s[c] = 0.0f;
  int64_t i = 0;
  for (; i + 4 <= nb; i += 4) {
    const uint8_t* xb = x + i * D::kBytes;
    __m256i v[4], va[4];
#pragma GCC unroll 4
    for (int u = 0; u < 4; u++) {
      v[u] = levels32(xb + u * D::kBytes + D::kQs, tbl);
      va[u] = _mm256_abs_epi8(v[u]);
    }
    const __m128 dw = D::scales4(xb);
#pragma GCC unroll 4
    for (int c = 0; c < NC; c++) {
      const uint8_t* ab = act + c * stride + i * kQ8A;
      const __m128i sum = dot4<kQ8A>(v, va, ab + 8);
      const __m128 da = _mm_setr_ps(ldf(ab), ldf(ab + kQ8A), ldf(ab + 2 * kQ8A), ldf(ab + 3 * kQ8A));
      s[c] = add4_in_order(s[c], D::prod4(dw, da, _mm_cvtepi32_ps(sum)));
    }
  }
  for (; i < nb; i++) {
    const uint8_t* xb = x + i * D::kBytes;
    const __m256i v = levels32(xb + D::kQs, tbl);
    const __m256i va = _mm256_abs_epi8(v);
    const float dw = D::scale(xb);
#pragma GCC unroll 4
    for (int c = 0; c < NC; c++) {
      const uint8_t* ab = act + c * stride + i * kQ8A;
      const int sum = hsum8(dot_ss(v, va, load32(ab + 8)));
      s[c] += D::prod(dw, ldf(ab), static_cast<float>(sum));
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < NC; c++) out[c] = s[c];
}

// ---- IQ4_XS: 256-element super-blocks (8 sub-blocks of 32 with 6-bit scales) against ActQ8K ----

constexpr int kIq4XsBytes = 136;  // { f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128] }

template <int NC>
void dot_iq4_xs(int64_t n, const uint8_t* x, const uint8_t* act, size_t stride, float* out) {
  const int64_t nb = n / 256;
  const __m256i tbl = table16(minfer::quant::kvalues_iq4nl);
#if MQ4_AVX512
  const __m256i tblu = _mm256_xor_si256(tbl, _mm256_set1_epi8(static_cast<char>(0x80)));  // level + 128
#endif
  float s[NC];
#pragma GCC unroll 4
  for (int c = 0; c < NC; c++) s[c] = 0.0f;
  for (int64_t i = 0; i < nb; i++, x += kIq4XsBytes) {
    // Sub-block ib's scale: low 4 bits are bits 4ib.. of scales_l (read as one u32), top 2 bits
    // are bits 2ib.. of scales_h; minus the bias 32.
    uint32_t sl;
    std::memcpy(&sl, x + 4, 4);
    const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(sl)),
                                                          _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                                        _mm256_set1_epi32(15));
    const __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(ld16(x + 2)),
                                                          _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                                        _mm256_set1_epi32(3));
    const __m256 ls = _mm256_cvtepi32_ps(
        _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32)));
    const __m128 ls_lo = _mm256_castps256_ps128(ls), ls_hi = _mm256_extractf128_ps(ls, 1);
    const float d = _cvtsh_ss(ld16(x));
    __m128i sum[NC][2];
#if MQ4_AVX512
    // VNNI: levels + 128 as unsigned bytes against the activations (no sign juggling), then
    // 128·Σa per sub-block from the activation's bsums subtracted: Σ level·a exactly.
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
      __m256i v[4];
#pragma GCC unroll 4
      for (int u = 0; u < 4; u++) v[u] = levels32(x + 8 + 16 * (4 * h + u), tblu);
#pragma GCC unroll 4
      for (int c = 0; c < NC; c++) sum[c][h] = dot4u<32>(v, act + c * stride + i * kQ8K + offsetof(BlockQ8K, qs) + 128 * h);
    }
#pragma GCC unroll 4
    for (int c = 0; c < NC; c++) {
      const __m256i corr = _mm256_madd_epi16(load32(act + c * stride + i * kQ8K + offsetof(BlockQ8K, bsums)), _mm256_set1_epi16(128));
      sum[c][0] = _mm_sub_epi32(sum[c][0], _mm256_castsi256_si128(corr));
      sum[c][1] = _mm_sub_epi32(sum[c][1], _mm256_extracti128_si256(corr, 1));
    }
#else
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
      __m256i v[4], va[4];
#pragma GCC unroll 4
      for (int u = 0; u < 4; u++) {
        v[u] = levels32(x + 8 + 16 * (4 * h + u), tbl);
        va[u] = _mm256_abs_epi8(v[u]);
      }
#pragma GCC unroll 4
      for (int c = 0; c < NC; c++) {
        const uint8_t* qs = act + c * stride + i * kQ8K + offsetof(BlockQ8K, qs);
        sum[c][h] = dot4<32>(v, va, qs + 128 * h);
      }
    }
#endif
#pragma GCC unroll 4
    for (int c = 0; c < NC; c++) {
      const __m128 dd = _mm_set1_ps(d * ldf(act + c * stride + i * kQ8K));
      // sb += (dd · ls[ib]) · Σ_ib for ib = 0..7, in order.
      float sb = add4_in_order(s[c], _mm_mul_ps(_mm_mul_ps(dd, ls_lo), _mm_cvtepi32_ps(sum[c][0])));
      s[c] = add4_in_order(sb, _mm_mul_ps(_mm_mul_ps(dd, ls_hi), _mm_cvtepi32_ps(sum[c][1])));
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < NC; c++) out[c] = s[c];
}

// nc columns (1 ≤ nc ≤ kMaxCols) with the column count as a template argument.
template <template <int> class K>
void dispatch_nc(int64_t n, const void* w, const void* act, size_t stride, int nc, float* out) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* a = static_cast<const uint8_t*>(act);
  for_columns(nc, [&](auto k) { K<decltype(k)::value>::run(n, x, a, stride, out); });
}

template <int NC>
struct KIq4Nl {
  static void run(int64_t n, const uint8_t* x, const uint8_t* a, size_t st, float* o) {
    dot_q8a_blocks<DecIq4Nl, NC>(n, x, a, st, o);
  }
};
template <int NC>
struct KMxfp4 {
  static void run(int64_t n, const uint8_t* x, const uint8_t* a, size_t st, float* o) {
    dot_q8a_blocks<DecMxfp4, NC>(n, x, a, st, o);
  }
};
template <int NC>
struct KIq4Xs {
  static void run(int64_t n, const uint8_t* x, const uint8_t* a, size_t st, float* o) { dot_iq4_xs<NC>(n, x, a, st, o); }
};

}  // namespace

void MQ4_NAME(vec_dot_iq4_nl_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) {
  dispatch_nc<KIq4Nl>(n, w, a, st, nc, o);
}
void MQ4_NAME(vec_dot_iq4_xs_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) {
  dispatch_nc<KIq4Xs>(n, w, a, st, nc, o);
}
void MQ4_NAME(vec_dot_mxfp4_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) {
  dispatch_nc<KMxfp4>(n, w, a, st, nc, o);
}

#undef MQ4_NAME
#undef MQ4_CAT
#undef MQ4_CAT2
