// x86 SIMD vec_dots and activation quantizers, shared by quants_avx2.cpp and quants_avx512.cpp.
// Include inside a namespace, after defining:
//   MQ_SUFFIX      avx2 or avx512 (names the exported functions)
//   MQ_AVX512      1 to use 512-bit float dots, AVX-512BW/VL byte masks and VNNI vpdpbusd/vpdpwssd
// The integer work runs on 256-bit vectors at both levels (one 32-element block per vector):
// on the AVX-512 EPYC this was tuned on, 512-bit variants (two blocks per vector, scales gathered
// for 4 blocks with vpermw/vpermt2ps and one hadd-based reduction) measured slower than this.
// VNNI replaces maddubs+madd by one vpdpbusd where no per-16 scale is applied, and madd+add by
// one vpdpwssd where one is. Legacy blocks keep their float work lane-wise, unrolled
// over independent accumulators (no horizontal sum until the end of the row).
// (The wrapper includes <immintrin.h>, <cstdint> and <cstring> before opening the namespace.)
#define MQ_CAT2(a, b) a##b
#define MQ_CAT(a, b) MQ_CAT2(a, b)
#define MQ_NAME(base) MQ_CAT(base, MQ_SUFFIX)

namespace {

inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int hsum256i(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

inline float h2f(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Σ over groups of 4 of u8 × s8 products → 8 int32 lanes.
inline __m256i dot_us(__m256i u, __m256i s) {
#if MQ_AVX512
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

// acc + Σ over pairs of u8 × s8 products times a per-16-bit-lane scale, summed in pairs → 8 int32
// (u ≤ 63 so that the pair sums fit in int16).
inline __m256i dot_us_scaled_acc(__m256i acc, __m256i u, __m256i s, __m256i scale16) {
#if MQ_AVX512
  return _mm256_dpwssd_epi32(acc, _mm256_maddubs_epi16(u, s), scale16);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), scale16));
#endif
}

// 16 bytes (two nibbles each) → 32 bytes: low nibbles first, then high nibbles (one broadcast load,
// one variable shift, one AND).
inline __m256i unpack_nibbles16(const uint8_t* p) {
  const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_and_si256(_mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), _mm256_set1_epi8(0x0f));
}

// Bit k of the 32-bit qh → byte k = 0x10 if set, else 0.
inline __m256i qh_bits(const uint8_t* p) {
  uint32_t qh;
  std::memcpy(&qh, p, 4);
#if MQ_AVX512
  return _mm256_maskz_mov_epi8(static_cast<__mmask32>(qh), _mm256_set1_epi8(0x10));
#else
  const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2,
                                        2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)), shuf);
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  const __m256i m = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
  return _mm256_and_si256(m, _mm256_set1_epi8(0x10));
#endif
}

// 32 int32 (four vectors, in order) → 32 int8 in order (values already in -127..127).
inline __m256i pack32(__m256i v0, __m256i v1, __m256i v2, __m256i v3) {
  const __m256i p01 = _mm256_packs_epi32(v0, v1);
  const __m256i p23 = _mm256_packs_epi32(v2, v3);
  const __m256i p = _mm256_packs_epi16(p01, p23);
  return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Quantizes 32 floats with factor id (round to nearest even), stores 32 int8, returns the int32s'
// sum vector (8 lanes).
inline __m256i quant32(const float* x, __m256 vid, int8_t* dst) {
  const int r = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x), vid), r));
  const __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8), vid), r));
  const __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 16), vid), r));
  const __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 24), vid), r));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), pack32(i0, i1, i2, i3));
  return _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
}

inline float absmax(const float* x, int n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (int j = 0; j < n; j += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)));
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// ---- legacy 32-element types: decoders of one block into unsigned (or, for Q8_0, signed)
// codes. kMode says how the code offset is applied:
//   0  signed codes (Q8_0): no offset; the sign is moved onto the activations (abs/sign).
//   1  constant offset −8·kS (Q4_0: kS = 1, Q5_0: kS = 2): folded per lane as
//      (dot_lane · d_a − kS · s_a), whose 8-lane sum is d_a · dot − 8 · kS · s_a.
//   2  min m (Q4_1, Q5_1): m · s_a accumulated in scalars (one per unrolled slot).
// Every block's float work is lane-wise (no horizontal sums in the loop). ----

