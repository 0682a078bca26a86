// Internal interface between quants*.cpp and matmul*.cpp: activation formats for integer dot
// products, and the vec_dot kernels of every weight type at every SIMD level.
//
// Activation formats (what the f32/f16 right-hand side of a matmul is converted to, per row):
//   ActF32  plain f32 (for F32, F16 and BF16 weights).
//   ActQ8A  blocks of 32 for the 32-element weight types (Q4_0 .. Q8_0):
//           { f32 d; f32 s = d * sum(qs); i8 qs[32] }, x ≈ d * q, q in -127..127, d held at
//           f16 precision as llama.cpp's q8_0 blocks hold it (act_scale_f16).
//           `s` lets offset/min terms (Q4_0's −8, Q4_1's m, …) be applied per block in float.
//   ActQ8K  blocks of 256 for the K-quants (ggml's block_q8_K layout, 292 bytes):
//           { f32 d; i8 qs[256]; i16 bsums[16] }, bsums[j] = sum of qs[16j .. 16j+15].
//
// vec_dot contract: out[c] = Σ_i w[i] · act_c[i] for c < nc (1 ≤ nc ≤ kMaxCols), where w is one
// weight row of n elements (n a whole number of weight blocks) and act_c = act + c*act_stride
// bytes holds the same row of activation column c in the weight type's activation format.
// Integer products are summed per block and scaled per block in float.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../common/fp16.h"
#include "../common/program_format.h"

namespace minfer::cpu {
// Declared in kernel.h; redeclared here so that ISA-specific files need not include kernel.h
// (its inline functions must not be compiled with AVX flags and merged into baseline code).
enum class SimdLevel : int;
}  // namespace minfer::cpu

namespace minfer::cpu::q {

// The activation block scale d at binary16 precision (nearest, ties to even), as a float; d ≥ 0
// and finite. llama.cpp stores q8_0/q8_1 activation scales as f16, so keeping d at that precision
// makes Q4_0/Q5_0/Q8_0 products agree with llama.cpp's to float rounding (an f32 d differs by up
// to 2^-11 relative per block). `static`: each ISA-specific file keeps its own copy.
static inline float act_scale_f16(float d) {
  if (!(d < 65520.0f)) return d;  // beyond f16's range (|x| ≥ 8.3e6): keep it, do not make it inf
  if (d < 6.103515625e-05f) {  // f16 subnormals are multiples of 2^-24 (d · 2^24 is exact)
    const float m = d * 16777216.0f;
    const float r = static_cast<float>(static_cast<int>(m));
    const float frac = m - r;
    const float up = (frac > 0.5f || (frac == 0.5f && (static_cast<int>(r) & 1))) ? r + 1.0f : r;
    return up / 16777216.0f;
  }
  uint32_t u;
  __builtin_memcpy(&u, &d, sizeof u);
  u += 0x0fffu + ((u >> 13) & 1u);  // round the low 13 mantissa bits, ties to even
  u &= ~0x1fffu;
  float r;
  __builtin_memcpy(&r, &u, sizeof r);
  return r;
}

constexpr int kMaxCols = 4;  // columns one vec_dot call handles (weights decoded once for all)

enum class ActFormat : int { F32 = 0, Q8A = 1, Q8K = 2 };

struct BlockQ8A {
  float d;
  float s;
  int8_t qs[32];
};
static_assert(sizeof(BlockQ8A) == 40, "BlockQ8A layout");

struct BlockQ8K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};
static_assert(sizeof(BlockQ8K) == 292, "BlockQ8K layout");

using VecDotFn = void (*)(int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                          float* out);
using ActQuantFn = void (*)(const float* x, void* dst, int64_t n);

// Per weight dtype: its block geometry, its activation format and its vec_dot at each level.
struct WeightTraits {
  bool supported;
  int block;      // elements per block
  int type_size;  // bytes per block
  ActFormat act;
  VecDotFn dot[3];  // indexed by SimdLevel Scalar / AVX2 / AVX512 (nullptr → fall back)
};

// Traits of `t` (supported == false for dtypes matmul cannot take as weights).
const WeightTraits& weight_traits(program::DType t);

// The vec_dot of `t` at `level` (falling back to lower levels), or nullptr when unsupported.
VecDotFn vec_dot_for(program::DType t, SimdLevel level);

