// x86 SIMD vec_dots of IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S, shared by quants_iq23_avx2.cpp
// and quants_iq23_avx512.cpp. Include inside namespace minfer::cpu::q, after <immintrin.h>,
// <cstddef>, <cstdint>, <cstring>, "quants_internal.h" and "../common/iq_grids.h", having defined
//   MQ_IQ23_SUFFIX   avx2 or avx512 (names the exported functions)
//   MQ_IQ23_AVX512   1 to use AVX-512 (BW/VL/VNNI, 256-bit vectors): mask registers for the
//                    signs and vpdpwssd for the scaled accumulation
//
// Method. quants_iq.cpp writes every one of these blocks as d · ls[j/16] · v[j] · F with odd
// scales ls (≤ 31) and v = ±(grid magnitude) (magnitudes 8..43 for IQ2_*, 4..62 for IQ3_*), and
// its scalar dot takes sumi = Σ_g ls[g]·Σ v·a in integers per block. Here a block is walked in
// 32-element groups (four rows of 8); per group the decoder yields
//   - the 32 unsigned grid magnitudes: one 64-bit (IQ2) or two 32-bit (IQ3) grid entries per
//     row; IQ2 rows are four 64-bit broadcast loads merged by blends, IQ3 rows one vpgatherdd
//     (the faster choice for each, measured on an Intel Xeon and an AMD Zen 4), and
//   - the signs: explicit sign bytes (IQ2_S, IQ3_S; byte l is row l's, bit j element j) as a
//     32-bit mask (AVX-512) or ±1 bytes (AVX2), or, for 7-bit sign indices (IQ2_XXS, IQ2_XS,
//     IQ3_XXS), ±1 bytes from kSignRows (ksigns_iq2xs expanded to a byte per element).
// The signs go onto the activation (a → −a where the weight is negative; Q8_K activations are in
// [−127, 127], so negation cannot overflow), which leaves an unsigned × signed byte product:
// vpmaddubsw gives int16 pair sums (≤ 2·62·127, no saturation), and vpmaddwd against
// [ls of elements 0..15 ×8 | ls of elements 16..31 ×8] scales and widens them to int32
// (vpdpwssd accumulates in one step at AVX-512). The eight int32 lanes are summed once per block
// and column: sumi, exact (|sumi| < 2^26). Each group is decoded once for all nc columns.
//
// Float work: as the scalar kernel, acc += (d · a.d) · float(sumi) per block, out = F · acc, with
// contraction off, so every result equals vec_dot_<type>_scalar's bit for bit, for every nc.
//
// Bounds: every grid index is a masked bit field of its table's width (as in quants_iq.cpp).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define MQ_IQ23_CAT2(a, b) a##b
#define MQ_IQ23_CAT(a, b) MQ_IQ23_CAT2(a, b)
#define MQ_IQ23_NAME(base) MQ_IQ23_CAT(base, MQ_IQ23_SUFFIX)

#include "quants_x86_util.h"

