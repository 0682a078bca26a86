// x86 SIMD vec_dots of IQ1_S, IQ1_M, TQ1_0 and TQ2_0, shared by quants_iq1t_avx2.cpp and
// quants_iq1t_avx512.cpp. Include inside namespace minfer::cpu::q, after <immintrin.h>, <cstddef>,
// <cstdint>, <cstring>, "quants_internal.h" and "../common/iq_grids.h", having defined
//   MQ_IQ1T_SUFFIX   avx2 or avx512 (names the exported functions)
//   MQ_IQ1T_AVX512   1 to use AVX-512 (BW/VL/VNNI, 256-bit vectors): vpdpbusd for the u8×s8 sums
//
// Method. All four types go against Q8_K activations in 256-element blocks. Each block is decoded
// once (for all nc columns) into eight vectors u[0..7] of 32 UNSIGNED bytes, in element order, and
// a vector corr of 16 int16 coefficients, such that the block's exact integer sum is
//     sumi = 2^k · Σ u·a + Σ_j corr[j] · bsums[j]
// (bsums[j]: the Q8_K block's sum of a over elements 16j..16j+15). The weights' signs and offsets
// are moved into corr, which leaves an unsigned × signed byte product for the bulk:
//   TQ1_0, TQ2_0  w = t − 1 for the digit t: u = t (≤ 2; a TQ2_0 code can also be 3), k = 0,
//                 corr = −1.
//   IQ1_S, IQ1_M  quants_iq.cpp writes a block as ls[j/16] · v with v = 8·g + δ (grid value
//                 g ∈ {−1, 0, 1}, δ = ±1 per group of 32 for IQ1_S, per row of 8 for IQ1_M).
//                 IQ1_S: v = 8·(g + 1) + (δ − 8): u = ls·(g + 1), k = 3, corr = ls·(δ − 8).
//                 IQ1_M (δ cannot go with the 16-element bsums): v + 9 is even, v = 2·x − 9 with
//                 x = 4·(g + 1) + (δ + 1)/2 ∈ 0..9: u = ls·x (AVX2: x), k = 1, corr = −9·ls.
// Σ u·a: at AVX-512 vpdpbusd straight into int32 lanes (two accumulators); at AVX2 vpmaddubsw
// int16 pair sums, added up over as many groups as cannot overflow int16 (|pair| ≤ 2·max u·128)
// and widened by vpmaddwd — for IQ1_M with ls as the vpmaddwd factor, as ls·x (≤ 135) would
// saturate vpmaddubsw. Σ corr·bsums is one vpmaddwd. All sums are exact (|sumi| < 2^23).
//
// Decoding:
//   TQ2_0  byte m of half h holds elements 128h + 32k + m in bits 2k..2k+1: shift and mask.
//   TQ1_0  a byte b packs base-3 digits as a fraction of 3^5; digit n is ⌊3·(b·3^n mod 256)/256⌋
//          (quants_ternary.cpp). Bytes are tripled with wrap-around adds (y + y + y), and the
//          digit is [y ≥ 86] + [y ≥ 171], two signed compares after flipping the top bit (the
//          flipped value y ⊕ 0x80 = y + 128 also just triples mod 256: 3·(y + 128) ≡ 3y + 128).
//          The 16 bytes qs[32..47] fill one vector as digits n, n + 1 in its two halves; qh's
//          four bytes, each ×1, ×3, ×9, ×27 in one dword apiece, finish the last vector.
//   IQ1    per row of 8 elements an 11-bit grid index (8 bits of qs, 3 of qh: masked fields, so
//          always inside iq1s_grid), one 64-bit entry per row by scalar loads. The entry's bytes
//          0x00, 0x01, 0xff then index a vpshufb table (0xff has its top bit set and gives 0):
//          IQ1_S a per-block table of ls, 2·ls; IQ1_M the constants 4, 8, plus (δ + 1)/2 from a
//          per-row mask of the δ bits, times ls with vpmullw at AVX-512 (x ≤ 9, ls ≤ 15: neither
//          byte of a word reaches 256, so no carry crosses bytes).
//
// Float work: bit-identical to the scalar kernels (quants_ternary.cpp, quants_iq.cpp): per block
// and column the same exact integer, then TQ: s += float(sumi) · (d · a.d); IQ1: acc += (d · a.d)
// · float(sumi), out = 0.125 · acc — in the scalar kernels' order, with contraction off (no FMA may
// fuse a product with the sum), so every result equals vec_dot_<type>_scalar's, for every nc.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define MQ_IQ1T_CAT2(a, b) a##b
#define MQ_IQ1T_CAT(a, b) MQ_IQ1T_CAT2(a, b)
#define MQ_IQ1T_NAME(base) MQ_IQ1T_CAT(base, MQ_IQ1T_SUFFIX)
// Decoders are large; they must still be inlined into the column loop (else the block goes
// through memory and every call pays a vzeroupper).
#define MQ_IQ1T_INLINE inline __attribute__((always_inline))

