// Helpers shared by the x86 i-quant / ternary / MXFP4 vec_dot headers (quants_iq4_x86.h,
// quants_iq23_x86.h, quants_iq1t_x86.h). Include inside namespace minfer::cpu::q, after
// <immintrin.h>, <cstdint> and <cstring>; each translation unit includes it once, through one of
// those headers.
#ifndef MINFER_CPU_QUANTS_X86_UTIL_H
#define MINFER_CPU_QUANTS_X86_UTIL_H

namespace {

// Unaligned little-endian loads from block bytes.
inline float ldf(const uint8_t* p) {
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

inline uint16_t ld16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

inline uint32_t ld32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline uint64_t ld64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

inline __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// The sum of eight int32 lanes.
inline int hsum8(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// A column count as a type, so a kernel's column loop is unrolled for it.
template <int N>
struct Cols {
  static constexpr int value = N;
};

// Calls run(Cols<nc>{}) for 1 ≤ nc ≤ 4 (larger counts: 4; the callers pass at most kMaxCols = 4).
template <class Run>
inline void for_columns(int nc, Run&& run) {
  switch (nc) {
    case 1: run(Cols<1>{}); break;
    case 2: run(Cols<2>{}); break;
    case 3: run(Cols<3>{}); break;
    default: run(Cols<4>{}); break;
  }
}

}  // namespace

#endif  // MINFER_CPU_QUANTS_X86_UTIL_H