namespace {

using minfer::quant::ksigns_iq2xs;

constexpr size_t kQ8K = sizeof(BlockQ8K);  // 292

// ---- grid rows and signs ----
// Explicit sign bytes (IQ2_S, IQ3_S) are read as 32 bits (bit 8l + j: element j of row l is
// negative); 7-bit sign indices (IQ2_XXS, IQ2_XS, IQ3_XXS) are looked up in kSignRows, which holds
// ksigns_iq2xs expanded to one byte per element (+1 or −1), fetched as grid rows are (rows64).

struct SignRows {
  uint64_t row[128];
};
constexpr SignRows make_sign_rows() {
  SignRows t{};
  for (int i = 0; i < 128; i++)
    for (int j = 0; j < 8; j++) t.row[i] |= static_cast<uint64_t>((ksigns_iq2xs[i] >> j) & 1 ? 0xff : 0x01) << (8 * j);
  return t;
}
alignas(64) constexpr SignRows kSignRows = make_sign_rows();

// Four 64-bit table entries as the four 64-bit lanes: broadcast loads (load ports only) and
// blends, no shuffles or general-register transfers (a vpgatherqq measured slower).
inline __m256i rows64(const uint64_t* t, unsigned i0, unsigned i1, unsigned i2, unsigned i3) {
  const __m256i a = _mm256_blend_epi32(_mm256_set1_epi64x(static_cast<long long>(t[i0])),
                                       _mm256_set1_epi64x(static_cast<long long>(t[i1])), 0x0c);
  const __m256i b = _mm256_blend_epi32(_mm256_set1_epi64x(static_cast<long long>(t[i2])),
                                       _mm256_set1_epi64x(static_cast<long long>(t[i3])), 0xc0);
  return _mm256_blend_epi32(a, b, 0xf0);
}

// Eight 32-bit table entries (indices: the int32 lanes of idx) as the eight 32-bit lanes, by a
// hardware gather: 1.5x faster than eight broadcasts + blends on an Intel Xeon, as fast on Zen 4.
inline __m256i rows32(const uint32_t* t, __m256i idx) {
  return _mm256_i32gather_epi32(reinterpret_cast<const int*>(t), idx, 4);
}

// Sign vector (+1 / −1 bytes) of four 7-bit sign indices, bits 7l..7l+6 of aux for row l.
inline __m256i sign_rows4(uint32_t aux) {
  return rows64(kSignRows.row, aux & 127, (aux >> 7) & 127, (aux >> 14) & 127, (aux >> 21) & 127);
}

// a with its bytes negated where s is −1 (s: ±1 bytes).
inline __m256i apply_signs(__m256i a, __m256i s) { return _mm256_sign_epi8(a, s); }

#if MQ_IQ23_AVX512
using SignBits = __mmask32;
inline SignBits sign_bits(const uint8_t* p) { return _cvtu32_mask32(ld32(p)); }
// a with the bytes selected by s negated (0 − a).
inline __m256i apply_signs(__m256i a, SignBits s) { return _mm256_mask_sub_epi8(a, s, _mm256_setzero_si256(), a); }
#else
using SignBits = __m256i;  // ±1 bytes
inline SignBits sign_bits(const uint8_t* p) {
  // Byte j of the result ← sign byte j/8, then tested against bit j%8.
  const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  const __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(ld32(p))), spread);
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(b, bit), bit);  // 0xff where the bit is set
  return _mm256_or_si256(set, _mm256_set1_epi8(1));
}
#endif

// ---- integer dot and scales ----

// acc + Σ over 32 elements of ls·mag·a (a already signed): int16 pair sums, then ls-weighted
// int32 sums of pairs.
inline __m256i dot_group(__m256i acc, __m256i mag, __m256i a, __m256i ls) {
  const __m256i p = _mm256_maddubs_epi16(mag, a);
#if MQ_IQ23_AVX512
  return _mm256_dpwssd_epi32(acc, p, ls);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p, ls));
#endif
}

// A block's 16 ls as dwords ls·0x10001 (two int16 copies): a 32-bit broadcast of one gives eight
// int16 lanes of it.
struct ScaleWords {
  alignas(32) int32_t w[16];
  explicit ScaleWords(__m128i ls_bytes) {
    const __m256i lo = _mm256_cvtepu8_epi32(ls_bytes), hi = _mm256_cvtepu8_epi32(_mm_unpackhi_epi64(ls_bytes, ls_bytes));
    _mm256_store_si256(reinterpret_cast<__m256i*>(w), _mm256_or_si256(lo, _mm256_slli_epi32(lo, 16)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(w + 8), _mm256_or_si256(hi, _mm256_slli_epi32(hi, 16)));
  }
  // Group g's int16 scale lanes: ls[2g] ×8 (elements 0..15), ls[2g+1] ×8 (elements 16..31).
  __m256i pair(int g) const {
    return _mm256_blend_epi32(_mm256_set1_epi32(w[2 * g]), _mm256_set1_epi32(w[2 * g + 1]), 0xf0);
  }
};

// 8 scale fields s (bytes 0..7, one per group) → the 16 ls = 2s + 1 (ls[2g] = ls[2g+1] = 2s_g + 1).
inline __m128i ls_from_group_fields(__m128i s) {
  const __m128i s2 = _mm_unpacklo_epi8(s, s);
  return _mm_add_epi8(_mm_add_epi8(s2, s2), _mm_set1_epi8(1));
}

// 8 bytes of two 4-bit scale fields (low nibble: ls[2g], high: ls[2g+1]) → the 16 ls = 2s + 1.
inline __m128i ls_from_nibbles(const uint8_t* p) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m128i m = _mm_set1_epi8(15);
  const __m128i s = _mm_unpacklo_epi8(_mm_and_si128(v, m), _mm_and_si128(_mm_srli_epi16(v, 4), m));
  return _mm_add_epi8(_mm_add_epi8(s, s), _mm_set1_epi8(1));
}