// f16 at p → f32 in all 8 lanes (reads 8 bytes at p).
inline __m256 bcast_f16(const uint8_t* p) {
  return _mm256_broadcastss_ps(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

struct DecQ4_0 {
  static constexpr int kBytes = 18, kMode = 1;
  static constexpr float kS = 1.0f;
  static inline __m256i q(const uint8_t* x) { return unpack_nibbles16(x + 2); }
};
struct DecQ4_1 {
  static constexpr int kBytes = 20, kMode = 2;
  static constexpr float kS = 0.0f;
  static inline __m256i q(const uint8_t* x) { return unpack_nibbles16(x + 4); }
};
struct DecQ5_0 {
  static constexpr int kBytes = 22, kMode = 1;
  static constexpr float kS = 2.0f;
  static inline __m256i q(const uint8_t* x) { return _mm256_or_si256(unpack_nibbles16(x + 6), qh_bits(x + 2)); }
};
struct DecQ5_1 {
  static constexpr int kBytes = 24, kMode = 2;
  static constexpr float kS = 0.0f;
  static inline __m256i q(const uint8_t* x) { return _mm256_or_si256(unpack_nibbles16(x + 8), qh_bits(x + 4)); }
};
struct DecQ8_0 {
  static constexpr int kBytes = 34, kMode = 0;
  static constexpr float kS = 0.0f;
  static inline __m256i q(const uint8_t* x) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 2)); }
};

// One weight block at x against block a0 (+ c·stride) of each column: acc[c] (and accm[c]) += ….
// dw: the block's d broadcast; mw: its m (kMode 2).
template <class D, int NC>
inline void legacy_block(const uint8_t* x, __m256 dw, float mw, const uint8_t* a0, size_t stride, __m256* acc,
                         float* accm) {
  const __m256i qw = D::q(x);
  const __m256i u = D::kMode == 0 ? _mm256_abs_epi8(qw) : qw;
#pragma GCC unroll 4
  for (int c = 0; c < NC; c++) {
    const uint8_t* ab = a0 + c * stride;
    __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab + 8));
    if (D::kMode == 0) qa = _mm256_sign_epi8(qa, qw);
    const __m256 pf = _mm256_cvtepi32_ps(dot_us(u, qa));
    const __m256 da = _mm256_broadcast_ss(reinterpret_cast<const float*>(ab));
    if (D::kMode == 1) {
      __m256 s = _mm256_broadcast_ss(reinterpret_cast<const float*>(ab + 4));
      if (D::kS != 1.0f) s = _mm256_mul_ps(s, _mm256_set1_ps(D::kS));
      acc[c] = _mm256_fmadd_ps(_mm256_fmsub_ps(pf, da, s), dw, acc[c]);
    } else {
      acc[c] = _mm256_fmadd_ps(_mm256_mul_ps(pf, da), dw, acc[c]);
      if (D::kMode == 2) {
        float sa;
        std::memcpy(&sa, ab + 4, 4);
        accm[c] += mw * sa;
      }
    }
  }
}