// Bytes of one activation row of n elements in `fmt` (n a multiple of the format's block).
size_t act_row_bytes(ActFormat fmt, int64_t n);
// Element count granularity of an activation format (1, 32, 256).
int act_block(ActFormat fmt);
// Converts n f32 values into activation format `fmt` at `level`.
void quantize_act(ActFormat fmt, SimdLevel level, const float* x, void* dst, int64_t n);

// ---- scalar references (quants.cpp) ----
void quantize_q8a_scalar(const float* x, void* dst, int64_t n);
void quantize_q8k_scalar(const float* x, void* dst, int64_t n);

#define MINFER_DECLARE_DOTS(SUFFIX)                                                          \
  void vec_dot_f32_##SUFFIX(int64_t, const void*, const void*, size_t, int, float*);   \
  void vec_dot_f16_##SUFFIX(int64_t, const void*, const void*, size_t, int, float*);   \
  void vec_dot_bf16_##SUFFIX(int64_t, const void*, const void*, size_t, int, float*);  \
  void vec_dot_q4_0_##SUFFIX(int64_t, const void*, const void*, size_t, int, float*);  \
  void vec_dot_q4_1_##SUFFIX(int64_t, const void*, const void*, size_t, int, float*);  \
  void vec_dot_q5_0_##SUFFIX(int64_t, const void*, const void*, size_t, int, float*);  \
  void vec_dot_q5_1_##SUFFIX(int64_t, const void*, const void*, size_t, int, float*);  \
  void vec_dot_q8_0_##SUFFIX(int64_t, const void*, const void*, size_t, int, float*);  \
  void vec_dot_q2_k_##SUFFIX(int64_t, const void*, const void*, size_t, int, float*);  \
  void vec_dot_q3_k_##SUFFIX(int64_t, const void*, const void*, size_t, int, float*);  \
  void vec_dot_q4_k_##SUFFIX(int64_t, const void*, const void*, size_t, int, float*);  \
  void vec_dot_q5_k_##SUFFIX(int64_t, const void*, const void*, size_t, int, float*);  \
  void vec_dot_q6_k_##SUFFIX(int64_t, const void*, const void*, size_t, int, float*);  \
  void quantize_q8a_##SUFFIX(const float* x, void* dst, int64_t n);                         \
  void quantize_q8k_##SUFFIX(const float* x, void* dst, int64_t n);

MINFER_DECLARE_DOTS(scalar)
#if defined(__x86_64__) || defined(_M_X64)
MINFER_DECLARE_DOTS(avx2)
MINFER_DECLARE_DOTS(avx512)
#endif
#if defined(__aarch64__)
// NEON (quants_neon*.cpp): neon_vec_dot(t) is type t's NEON kernel, or nullptr where it has none
// (the scalar kernel runs); weight_traits(t).dot[1] holds it.
VecDotFn neon_vec_dot(program::DType t);
void vec_dot_f32_neon(int64_t, const void*, const void*, size_t, int, float*);
void vec_dot_f16_neon(int64_t, const void*, const void*, size_t, int, float*);
void vec_dot_q4_0_neon(int64_t, const void*, const void*, size_t, int, float*);
void vec_dot_q8_0_neon(int64_t, const void*, const void*, size_t, int, float*);
void quantize_q8a_neon(const float* x, void* dst, int64_t n);
#endif

// ---- the i-quants, ternary types and MXFP4 (scalar; IQ4_NL, IQ4_XS, MXFP4 also AVX2/AVX-512) ----
// quants_iq.cpp: IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M (Q8K activations).
// quants_iq4.cpp: IQ4_NL, MXFP4 (Q8A activations), IQ4_XS (Q8K).
// quants_ternary.cpp: TQ1_0, TQ2_0 (Q8K).
// deq_<type>(src, dst, nb): nb blocks at src as f32 (quants.h's dequantize_row dispatches to them).
#define MINFER_DECLARE_IQ(name)                                                                  \
  void vec_dot_##name##_scalar(int64_t, const void*, const void*, size_t, int, float*);       \
  void deq_##name(const uint8_t* src, float* dst, int64_t nb);