// ---- per-type decoders (layouts: quants_iq.cpp) ----
// Each has kBytes, kF (the type's power-of-two factor), ls(x): the block's 16 ls bytes, and
// group(x, g): group g's 32 unsigned grid magnitudes (mag) and their signs (sign: ±1 bytes or
// sign bits, for apply_signs).

struct GroupS {  // signs as ±1 bytes
  __m256i mag;
  __m256i sign;
};
struct GroupB {  // signs as bits (SignBits)
  __m256i mag;
  SignBits sign;
};

// Byte k of w (an 8-bit grid index).
inline unsigned byte_of(uint64_t w, int k) { return static_cast<unsigned>(w >> (8 * k)) & 255; }

// IQ2_XXS: group g @2 + 8g: four 8-bit grid indices, u32 aux (sign indices, scale in bits 28..31).
struct DecIq2Xxs {
  static constexpr int kBytes = 66;
  static constexpr float kF = 0.125f;
  static inline __m128i ls(const uint8_t* x) {
    uint64_t s = 0;
#pragma GCC unroll 8
    for (int g = 0; g < 8; g++) s |= static_cast<uint64_t>(x[2 + 8 * g + 7] >> 4) << (8 * g);
    return ls_from_group_fields(_mm_cvtsi64_si128(static_cast<long long>(s)));
  }
  static inline GroupS group(const uint8_t* x, int g) {
    const uint64_t q = ld64(x + 2 + 8 * g);
    const auto* grid = minfer::quant::iq2xxs_grid;
    return {rows64(grid, byte_of(q, 0), byte_of(q, 1), byte_of(q, 2), byte_of(q, 3)),
            sign_rows4(static_cast<uint32_t>(q >> 32))};
  }
};

// IQ2_XS: u16 qs[32] @2 (bits 0..8 grid index, 9..15 sign index); scale nibbles @66.
struct DecIq2Xs {
  static constexpr int kBytes = 74;
  static constexpr float kF = 0.125f;
  static inline __m128i ls(const uint8_t* x) { return ls_from_nibbles(x + 66); }
  static inline GroupS group(const uint8_t* x, int g) {
    const uint64_t q = ld64(x + 2 + 8 * g);  // rows 4g..4g+3, 16 bits each
    const auto idx = [q](int l) { return static_cast<unsigned>(q >> (16 * l)) & 511; };
    const auto sgn = [q](int l) { return static_cast<unsigned>(q >> (16 * l + 9)) & 127; };
    return {rows64(minfer::quant::iq2xs_grid, idx(0), idx(1), idx(2), idx(3)),
            rows64(kSignRows.row, sgn(0), sgn(1), sgn(2), sgn(3))};
  }
};

// IQ2_S: u8 qs[32] @2 (index bits 0..7), u8 signs[32] @34, u8 qh[8] @66 (index bits 8..9 of
// row l of group g at bits 2l..2l+1), scale nibbles @74.
struct DecIq2S {
  static constexpr int kBytes = 82;
  static constexpr float kF = 0.125f;
  static inline __m128i ls(const uint8_t* x) { return ls_from_nibbles(x + 74); }
  static inline GroupB group(const uint8_t* x, int g) {
    const uint32_t q = ld32(x + 2 + 4 * g);
    const unsigned qh = x[66 + g];
    const auto idx = [q, qh](int l) { return (byte_of(q, l) | (((qh >> (2 * l)) & 3) << 8)) & 1023; };
    return {rows64(minfer::quant::iq2s_grid, idx(0), idx(1), idx(2), idx(3)), sign_bits(x + 34 + 4 * g)};
  }
};

// IQ3_XXS: u8 qs[64] @2 (8 indices of 4-entry rows per group), u32 aux @66 + 4g as IQ2_XXS's.
struct DecIq3Xxs {
  static constexpr int kBytes = 98;
  static constexpr float kF = 0.25f;
  static inline __m128i ls(const uint8_t* x) {
    // The eight aux words' top nibbles: two loads of four words, >> 28, packed to bytes.
    const __m128i a0 = _mm_srli_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 66)), 28);
    const __m128i a1 = _mm_srli_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 82)), 28);
    const __m128i w = _mm_packs_epi32(a0, a1);
    return ls_from_group_fields(_mm_packus_epi16(w, w));
  }
  static inline GroupS group(const uint8_t* x, int g) {
    const __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + 2 + 8 * g)));
    return {rows32(minfer::quant::iq3xxs_grid, idx), sign_rows4(ld32(x + 66 + 4 * g))};
  }
};