#include "quants_x86_util.h"

namespace {

static_assert(sizeof(minfer::quant::iq1s_grid) / sizeof(minfer::quant::iq1s_grid[0]) == 2048,
              "IQ1 grid index: 11 bits");

constexpr size_t kQ8KBytes = sizeof(BlockQ8K);  // 292
constexpr size_t kQ8KQs = offsetof(BlockQ8K, qs);
constexpr size_t kQ8KBsums = offsetof(BlockQ8K, bsums);

// Groups of 32 whose vpmaddubsw pair sums (each |·| ≤ 2·max_u·128) can add up in int16 before
// widening: 8, 4, 2 or 1.
constexpr int int16_run(int max_u) {
  return 8 * 2 * max_u * 128 <= 32767 ? 8 : 4 * 2 * max_u * 128 <= 32767 ? 4 : 2 * 2 * max_u * 128 <= 32767 ? 2 : 1;
}

// Σ_g Σ_j u[g][j]·qs[32g + j] over one block (u ≤ kMaxU unsigned, qs signed) as 8 int32 lanes.
template <int kMaxU>
inline __m256i dot_block_u(const __m256i* u, const uint8_t* qs) {
  static_assert(kMaxU <= 255, "u is a byte");
#if MQ_IQ1T_AVX512
  // Two accumulators: halves the vpdpbusd dependency chain.
  __m256i p0 = _mm256_setzero_si256(), p1 = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int g = 0; g < 8; g += 2) {
    p0 = _mm256_dpbusd_epi32(p0, u[g], load32(qs + 32 * g));
    p1 = _mm256_dpbusd_epi32(p1, u[g + 1], load32(qs + 32 * g + 32));
  }
  return _mm256_add_epi32(p0, p1);
#else
  static_assert(2 * kMaxU * 128 <= 32767, "vpmaddubsw must not saturate");
  constexpr int kRun = int16_run(kMaxU);
  __m256i acc = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int g0 = 0; g0 < 8; g0 += kRun) {
    __m256i p = _mm256_maddubs_epi16(u[g0], load32(qs + 32 * g0));
#pragma GCC unroll 8
    for (int g = g0 + 1; g < g0 + kRun; g++) p = _mm256_add_epi16(p, _mm256_maddubs_epi16(u[g], load32(qs + 32 * g)));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
  }
  return acc;
#endif
}

// A decoded block: the eight u vectors and corr, the int16 coefficient of each bsums[j].
struct UBlock {
  __m256i u[8];
  __m256i corr;
};

// The block's integer sum against the Q8_K block at ab: 2^kShift · Σ u·a + Σ corr[j]·bsums[j].
template <int kMaxU, int kShift>
inline int block_sum(const UBlock& b, const uint8_t* ab) {
  const __m256i su = _mm256_slli_epi32(dot_block_u<kMaxU>(b.u, ab + kQ8KQs), kShift);
  return hsum8(_mm256_add_epi32(su, _mm256_madd_epi16(load32(ab + kQ8KBsums), b.corr)));
}

// ---- TQ1_0 and TQ2_0: u = digit t ≤ 2 (TQ2_0: code ≤ 3), Σ (t − 1)·a = Σ t·a − Σ bsums ----