MINFER_DECLARE_IQ(iq2_xxs)
MINFER_DECLARE_IQ(iq2_xs)
MINFER_DECLARE_IQ(iq2_s)
MINFER_DECLARE_IQ(iq3_xxs)
MINFER_DECLARE_IQ(iq3_s)
MINFER_DECLARE_IQ(iq1_s)
MINFER_DECLARE_IQ(iq1_m)
MINFER_DECLARE_IQ(iq4_nl)
MINFER_DECLARE_IQ(iq4_xs)
MINFER_DECLARE_IQ(tq1_0)
MINFER_DECLARE_IQ(tq2_0)
MINFER_DECLARE_IQ(mxfp4)
#undef MINFER_DECLARE_IQ
#if defined(__x86_64__) || defined(_M_X64)
// quants_iq4_avx2.cpp / quants_iq4_avx512.cpp (code in quants_iq4_x86.h): bit-identical to the
// scalar kernels above.
#define MINFER_DECLARE_IQ4_X86(SUFFIX)                                                        \
  void vec_dot_iq4_nl_##SUFFIX(int64_t, const void*, const void*, size_t, int, float*);      \
  void vec_dot_iq4_xs_##SUFFIX(int64_t, const void*, const void*, size_t, int, float*);      \
  void vec_dot_mxfp4_##SUFFIX(int64_t, const void*, const void*, size_t, int, float*);
MINFER_DECLARE_IQ4_X86(avx2)
MINFER_DECLARE_IQ4_X86(avx512)
#undef MINFER_DECLARE_IQ4_X86
// quants_iq23_{avx2,avx512}.cpp (code in quants_iq23_x86.h): IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S.
// quants_iq1t_{avx2,avx512}.cpp (code in quants_iq1t_x86.h): IQ1_S, IQ1_M, TQ1_0, TQ2_0.
#define MINFER_DECLARE_DOT(name, SUFFIX) \
  void vec_dot_##name##_##SUFFIX(int64_t, const void*, const void*, size_t, int, float*);
#define MINFER_DECLARE_IQ_REST_X86(SUFFIX) \
  MINFER_DECLARE_DOT(iq2_xxs, SUFFIX)      \
  MINFER_DECLARE_DOT(iq2_xs, SUFFIX)       \
  MINFER_DECLARE_DOT(iq2_s, SUFFIX)        \
  MINFER_DECLARE_DOT(iq3_xxs, SUFFIX)      \
  MINFER_DECLARE_DOT(iq3_s, SUFFIX)        \
  MINFER_DECLARE_DOT(iq1_s, SUFFIX)        \
  MINFER_DECLARE_DOT(iq1_m, SUFFIX)        \
  MINFER_DECLARE_DOT(tq1_0, SUFFIX)        \
  MINFER_DECLARE_DOT(tq2_0, SUFFIX)
MINFER_DECLARE_IQ_REST_X86(avx2)
MINFER_DECLARE_IQ_REST_X86(avx512)
#undef MINFER_DECLARE_IQ_REST_X86
#undef MINFER_DECLARE_DOT
#endif

// ---- small helpers (static: each file keeps its own copy, compiled with its own flags) ----
static inline uint16_t rd16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
// The f16 field at p as a float.
static inline float f16_at(const uint8_t* p) { return fp16_to_f32(rd16(p)); }
// MXFP4: half the E8M0 scale 2^(e−127), i.e. 2^(e−128), built from its f32 bits (the doubled
// level table makes up the factor 2). e = 0, 1 give the subnormals 2^−128, 2^−127; e = 255 gives
// 2^127 (the OCP NaN code is not special-cased).
static inline float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
// IQ4_XS sub-block ib's 6-bit scale (stored with a +32 bias, returned without): low 4 bits from
// nibble ib mod 2 of scales_l[ib/2], top 2 bits from bits 2ib, 2ib+1 of scales_h.
static inline int iq4xs_scale(const uint8_t* x, int ib) {
  const int low = (x[4 + (ib >> 1)] >> (4 * (ib & 1))) & 0x0f;
  const int high = (rd16(x + 2) >> (2 * ib)) & 0x03;
  return (low | (high << 4)) - 32;
}
static inline uint32_t rd32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
// Q4_K/Q5_K packed 6-bit scale and min j (0..7) of the 12 bytes at q.
static inline void scale_min_k4(int j, const uint8_t* q, int* sc, int* mn) {
  if (j < 4) {
    *sc = q[j] & 63;
    *mn = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 15) | ((q[j - 4] >> 6) << 4);
    *mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}
// Q3_K's sixteen signed scales (bias removed) from the 12 bytes at q.
static inline void scales_q3k(const uint8_t* q, int8_t* s) {
  for (int i = 0; i < 16; i++) {
    const int low = i < 8 ? (q[i] & 15) : (q[i - 8] >> 4);
    const int high = (q[8 + (i % 4)] >> (2 * (i / 4))) & 3;
    s[i] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

}  // namespace minfer::cpu::q
