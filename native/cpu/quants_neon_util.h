// Helpers shared by the NEON kernels (quants_neon.cpp, quants_k_neon.cpp, quants_iq_neon.cpp).
// AArch64 only; include inside namespace minfer::cpu::q after <arm_neon.h>.
#pragma once

// acc + the pairwise sums of a·b: a widening int8 multiply-accumulate that needs no dotprod
// extension (baseline ARMv8.0 NEON).
static inline int32x4_t dot_i8(int32x4_t acc, int8x16_t a, int8x16_t b) {
  const int16x8_t lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));
  const int16x8_t hi = vmull_s8(vget_high_s8(a), vget_high_s8(b));
  return vpadalq_s16(vpadalq_s16(acc, lo), hi);
}