// U blocks per iteration, each into its own accumulators (hides the FMA latency).
template <class D, int NC, int U>
void dot_legacy(int64_t n, const uint8_t* x, const uint8_t* act, size_t stride, float* out) {
  constexpr size_t kA = sizeof(minfer::cpu::q::BlockQ8A);
  const int64_t nb = n / 32;
  __m256 acc[U][NC];
  float accm[U][NC];
#pragma GCC unroll 8
  for (int u = 0; u < U; u++)
#pragma GCC unroll 4
    for (int c = 0; c < NC; c++) acc[u][c] = _mm256_setzero_ps(), accm[u][c] = 0.0f;
  int64_t i = 0;
  for (; i + U <= nb; i += U) {
    const uint8_t* xb = x + i * D::kBytes;
#pragma GCC unroll 8
    for (int u = 0; u < U; u++) {
      const uint8_t* xu = xb + u * D::kBytes;
      legacy_block<D, NC>(xu, bcast_f16(xu), D::kMode == 2 ? h2f(xu + 2) : 0.0f, act + (i + u) * kA, stride, acc[u],
                          accm[u]);
    }
  }
  for (; i < nb; i++) {
    const uint8_t* xu = x + i * D::kBytes;
    legacy_block<D, NC>(xu, bcast_f16(xu), D::kMode == 2 ? h2f(xu + 2) : 0.0f, act + i * kA, stride, acc[0],
                        accm[0]);
  }
#pragma GCC unroll 4
  for (int c = 0; c < NC; c++) {
#pragma GCC unroll 8
    for (int u = 1; u < U; u++) acc[0][c] = _mm256_add_ps(acc[0][c], acc[u][c]);
    float r = hsum256(acc[0][c]);
    if (D::kMode == 2) {
#pragma GCC unroll 8
      for (int u = 0; u < U; u++) r += accm[u][c];
    }
    out[c] = r;
  }
}

template <class D>
void dot_legacy_n(int64_t n, const void* w, const void* act, size_t stride, int nc, float* out) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* a = static_cast<const uint8_t*>(act);
  // One accumulator count for every column count: a column's sum is then the same float whatever
  // the group it is computed in (column invariance: batched decode and speculative verification give
  // the bits of one-token decode).
  constexpr int U = (MQ_AVX512 || D::kMode != 2) ? 4 : 2;
  while (nc > 0) {
    switch (nc) {
      case 1: dot_legacy<D, 1, U>(n, x, a, stride, out); return;
      case 2: dot_legacy<D, 2, U>(n, x, a, stride, out); return;
      case 3: dot_legacy<D, 3, U>(n, x, a, stride, out); return;
      default:
        dot_legacy<D, 4, U>(n, x, a, stride, out);
        nc -= 4;
        a += 4 * stride;
        out += 4;
    }
  }
}

// ---- K-quants ----

using minfer::cpu::q::BlockQ8K;

inline __m256i load32(const void* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// Sixteen 16-bit scales w (lane 0: scales 0..7, lane 1: 8..15) → for k = 0..7 the vector
// [scale 2k ×8 | scale 2k+1 ×8] (the scales of two 16-element halves of one 32-byte vector).
struct PairScales {
  __m256i lo, hi;
  explicit PairScales(__m256i w)
      : lo(_mm256_permute2x128_si256(w, w, 0x00)), hi(_mm256_permute2x128_si256(w, w, 0x11)) {}
  inline __m256i get(int k) const {
    const int b = 4 * (k & 3);
    const __m256i ctrl = _mm256_setr_epi8(b, b + 1, b, b + 1, b, b + 1, b, b + 1, b, b + 1, b, b + 1, b, b + 1, b,
                                          b + 1, b + 2, b + 3, b + 2, b + 3, b + 2, b + 3, b + 2, b + 3, b + 2,
                                          b + 3, b + 2, b + 3, b + 2, b + 3, b + 2, b + 3);
    return _mm256_shuffle_epi8(k < 4 ? lo : hi, ctrl);
  }
};

float dot_q2_k_1(int64_t nb, const uint8_t* x, const BlockQ8K* a) {
  __m256 acc = _mm256_setzero_ps();
  const __m256i m3 = _mm256_set1_epi8(3);
  for (int64_t i = 0; i < nb; i++, x += 84, a++) {
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x));
    const PairScales ps(_mm256_cvtepu8_epi16(_mm_and_si128(sc, _mm_set1_epi8(15))));
    __m256i sumi0 = _mm256_setzero_si256(), sumi1 = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
      const __m256i qv = load32(x + 16 + 32 * h);
#pragma GCC unroll 4
      for (int s = 0; s < 4; s++) {
        const __m256i u = _mm256_and_si256(_mm256_srli_epi16(qv, 2 * s), m3);
        const __m256i qa = load32(a->qs + 128 * h + 32 * s);
        if (s & 1) sumi1 = dot_us_scaled_acc(sumi1, u, qa, ps.get(4 * h + s));
        else sumi0 = dot_us_scaled_acc(sumi0, u, qa, ps.get(4 * h + s));
      }
    }
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc, 4), _mm_set1_epi8(15)));
    const __m256i summ = _mm256_madd_epi16(mins, load32(a->bsums));
    const float d = h2f(x + 80) * a->d, dmin = h2f(x + 82) * a->d;
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_add_epi32(sumi0, sumi1)), acc);
    acc = _mm256_fnmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(summ), acc);
  }
  return hsum256(acc);
}