// The scalar kernel's float steps: s += float(sumi) · (d_w · d_a); out = s.
struct Ternary {
  using Block = UBlock;
  static MQ_IQ1T_INLINE int sum(const Block& b, const uint8_t* ab) { return block_sum<3, 0>(b, ab); }
  static inline float step(float s, float d, float da, int sumi) { return s + static_cast<float>(sumi) * (d * da); }
  static inline float finish(float s) { return s; }
};

// y·3 mod 256 in every byte.
inline __m256i triple(__m256i y) { return _mm256_add_epi8(y, _mm256_add_epi8(y, y)); }
inline __m128i triple128(__m128i y) { return _mm_add_epi8(y, _mm_add_epi8(y, y)); }

// The leading base-3 digit ⌊3y/256⌋ of bytes y, given as y ⊕ 0x80 (signed y − 128):
// [y ≥ 86] + [y ≥ 171], i.e. −(mask y−128 > −43) − (mask y−128 > 42).
inline __m256i lead_digit(__m256i yb) {
  const __m256i ge86 = _mm256_cmpgt_epi8(yb, _mm256_set1_epi8(-43));
  const __m256i ge171 = _mm256_cmpgt_epi8(yb, _mm256_set1_epi8(42));
  return _mm256_sub_epi8(_mm256_sub_epi8(_mm256_setzero_si256(), ge86), ge171);
}

// TQ1_0 (54 bytes): qs[0..31] five digits each (digit n of byte m: element 32n + m); qs[32..47]
// five each (element 160 + 16n + m); qh[0..3] @48 four each (element 240 + 4n + m); f16 d @52.
struct DecTq1 : Ternary {
  static constexpr int kBytes = 54;
  static MQ_IQ1T_INLINE float decode(const uint8_t* x, Block& b) {
    b.corr = _mm256_set1_epi16(-1);
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
    // Elements 0..159.
    __m256i y = _mm256_xor_si256(load32(x), flip);
    b.u[0] = lead_digit(y);
#pragma GCC unroll 4
    for (int n = 1; n < 5; n++) {
      y = triple(y);
      b.u[n] = lead_digit(y);
    }
    // Elements 160..239: [digit 0 | digit 1], [2 | 3], [4 | unused] of qs[32..47].
    const __m256i q = _mm256_xor_si256(
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 32))), flip);
    __m256i z = _mm256_blend_epi32(q, triple(q), 0xf0);
    b.u[5] = lead_digit(z);
    z = triple(triple(z));
    b.u[6] = lead_digit(z);
    z = triple(triple(z));
    // Elements 240..255: qh's four bytes times 1, 3, 9, 27 in dwords 0..3.
    const __m128i h1 = _mm_xor_si128(_mm_set1_epi32(static_cast<int>(ld32(x + 48))), _mm256_castsi256_si128(flip));
    const __m128i h3 = triple128(h1), h9 = triple128(h3), h27 = triple128(h9);
    const __m128i h = _mm_blend_epi32(_mm_blend_epi32(h1, h3, 0x2), _mm_blend_epi32(h9, h27, 0x8), 0xc);
    b.u[7] = lead_digit(_mm256_inserti128_si256(z, h, 1));
    return _cvtsh_ss(ld16(x + 52));
  }
};

// TQ2_0 (66 bytes): qs[64] (byte m of half h: elements 128h + 32k + m in bits 2k..2k+1); f16 d @64.
struct DecTq2 : Ternary {
  static constexpr int kBytes = 66;
  static MQ_IQ1T_INLINE float decode(const uint8_t* x, Block& b) {
    b.corr = _mm256_set1_epi16(-1);
    const __m256i m3 = _mm256_set1_epi8(3);
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
      const __m256i q = load32(x + 32 * h);
      b.u[4 * h] = _mm256_and_si256(q, m3);
      b.u[4 * h + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 2), m3);
      b.u[4 * h + 2] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m3);
      b.u[4 * h + 3] = _mm256_and_si256(_mm256_srli_epi16(q, 6), m3);
    }
    return _cvtsh_ss(ld16(x + 64));
  }
};