// IQ3_S: u8 qs[64] @2, u8 qh[8] @66 (bit k of qh[g]: index bit 8 of group g's entry k), u8
// signs[32] @74, scale nibbles @106 (nibble g&1 of byte g/2).
struct DecIq3S {
  static constexpr int kBytes = 110;
  static constexpr float kF = 1.0f;
  static inline __m128i ls(const uint8_t* x) {
    const __m128i v = _mm_cvtsi32_si128(static_cast<int>(ld32(x + 106)));
    const __m128i m = _mm_set1_epi8(15);
    return ls_from_group_fields(_mm_unpacklo_epi8(_mm_and_si128(v, m), _mm_and_si128(_mm_srli_epi16(v, 4), m)));
  }
  static inline GroupB group(const uint8_t* x, int g) {
    // The eight 9-bit indices as int32 lanes: byte k | (bit k of qh) << 8, masked to 9 bits.
    const __m256i lo = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + 2 + 8 * g)));
    const __m256i hi = _mm256_and_si256(
        _mm256_sllv_epi32(_mm256_set1_epi32(x[66 + g]), _mm256_setr_epi32(8, 7, 6, 5, 4, 3, 2, 1)),
        _mm256_set1_epi32(256));
    const __m256i idx = _mm256_and_si256(_mm256_or_si256(lo, hi), _mm256_set1_epi32(511));
    return {rows32(minfer::quant::iq3s_grid, idx), sign_bits(x + 74 + 4 * g)};
  }
};

// ---- the kernel ----

template <class D, int NC>
void dot_blocks(int64_t n, const uint8_t* x, const uint8_t* act, size_t stride, float* out) {
  const int64_t nb = n / 256;
  float s[NC];
#pragma GCC unroll 4
  for (int c = 0; c < NC; c++) s[c] = 0.0f;
  for (int64_t i = 0; i < nb; i++, x += D::kBytes) {
    const uint8_t* ab[NC];  // column c's Q8_K block i
#pragma GCC unroll 4
    for (int c = 0; c < NC; c++) ab[c] = act + c * stride + i * kQ8K;
    const ScaleWords ls(D::ls(x));
    __m256i acc[NC];
#pragma GCC unroll 4
    for (int c = 0; c < NC; c++) acc[c] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int g = 0; g < 8; g++) {
      const auto gr = D::group(x, g);
      const __m256i lsg = ls.pair(g);
#pragma GCC unroll 4
      for (int c = 0; c < NC; c++) {
        const __m256i a = apply_signs(load32(ab[c] + offsetof(BlockQ8K, qs) + 32 * g), gr.sign);
        acc[c] = dot_group(acc[c], gr.mag, a, lsg);
      }
    }
    const float d = _cvtsh_ss(ld16(x));
#pragma GCC unroll 4
    for (int c = 0; c < NC; c++) s[c] += (d * ldf(ab[c])) * static_cast<float>(hsum8(acc[c]));
  }
#pragma GCC unroll 4
  for (int c = 0; c < NC; c++) out[c] = D::kF * s[c];
}

// nc columns (1 ≤ nc ≤ kMaxCols) with the column count as a template argument.
template <class D>
void dispatch_nc(int64_t n, const void* w, const void* act, size_t stride, int nc, float* out) {
  static_assert(kMaxCols == 4, "for_columns covers 1..4 columns");
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* a = static_cast<const uint8_t*>(act);
  for_columns(nc, [&](auto k) { dot_blocks<D, decltype(k)::value>(n, x, a, stride, out); });
}

}  // namespace

void MQ_IQ23_NAME(vec_dot_iq2_xxs_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) {
  dispatch_nc<DecIq2Xxs>(n, w, a, st, nc, o);
}
void MQ_IQ23_NAME(vec_dot_iq2_xs_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) {
  dispatch_nc<DecIq2Xs>(n, w, a, st, nc, o);
}
void MQ_IQ23_NAME(vec_dot_iq2_s_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) {
  dispatch_nc<DecIq2S>(n, w, a, st, nc, o);
}
void MQ_IQ23_NAME(vec_dot_iq3_xxs_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) {
  dispatch_nc<DecIq3Xxs>(n, w, a, st, nc, o);
}
void MQ_IQ23_NAME(vec_dot_iq3_s_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) {
  dispatch_nc<DecIq3S>(n, w, a, st, nc, o);
}

#undef MQ_IQ23_NAME
#undef MQ_IQ23_CAT
#undef MQ_IQ23_CAT2