float dot_q3_k_1(int64_t nb, const uint8_t* x, const BlockQ8K* a) {
  __m256 acc = _mm256_setzero_ps();
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m256i one = _mm256_set1_epi8(1);
  for (int64_t i = 0; i < nb; i++, x += 110, a++) {
    alignas(16) int8_t sc[16];
    minfer::cpu::q::scales_q3k(x + 96, sc);
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(sc)));
    const PairScales ps(sc16);
    const __m256i hm = load32(x);
    __m256i sumi0 = _mm256_setzero_si256(), sumi1 = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
      const __m256i qv = load32(x + 32 + 32 * h);
#pragma GCC unroll 4
      for (int s = 0; s < 4; s++) {
        const int bit = 4 * h + s;
        const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(qv, 2 * s), m3);
        const __m256i hb = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, bit), one), 2);
        const __m256i u = _mm256_or_si256(lo, hb);
        const __m256i qa = load32(a->qs + 128 * h + 32 * s);
        if (s & 1) sumi1 = dot_us_scaled_acc(sumi1, u, qa, ps.get(4 * h + s));
        else sumi0 = dot_us_scaled_acc(sumi0, u, qa, ps.get(4 * h + s));
      }
    }
    const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(sc16, load32(a->bsums)), 2);
    const __m256i sumi = _mm256_sub_epi32(_mm256_add_epi32(sumi0, sumi1), off);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x + 108) * a->d), _mm256_cvtepi32_ps(sumi), acc);
  }
  return hsum256(acc);
}

// Q4_K / Q5_K: the 12 scale bytes are unpacked with 32-bit word arithmetic into 8 six-bit scales
// and 8 mins; each sub-block's scale is broadcast by a byte shuffle once per super-block. The
// weight block is decoded once for all NC columns.
template <bool Q5, int NC>
void dot_q45_k(int64_t nb, const uint8_t* x, const uint8_t* act, size_t stride, float* out) {
  constexpr int kBytes = Q5 ? 176 : 144;
  constexpr int kQs = Q5 ? 48 : 16;
  __m256 acc[NC];
  __m128 accm[NC];
  for (int c = 0; c < NC; c++) acc[c] = _mm256_setzero_ps(), accm[c] = _mm_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  for (int64_t i = 0; i < nb; i++, x += kBytes) {
    uint32_t u0, u1, u2;
    std::memcpy(&u0, x + 4, 4);
    std::memcpy(&u1, x + 8, 4);
    std::memcpy(&u2, x + 12, 4);
    const uint32_t sc_lo = u0 & 0x3f3f3f3fu, mn_lo = u1 & 0x3f3f3f3fu;
    const uint32_t sc_hi = (u2 & 0x0f0f0f0fu) | (((u0 >> 6) & 0x03030303u) << 4);
    const uint32_t mn_hi = ((u2 >> 4) & 0x0f0f0f0fu) | (((u1 >> 6) & 0x03030303u) << 4);
    const __m256i sc16 = _mm256_broadcastsi128_si256(
        _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(sc_hi), static_cast<int>(sc_lo))));
    const __m128i mn16 = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(mn_hi), static_cast<int>(mn_lo)));
    __m256i q[8], sj[8];
    __m256i qh = _mm256_setzero_si256();
    if (Q5) qh = load32(x + 16);
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
      const __m256i v = load32(x + kQs + 32 * c);
      q[2 * c] = _mm256_and_si256(v, m4);
      q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
      if (Q5) {
        const __m256i b1 = _mm256_set1_epi8(static_cast<char>(1 << (2 * c)));
        const __m256i b2 = _mm256_set1_epi8(static_cast<char>(1 << (2 * c + 1)));
        const __m256i x10 = _mm256_set1_epi8(0x10);
        q[2 * c] = _mm256_or_si256(q[2 * c], _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b1), b1), x10));
        q[2 * c + 1] = _mm256_or_si256(q[2 * c + 1], _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b2), b2), x10));
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++)
      sj[j] = _mm256_shuffle_epi8(sc16, _mm256_set1_epi16(static_cast<short>(((2 * j + 1) << 8) | (2 * j))));
    const float d = h2f(x), dmin = h2f(x + 2);