// ---- IQ1_S and IQ1_M ----

// The scalar kernel's float steps: acc += (d_w · d_a) · float(sumi); out = 0.125 · acc.
struct Iq1Float {
  static inline float step(float s, float d, float da, int sumi) { return s + (d * da) * static_cast<float>(sumi); }
  static inline float finish(float s) { return 0.125f * s; }
};

// The 32 rows' grid indices, row 4g + l in dword 4(g&1) + l of idx[g/2]: qs[4g + l] | bits
// kHiStep·l .. kHiStep·l + 2 of group g's u16 word at x + kWords, << 8. Masked 8- and 3-bit fields:
// each index is below 2048.
template <int kQs, int kWords, int kHiStep>
inline void iq1_indices(const uint8_t* x, __m256i* idx) {
  const __m256i words = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + kWords)));
  const __m256i shifts = _mm256_setr_epi32(0, kHiStep, 2 * kHiStep, 3 * kHiStep, 0, kHiStep, 2 * kHiStep, 3 * kHiStep);
#pragma GCC unroll 4
  for (int p = 0; p < 4; p++) {  // groups 2p, 2p + 1
    const __m256i w = _mm256_permutevar8x32_epi32(words, _mm256_setr_epi32(2 * p, 2 * p, 2 * p, 2 * p,  //
                                                                           2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1));
    const __m256i hi = _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(w, shifts), _mm256_set1_epi32(7)), 8);
    const __m256i lo = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + kQs + 8 * p)));
    idx[p] = _mm256_or_si256(hi, lo);
  }
}

// Group g's four 64-bit grid entries (rows 0..3) as one vector.
inline __m256i grid4(const __m256i* idx, int g) {
  const __m128i i4 = (g & 1) ? _mm256_extracti128_si256(idx[g >> 1], 1) : _mm256_castsi256_si128(idx[g >> 1]);
  // (Scalar loads: a vpgatherdq was no faster on Zen 4 and is slow on Intel parts with the GDS
  // microcode mitigation.)
  using minfer::quant::iq1s_grid;
  return _mm256_set_epi64x(static_cast<long long>(iq1s_grid[_mm_extract_epi32(i4, 3)]),
                           static_cast<long long>(iq1s_grid[_mm_extract_epi32(i4, 2)]),
                           static_cast<long long>(iq1s_grid[_mm_extract_epi32(i4, 1)]),
                           static_cast<long long>(iq1s_grid[_mm_cvtsi128_si32(i4)]));
}

// IQ1_S (50 bytes): f16 d @0; qs[32] @2 (index bits 0..7 of row 4g + l); u16 qh[8] @34 (bits
// 3l..3l+2: index bits 8..10 of row l, 12..14: the group's 3-bit scale s, 15: its δ sign).
// u = ls·(g + 1) ≤ 30 is one vpshufb: a table holding ls, 2·ls of group k at bytes 2k, 2k + 1,
// indexed by the grid byte | 2g (0x00 → ls, 0x01 → 2·ls; 0xff keeps its top bit and gives 0).
struct DecIq1s : Iq1Float {
  static constexpr int kBytes = 50;
  using Block = UBlock;
  static MQ_IQ1T_INLINE float decode(const uint8_t* x, Block& b) {
    const __m128i qh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 34));
    const __m128i ls = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(qh, 11), _mm_set1_epi16(14)), _mm_set1_epi16(1));
    const __m128i dm8 = _mm_sub_epi16(_mm_set1_epi16(-7), _mm_slli_epi16(_mm_srli_epi16(qh, 15), 1));  // −7 or −9
    const __m128i c = _mm_mullo_epi16(ls, dm8);                                                        // per group
    b.corr = _mm256_set_m128i(_mm_unpackhi_epi16(c, c), _mm_unpacklo_epi16(c, c));                   // per 16
    const __m256i table = _mm256_broadcastsi128_si256(_mm_mullo_epi16(ls, _mm_set1_epi16(0x0201)));
    __m256i idx[4];
    iq1_indices<2, 34, 3>(x, idx);
