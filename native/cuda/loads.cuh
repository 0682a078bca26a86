// Global loads of quantized blocks whose start is only 2-byte aligned (Q4_0's 18-byte and Q8_0's
// 34-byte blocks, Q6_K's 210-byte super-blocks): 8-byte aligned loads of the words that hold the
// bytes, shifted into place, so that every thread of a warp runs the same loads whatever its
// block's alignment. The 8-byte word holding a buffer's last byte may reach past the buffer's end:
// device buffers carry 16 bytes of slack for it (device.cu alloc).
#pragma once
#include <cstdint>

namespace minfer::cuda {

// The M 8-byte words from the one holding p on, as 2·M 32-bit words v; the last is loaded only when
// the `bytes` bytes from p reach into it (else zero), so nothing past the 8-byte word holding their
// last byte is read. Returns p's offset in the first word.
template <int M>
__device__ inline int ld_words8(const uint8_t* p, int bytes, uint32_t (&v)[2 * M]) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uint2* base = reinterpret_cast<const uint2*>(a & ~static_cast<uintptr_t>(7));
  const int off = static_cast<int>(a & 7);
#pragma unroll
  for (int i = 0; i < M; i++) {
    uint2 x = make_uint2(0u, 0u);
    if (i < M - 1 || off + bytes > 8 * (M - 1)) x = __ldg(base + i);
    v[2 * i] = x.x;
    v[2 * i + 1] = x.y;
  }
  return off;
}

// The N 32-bit words of the 4·N bytes at p (2-byte aligned) through 8-byte aligned loads, shifted
// into place: ceil((4·N + 6) / 8) loads instead of 2·N 2-byte ones.
template <int N>
__device__ inline void ld_words2(const uint8_t* p, uint32_t (&w)[N]) {
  constexpr int M = (4 * N + 6 + 7) / 8;
  uint32_t v[2 * M];
  const int off = ld_words8<M>(p, 4 * N, v);
  const bool hi = off >= 4;
  const unsigned sh = static_cast<unsigned>(off & 3) * 8u;
#pragma unroll
  for (int k = 0; k < N; k++) w[k] = __funnelshift_r(hi ? v[k + 1] : v[k], hi ? v[k + 2] : v[k + 1], sh);
}

// A block of a 2-byte f16 scale followed by N 32-bit words of quants, at p (2-byte aligned), in two
// halves: ld_block2_raw issues the ceil((4·N + 8) / 8) 8-byte loads (Q4_0: N = 4, three loads;
// Q8_0: N = 8, five) and block2_words shifts their words into place. A kernel that prefetches
// issues the loads early and shifts where it uses the block, so that nothing waits on the loads
// in between (gemm_tc: the loads before a k-tile's MMAs, the shifts after them).
template <int N>
struct Block2Raw {
  static constexpr int kBytes = 2 + 4 * N;
  static constexpr int M = (kBytes + 6 + 7) / 8;  // covers any offset 0, 2, 4, 6 within the first word
  uint32_t v[2 * M];
  int off;  // p's offset in the first 8-byte word
};

template <int N>
__device__ inline void ld_block2_raw(const uint8_t* p, Block2Raw<N>& r) {
  r.off = ld_words8<Block2Raw<N>::M>(p, Block2Raw<N>::kBytes, r.v);
}

template <int N>
__device__ inline void block2_words(const Block2Raw<N>& r, uint32_t* d, uint32_t (&w)[N]) {
  // u: the words from p's 4-byte word on; the block starts `sh` bits into u[0] (0 or 16)
  constexpr int U = N + 1;
  static_assert(U + 1 <= 2 * Block2Raw<N>::M, "the words from the block's start fit the loads");
  uint32_t u[U];
  const bool hi = r.off >= 4;
#pragma unroll
  for (int i = 0; i < U; i++) u[i] = hi ? r.v[i + 1] : r.v[i];
  const unsigned sh = static_cast<unsigned>(r.off & 2) * 8u;
  *d = (u[0] >> sh) & 0xffffu;
  // quant word k: 16 + sh bits into u[k] (a shift of 32, clamped, is u[k + 1] itself)
#pragma unroll
  for (int k = 0; k < N; k++) w[k] = __funnelshift_rc(u[k], u[k + 1], 16u + sh);
}

}  // namespace minfer::cuda