#pragma GCC unroll 4
    for (int c = 0; c < NC; c++) {
      const BlockQ8K* a = reinterpret_cast<const BlockQ8K*>(act + c * stride) + i;
      // Four independent integer chains (dpwssd latency), summed once per super-block.
      __m256i sumi[4];
#pragma GCC unroll 4
      for (int j = 0; j < 4; j++)
        sumi[j] = _mm256_madd_epi16(_mm256_maddubs_epi16(q[j], load32(a->qs + 32 * j)), sj[j]);
#pragma GCC unroll 4
      for (int j = 4; j < 8; j++) sumi[j - 4] = dot_us_scaled_acc(sumi[j - 4], q[j], load32(a->qs + 32 * j), sj[j]);
      const __m256i st = _mm256_add_epi32(_mm256_add_epi32(sumi[0], sumi[1]), _mm256_add_epi32(sumi[2], sumi[3]));
      acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d * a->d), _mm256_cvtepi32_ps(st), acc[c]);
      const __m128i pairs = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a->bsums)),
                                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(a->bsums + 8)));
      accm[c] = _mm_fmadd_ps(_mm_set1_ps(dmin * a->d), _mm_cvtepi32_ps(_mm_madd_epi16(mn16, pairs)), accm[c]);
    }
  }
  for (int c = 0; c < NC; c++) {
    __m128 m = accm[c];
    m = _mm_add_ps(m, _mm_movehl_ps(m, m));
    m = _mm_add_ss(m, _mm_movehdup_ps(m));
    out[c] = hsum256(acc[c]) - _mm_cvtss_f32(m);
  }
}

template <bool Q5>
void dot_q45_k_n(int64_t n, const void* w, const void* act, size_t stride, int nc, float* out) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* a = static_cast<const uint8_t*>(act);
  const int64_t nb = n / 256;
  while (nc > 0) {
    switch (nc) {
      case 1: dot_q45_k<Q5, 1>(nb, x, a, stride, out); return;
      case 2: dot_q45_k<Q5, 2>(nb, x, a, stride, out); return;
      case 3: dot_q45_k<Q5, 3>(nb, x, a, stride, out); return;
      default:
        dot_q45_k<Q5, 4>(nb, x, a, stride, out);
        nc -= 4;
        a += 4 * stride;
        out += 4;
    }
  }
}

float dot_q6_k_1(int64_t nb, const uint8_t* x, const BlockQ8K* a) {
  __m256 acc = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i m30 = _mm256_set1_epi8(0x30);
  for (int64_t i = 0; i < nb; i++, x += 210, a++) {
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 192)));
    const PairScales ps(sc16);
    __m256i sumi0 = _mm256_setzero_si256(), sumi1 = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
      const __m256i l0 = load32(x + 64 * h);
      const __m256i l1 = load32(x + 64 * h + 32);
      const __m256i qh = load32(x + 128 + 32 * h);
      const __m256i u0 = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
      const __m256i u1 = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
      const __m256i u2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(qh, m30));
      const __m256i u3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                         _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
      const int8_t* aq = a->qs + 128 * h;
      sumi0 = dot_us_scaled_acc(sumi0, u0, load32(aq), ps.get(4 * h + 0));
      sumi1 = dot_us_scaled_acc(sumi1, u1, load32(aq + 32), ps.get(4 * h + 1));
      sumi0 = dot_us_scaled_acc(sumi0, u2, load32(aq + 64), ps.get(4 * h + 2));
      sumi1 = dot_us_scaled_acc(sumi1, u3, load32(aq + 96), ps.get(4 * h + 3));
    }
    const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(sc16, load32(a->bsums)), 5);
    const __m256i sumi = _mm256_sub_epi32(_mm256_add_epi32(sumi0, sumi1), off);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x + 208) * a->d), _mm256_cvtepi32_ps(sumi), acc);
  }
  return hsum256(acc);
}