#pragma GCC unroll 8
    for (int g = 0; g < 8; g++)
      b.u[g] = _mm256_shuffle_epi8(table, _mm256_or_si256(grid4(idx, g), _mm256_set1_epi8(static_cast<char>(2 * g))));
    return _cvtsh_ss(ld16(x));
  }
  static MQ_IQ1T_INLINE int sum(const Block& b, const uint8_t* ab) { return block_sum<30, 3>(b, ab); }
};

// IQ1_M (56 bytes): qs[32] @0; qh[16] @32 (nibble l of the u16 at 32 + 2g: bits 0..2 index bits
// 8..10 of row l, bit 3 its δ sign); u16 sc[4] @48: bits 6(g&1).. / 6(g&1)+3.. of sc[g/2] the
// 3-bit scales of rows 0-1 / 2-3 of group g; the words' top nibbles, lowest first, the f16 d.
// x = 4·(g + 1) + e with e = (δ + 1)/2 ∈ {0, 1}; AVX-512 takes u = ls·x ≤ 135, AVX2 u = x with
// ls applied by vpmaddwd.
struct Iq1mBlock {
  __m256i u[8];
  __m256i corr;
#if !MQ_IQ1T_AVX512
  __m256i ls[8];  // group g's scales as int16 lanes: [ls[2g] ×8 | ls[2g+1] ×8]
#endif
};

struct DecIq1m : Iq1Float {
  static constexpr int kBytes = 56;
#if MQ_IQ1T_AVX512
  using Block = UBlock;
#else
  using Block = Iq1mBlock;
#endif
  static inline float d(const uint8_t* x) {
    uint64_t sc;
    std::memcpy(&sc, x + 48, 8);
    const unsigned bits = static_cast<unsigned>(((sc >> 12) & 0x000f) | ((sc >> 24) & 0x00f0) |
                                                ((sc >> 36) & 0x0f00) | ((sc >> 48) & 0xf000));
    return _cvtsh_ss(static_cast<unsigned short>(bits));
  }
  // Dword g = ls[2g] | ls[2g + 1] << 16 (as int16 lanes: lane j = ls[j]).
  static inline __m256i scales(const uint8_t* x) {
    // Dword g ← sc[g/2] >> 6(g&1), whose fields at bits 0..2 and 3..5 are the two scales.
    const __m256i sc =
        _mm256_castsi128_si256(_mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + 48))));
    const __m256i f = _mm256_srlv_epi32(_mm256_permutevar8x32_epi32(sc, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3)),
                                        _mm256_setr_epi32(0, 6, 0, 6, 0, 6, 0, 6));
    const __m256i s = _mm256_and_si256(_mm256_or_si256(f, _mm256_slli_epi32(f, 13)), _mm256_set1_epi32(0x00070007));
    return _mm256_or_si256(_mm256_slli_epi16(s, 1), _mm256_set1_epi16(1));
  }
  // Group g's [ls[2g] ×8 | ls[2g+1] ×8]: dword g broadcast, word 0 over the low half, word 1 over the high.
  static inline __m256i group_scales(__m256i ls32, int g) {
    const __m256i split = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,  //
                                           2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
    return _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(ls32, _mm256_set1_epi32(g)), split);
  }
  static MQ_IQ1T_INLINE float decode(const uint8_t* x, Block& b) {
    const __m256i ls32 = scales(x);
    b.corr = _mm256_mullo_epi16(ls32, _mm256_set1_epi16(-9));
    __m256i idx[4];
    iq1_indices<0, 32, 4>(x, idx);
    // Row l's δ bit (4l + 3) in every word of its 64-bit lane.
    const __m256i delta_bits = _mm256_setr_epi64x(0x0008000800080008ll, 0x0080008000800080ll, 0x0800080008000800ll,
                                                  static_cast<long long>(0x8000800080008000ull));
    // 4g + 4 by vpshufb: grid bytes 0x00, 0x01 select 4, 8; 0xff (top bit set) gives 0.
    const __m256i x4_table = _mm256_setr_epi8(4, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  //
                                              4, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
#pragma GCC unroll 8
    for (int g = 0; g < 8; g++) {
      const __m256i x4 = _mm256_shuffle_epi8(x4_table, grid4(idx, g));
      const __m256i w = _mm256_set1_epi16(static_cast<short>(ld16(x + 32 + 2 * g)));
      const __m256i e_mask = _mm256_cmpeq_epi16(_mm256_and_si256(w, delta_bits), _mm256_setzero_si256());
      const __m256i xg = _mm256_sub_epi8(x4, e_mask);  // −(−1) = +1 where the δ bit is clear (e = 1)
#if MQ_IQ1T_AVX512
      b.u[g] = _mm256_mullo_epi16(xg, group_scales(ls32, g));
#else
      b.u[g] = xg;
      b.ls[g] = group_scales(ls32, g);
#endif
    }
    return d(x);
  }
  static MQ_IQ1T_INLINE int sum(const Block& b, const uint8_t* ab) {
#if MQ_IQ1T_AVX512
    return block_sum<135, 1>(b, ab);
#else
    // Σ_g vpmaddwd(vpmaddubsw(x, a), ls): pair sums ≤ 2·9·128, then scaled and widened.
    const uint8_t* qs = ab + kQ8KQs;
    __m256i sx = _mm256_madd_epi16(_mm256_maddubs_epi16(b.u[0], load32(qs)), b.ls[0]);
#pragma GCC unroll 8
    for (int g = 1; g < 8; g++)
      sx = _mm256_add_epi32(sx, _mm256_madd_epi16(_mm256_maddubs_epi16(b.u[g], load32(qs + 32 * g)), b.ls[g]));
    return hsum8(_mm256_add_epi32(_mm256_slli_epi32(sx, 1), _mm256_madd_epi16(load32(ab + kQ8KBsums), b.corr)));
#endif
  }
};

