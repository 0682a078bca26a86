// Helpers shared by the AVX-512 panel GEMM files (gemm_avx512.cpp, gemm_k_avx512.cpp); include
// only from files compiled with AVX-512 flags, after <immintrin.h>.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

namespace minfer::cpu::q::gemm_util {

inline float h2f(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// 8×8 transpose of 32-bit words: r[i] word j → o[j] word i.
inline void transpose8(const __m256i* r, __m256i* o) {
  __m256i t[8], s[8];
  for (int i = 0; i < 4; i++) {
    t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int h = 0; h < 2; h++) {
    const __m256i* u = t + 4 * h;
    s[4 * h + 0] = _mm256_unpacklo_epi64(u[0], u[2]);
    s[4 * h + 1] = _mm256_unpackhi_epi64(u[0], u[2]);
    s[4 * h + 2] = _mm256_unpacklo_epi64(u[1], u[3]);
    s[4 * h + 3] = _mm256_unpackhi_epi64(u[1], u[3]);
  }
  for (int j = 0; j < 4; j++) {
    o[j] = _mm256_permute2x128_si256(s[j], s[4 + j], 0x20);
    o[j + 4] = _mm256_permute2x128_si256(s[j], s[4 + j], 0x31);
  }
}

// A per-thread, 64-byte aligned buffer of at least `bytes` (grown when needed, kept for reuse).
inline uint8_t* panel_buffer(size_t bytes) {
  static thread_local std::vector<uint8_t> buf;
  if (buf.size() < bytes + 64) buf.resize(bytes + 64);
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~static_cast<uintptr_t>(63));
}

}  // namespace minfer::cpu::q::gemm_util