template <float (*F)(int64_t, const uint8_t*, const BlockQ8K*)>
void dot_k_n(int64_t n, const void* w, const void* act, size_t stride, int nc, float* out) {
  for (int c = 0; c < nc; c++)
    out[c] = F(n / 256, static_cast<const uint8_t*>(w),
               reinterpret_cast<const BlockQ8K*>(static_cast<const uint8_t*>(act) + c * stride));
}

// ---- float weights against f32 activations ----


// Kind 0: f32, 1: f16, 2: bf16.
template <int Kind>
inline float wscalar(const void* w, int64_t i) {
  if (Kind == 0) return static_cast<const float*>(w)[i];
  uint16_t h;
  std::memcpy(&h, static_cast<const uint8_t*>(w) + 2 * i, 2);
  if (Kind == 1) return _cvtsh_ss(h);
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

#if MQ_AVX512
template <int Kind>
inline __m512 wload(const void* w, int64_t i) {
  if (Kind == 0) return _mm512_loadu_ps(static_cast<const float*>(w) + i);
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(w) + i));
  if (Kind == 1) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
constexpr int kVW = 16;
#define MQ_FVEC __m512
#define MQ_FZERO _mm512_setzero_ps()
#define MQ_FLOAD(p) _mm512_loadu_ps(p)
#define MQ_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define MQ_FADD(a, b) _mm512_add_ps(a, b)
#define MQ_FHSUM(v) _mm512_reduce_add_ps(v)
#else
template <int Kind>
inline __m256 wload(const void* w, int64_t i) {
  if (Kind == 0) return _mm256_loadu_ps(static_cast<const float*>(w) + i);
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(w) + i));
  if (Kind == 1) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
constexpr int kVW = 8;
#define MQ_FVEC __m256
#define MQ_FZERO _mm256_setzero_ps()
#define MQ_FLOAD(p) _mm256_loadu_ps(p)
#define MQ_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define MQ_FADD(a, b) _mm256_add_ps(a, b)
#define MQ_FHSUM(v) hsum256(v)
#endif

template <int Kind, int NC>
void dot_float(int64_t n, const void* w, const uint8_t* act, size_t stride, float* out) {
  const float* a[NC];
  for (int c = 0; c < NC; c++) a[c] = reinterpret_cast<const float*>(act + c * stride);
  MQ_FVEC acc0[NC], acc1[NC];
  for (int c = 0; c < NC; c++) acc0[c] = acc1[c] = MQ_FZERO;
  int64_t i = 0;
  for (; i + 2 * kVW <= n; i += 2 * kVW) {
    const MQ_FVEC w0 = wload<Kind>(w, i);
    const MQ_FVEC w1 = wload<Kind>(w, i + kVW);
    for (int c = 0; c < NC; c++) {
      acc0[c] = MQ_FMA(w0, MQ_FLOAD(a[c] + i), acc0[c]);
      acc1[c] = MQ_FMA(w1, MQ_FLOAD(a[c] + i + kVW), acc1[c]);
    }
  }
  for (; i + kVW <= n; i += kVW) {
    const MQ_FVEC w0 = wload<Kind>(w, i);
    for (int c = 0; c < NC; c++) acc0[c] = MQ_FMA(w0, MQ_FLOAD(a[c] + i), acc0[c]);
  }
  for (int c = 0; c < NC; c++) {
    float s = MQ_FHSUM(MQ_FADD(acc0[c], acc1[c]));
    for (int64_t j = i; j < n; j++) s += wscalar<Kind>(w, j) * a[c][j];
    out[c] = s;
  }
}