// ---- the kernel: each block decoded once for NC columns ----

template <class D, int NC>
void dot_q8k(int64_t n, const uint8_t* x, const uint8_t* act, size_t stride, float* out) {
  const int64_t nb = n / 256;
  float s[NC];
#pragma GCC unroll 4
  for (int c = 0; c < NC; c++) s[c] = 0.0f;
  for (int64_t i = 0; i < nb; i++, x += D::kBytes) {
    typename D::Block b;
    const float d = D::decode(x, b);
#pragma GCC unroll 4
    for (int c = 0; c < NC; c++) {
      const uint8_t* ab = act + c * stride + i * kQ8KBytes;
      s[c] = D::step(s[c], d, ldf(ab), D::sum(b, ab));
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < NC; c++) out[c] = D::finish(s[c]);
}

// nc columns (1 ≤ nc ≤ kMaxCols) with the column count as a template argument.
template <class D>
void dispatch_nc(int64_t n, const void* w, const void* act, size_t stride, int nc, float* out) {
  static_assert(kMaxCols == 4, "for_columns covers 1..4 columns");
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* a = static_cast<const uint8_t*>(act);
  for_columns(nc, [&](auto k) { dot_q8k<D, decltype(k)::value>(n, x, a, stride, out); });
}

}  // namespace

void MQ_IQ1T_NAME(vec_dot_iq1_s_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) {
  dispatch_nc<DecIq1s>(n, w, a, st, nc, o);
}
void MQ_IQ1T_NAME(vec_dot_iq1_m_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) {
  dispatch_nc<DecIq1m>(n, w, a, st, nc, o);
}
void MQ_IQ1T_NAME(vec_dot_tq1_0_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) {
  dispatch_nc<DecTq1>(n, w, a, st, nc, o);
}
void MQ_IQ1T_NAME(vec_dot_tq2_0_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) {
  dispatch_nc<DecTq2>(n, w, a, st, nc, o);
}

#undef MQ_IQ1T_INLINE
#undef MQ_IQ1T_NAME
#undef MQ_IQ1T_CAT
#undef MQ_IQ1T_CAT2