template <int Kind>
void dot_float_n(int64_t n, const void* w, const void* act, size_t stride, int nc, float* out) {
  const auto* a = static_cast<const uint8_t*>(act);
  while (nc > 0) {
    switch (nc) {
      case 1: dot_float<Kind, 1>(n, w, a, stride, out); return;
      case 2: dot_float<Kind, 2>(n, w, a, stride, out); return;
      case 3: dot_float<Kind, 3>(n, w, a, stride, out); return;
      default:
        dot_float<Kind, 4>(n, w, a, stride, out);
        nc -= 4;
        a += 4 * stride;
        out += 4;
    }
  }
}

}  // namespace

// ---- exported entry points ----

void MQ_NAME(vec_dot_f32_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) { dot_float_n<0>(n, w, a, st, nc, o); }
void MQ_NAME(vec_dot_f16_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) { dot_float_n<1>(n, w, a, st, nc, o); }
void MQ_NAME(vec_dot_bf16_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) { dot_float_n<2>(n, w, a, st, nc, o); }
void MQ_NAME(vec_dot_q4_0_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) { dot_legacy_n<DecQ4_0>(n, w, a, st, nc, o); }
void MQ_NAME(vec_dot_q4_1_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) { dot_legacy_n<DecQ4_1>(n, w, a, st, nc, o); }
void MQ_NAME(vec_dot_q5_0_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) { dot_legacy_n<DecQ5_0>(n, w, a, st, nc, o); }
void MQ_NAME(vec_dot_q5_1_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) { dot_legacy_n<DecQ5_1>(n, w, a, st, nc, o); }
void MQ_NAME(vec_dot_q8_0_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) { dot_legacy_n<DecQ8_0>(n, w, a, st, nc, o); }
void MQ_NAME(vec_dot_q2_k_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) { dot_k_n<dot_q2_k_1>(n, w, a, st, nc, o); }
void MQ_NAME(vec_dot_q3_k_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) { dot_k_n<dot_q3_k_1>(n, w, a, st, nc, o); }
void MQ_NAME(vec_dot_q4_k_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) { dot_q45_k_n<false>(n, w, a, st, nc, o); }
void MQ_NAME(vec_dot_q5_k_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) { dot_q45_k_n<true>(n, w, a, st, nc, o); }
void MQ_NAME(vec_dot_q6_k_)(int64_t n, const void* w, const void* a, size_t st, int nc, float* o) { dot_k_n<dot_q6_k_1>(n, w, a, st, nc, o); }

void MQ_NAME(quantize_q8a_)(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<minfer::cpu::q::BlockQ8A*>(dst);
  for (int64_t i = 0; i < n / 32; i++, x += 32) {
    const float d = absmax(x, 32) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const int sum = hsum256i(quant32(x, _mm256_set1_ps(id), y[i].qs));
    y[i].d = act_scale_f16(d);
    y[i].s = y[i].d * static_cast<float>(sum);
  }
}

void MQ_NAME(quantize_q8k_)(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8K*>(dst);
  for (int64_t i = 0; i < n / 256; i++, x += 256) {
    const float d = absmax(x, 256) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const __m256 vid = _mm256_set1_ps(id);
    for (int g = 0; g < 8; g++) {
      quant32(x + 32 * g, vid, y[i].qs + 32 * g);
      const __m256i q = load32(y[i].qs + 32 * g);
      // bytes 0..15 → lanes 0..3, bytes 16..31 → lanes 4..7 (maddubs with unsigned ones).
      const __m256i s4 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q), _mm256_set1_epi16(1));
      const __m256i t = _mm256_hadd_epi32(s4, s4);
      const __m256i u = _mm256_hadd_epi32(t, t);
      y[i].bsums[2 * g] = static_cast<int16_t>(_mm256_extract_epi32(u, 0));
      y[i].bsums[2 * g + 1] = static_cast<int16_t>(_mm256_extract_epi32(u, 4));
    }
    y[i].d = d;
  }
}

#undef MQ_FVEC
#undef MQ_FZERO
#undef MQ_FLOAD
#undef MQ_FMA
#undef MQ_FADD
#undef MQ_FHSUM
