// The grid i-quants IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M (block layouts:
// ggml-common.h; packages/gguf/src/quant/iq1.ts, iq2.ts, iq3.ts): dequantizers and scalar dot
// products against Q8_K activations.
//
// Every type here is the same thing underneath: a 256-element block is one f16 scale d, sixteen
// small odd integers ls (one per 16 elements; 2s + 1 for a stored scale field s) and 256 small
// signed integers v (grid magnitudes with their signs), with
//     w[j] = d · ls[j/16] · v[j] · F
// for a per-type power of two F (1/8 for IQ2_*, 1/4 for IQ3_XXS, 1 for IQ3_S). IQ1_S/IQ1_M
// add a ±1/8 offset to grid values in {−1, 0, 1}; v = 8·grid ± 1 keeps them integers with F = 1/8.
// A decoder (decode_<type>) unpacks one block into that form once; the dot product then takes
// Σ_g ls[g] · Σ_{16 elements} v·a in integers per block and column and scales it by d · a.d in
// float (F applied once at the end), which is the integer sum ggml's ggml_vec_dot_<type>_q8_K
// forms. IQ1's offset term, which ggml sums separately through the activation's sums, is folded
// into v here (the integer total, 8·Σ ls·grid·a + Σ ls·δ·a, is the same).
//
// Dequantization computes (d · float(ls·v)) · F. ggml (and the TypeScript reference) instead
// rounds d·(s + ½) · ¼ (or d·(2s + 1)) to f32 and multiplies by the grid value; both end at the
// exact product d·ls·v·F, because every factor is short: d has 11 significant bits, ls ≤ 31 five,
// |v| ≤ 62 six (ls·v ≤ 1922 is exact in f32), so the product needs at most 22 bits and no f32
// rounding happens on either path (a power-of-two F is exact away from the f32 subnormals, which
// an f16 d cannot reach). Signs follow too: each path gives sign(d)·sign(v), zeros included.
//
// Indices: each grid index is built from masked bit fields whose widths match the table's size
// (static_asserts below), so no block bytes can index outside a table.
//
// Baseline file (no ISA flags); contraction off as in quants.cpp so results do not depend on the
// compiler's fma choices.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cstring>

#if defined(__aarch64__)
#include <arm_neon.h>
#endif

#include "../common/fp16.h"
#include "../common/iq_grids.h"
#include "quants_internal.h"

namespace minfer::cpu::q {

namespace {

using namespace minfer::quant;

template <typename T, size_t N>
constexpr size_t entries(const T (&)[N]) {
  return N;
}
static_assert(entries(ksigns_iq2xs) == 128, "sign index: 7 bits");
static_assert(entries(iq2xxs_grid) == 256, "IQ2_XXS index: 8 bits");
static_assert(entries(iq2xs_grid) == 512, "IQ2_XS index: 9 bits");
static_assert(entries(iq2s_grid) == 1024, "IQ2_S index: 10 bits");
static_assert(entries(iq3xxs_grid) == 256, "IQ3_XXS index: 8 bits");
static_assert(entries(iq3s_grid) == 512, "IQ3_S index: 9 bits");
static_assert(entries(iq1s_grid) == 2048, "IQ1_S/IQ1_M index: 11 bits");
static_assert(kIq1sDelta == 0.125f && kIq1mDelta == 0.125f, "IQ1 offsets are folded into v as ±1 of 8");

// Eight magnitudes of an 8-byte grid entry, negated where the sign byte's bit j is set.
inline void put8(int8_t* v, uint64_t entry, unsigned signs) {
  for (int j = 0; j < 8; j++) {
    const int m = static_cast<int>((entry >> (8 * j)) & 0xff);
    v[j] = static_cast<int8_t>((signs >> j) & 1 ? -m : m);
  }
}
// Four magnitudes of a 4-byte grid entry, signed by bits 0..3 of `signs`.
inline void put4(int8_t* v, uint32_t entry, unsigned signs) {
  for (int j = 0; j < 4; j++) {
    const int m = static_cast<int>((entry >> (8 * j)) & 0xff);
    v[j] = static_cast<int8_t>((signs >> j) & 1 ? -m : m);
  }
}
// An IQ1 row: grid values in {−1, 0, 1} (bytes 0xff, 0x00, 0x01) as 8·g + delta, delta = ±1.
inline void put_iq1(int8_t* v, uint64_t entry, int delta) {
  for (int j = 0; j < 8; j++) {
    const int g = static_cast<int8_t>((entry >> (8 * j)) & 0xff);
    v[j] = static_cast<int8_t>(8 * g + delta);
  }
}

// ---- block decoders: v[256], ls[16] (per 16 elements), returning d ----

// IQ2_XXS (66 bytes): f16 d @0; group g's 8 bytes @2 + 8g: four 8-bit grid indices, then a u32
// with four 7-bit sign indices (bits 7l..7l+6) and the 4-bit scale (bits 28..31).
constexpr int kIq2xxsBytes = 66;
constexpr float kIq2xxsF = 0.125f;
float decode_iq2_xxs(const uint8_t* x, int8_t* v, int* ls) {
  for (int g = 0; g < 8; g++) {
    const uint8_t* q = x + 2 + 8 * g;
    const uint32_t aux = rd32(q + 4);
    ls[2 * g] = ls[2 * g + 1] = 2 * static_cast<int>(aux >> 28) + 1;
    for (int l = 0; l < 4; l++)
      put8(v + 32 * g + 8 * l, iq2xxs_grid[q[l]], ksigns_iq2xs[(aux >> (7 * l)) & 127]);
  }
  return f16_at(x);
}

// IQ2_XS (74 bytes): f16 d @0; u16 qs[32] @2 (bits 0..8 grid index, 9..15 sign index);
// u8 scales[8] @66 (low nibble: rows 0-1 of group g, high nibble: rows 2-3).
constexpr int kIq2xsBytes = 74;
constexpr float kIq2xsF = 0.125f;
float decode_iq2_xs(const uint8_t* x, int8_t* v, int* ls) {
  for (int g = 0; g < 8; g++) {
    const int sc = x[66 + g];
    ls[2 * g] = 2 * (sc & 15) + 1;
    ls[2 * g + 1] = 2 * (sc >> 4) + 1;
    for (int l = 0; l < 4; l++) {
      const unsigned qs = rd16(x + 2 + 2 * (4 * g + l));
      put8(v + 32 * g + 8 * l, iq2xs_grid[qs & 511], ksigns_iq2xs[(qs >> 9) & 127]);
    }
  }
  return f16_at(x);
}

// IQ2_S (82 bytes): f16 d @0; u8 qs[32] @2 (grid index bits 0..7 of row r); u8 signs[32] @34
// (row r's 8 explicit signs); u8 qh[8] @66 (bits 2l..2l+1 of qh[g]: index bits 8..9 of row l of
// group g); u8 scales[8] @74 as IQ2_XS.
constexpr int kIq2sBytes = 82;
constexpr float kIq2sF = 0.125f;
float decode_iq2_s(const uint8_t* x, int8_t* v, int* ls) {
  for (int g = 0; g < 8; g++) {
    const int sc = x[74 + g];
    ls[2 * g] = 2 * (sc & 15) + 1;
    ls[2 * g + 1] = 2 * (sc >> 4) + 1;
    const unsigned qh = x[66 + g];
    for (int l = 0; l < 4; l++) {
      const int r = 4 * g + l;
      const unsigned index = x[2 + r] | (((qh >> (2 * l)) & 3) << 8);
      put8(v + 8 * r, iq2s_grid[index & 1023], x[34 + r]);
    }
  }
  return f16_at(x);
}

// IQ3_XXS (98 bytes): f16 d @0; u8 qs[64] @2 (two 8-bit indices of 4-entry grid rows per 8
// elements); u32 @66 + 4g: group g's four 7-bit sign indices (bits 7l..) and scale (bits 28..31).
constexpr int kIq3xxsBytes = 98;
constexpr float kIq3xxsF = 0.25f;
float decode_iq3_xxs(const uint8_t* x, int8_t* v, int* ls) {
  for (int g = 0; g < 8; g++) {
    const uint32_t aux = rd32(x + 66 + 4 * g);
    ls[2 * g] = ls[2 * g + 1] = 2 * static_cast<int>(aux >> 28) + 1;
    for (int l = 0; l < 4; l++) {
      const uint8_t* q = x + 2 + 8 * g + 2 * l;
      const unsigned signs = ksigns_iq2xs[(aux >> (7 * l)) & 127];
      int8_t* y = v + 32 * g + 8 * l;
      put4(y, iq3xxs_grid[q[0]], signs);
      put4(y + 4, iq3xxs_grid[q[1]], signs >> 4);
    }
  }
  return f16_at(x);
}

// IQ3_S (110 bytes): f16 d @0; u8 qs[64] @2; u8 qh[8] @66 (bit k of qh[g]: index bit 8 of group
// g's k-th entry); u8 signs[32] @74 (row r's 8 signs); u8 scales[4] @106 (nibble g&1 of byte g/2).
constexpr int kIq3sBytes = 110;
constexpr float kIq3sF = 1.0f;
float decode_iq3_s(const uint8_t* x, int8_t* v, int* ls) {
  for (int g = 0; g < 8; g++) {
    ls[2 * g] = ls[2 * g + 1] = 2 * ((x[106 + (g >> 1)] >> (4 * (g & 1))) & 15) + 1;
    const unsigned qh = x[66 + g];
    for (int l = 0; l < 4; l++) {
      const int k = 2 * l;
      const unsigned first = x[2 + 8 * g + k] | (((qh >> k) & 1) << 8);
      const unsigned second = x[2 + 8 * g + k + 1] | (((qh >> (k + 1)) & 1) << 8);
      const unsigned signs = x[74 + 4 * g + l];
      int8_t* y = v + 32 * g + 8 * l;
      put4(y, iq3s_grid[first & 511], signs);
      put4(y + 4, iq3s_grid[second & 511], signs >> 4);
    }
  }
  return f16_at(x);
}

// IQ1_S (50 bytes): f16 d @0; u8 qs[32] @2 (index bits 0..7 of row 4g + l); u16 qh[8] @34: bits
// 3l..3l+2 index bits 8..10 of row l, bits 12..14 the 3-bit scale, bit 15 the offset's sign.
constexpr int kIq1sBytes = 50;
constexpr float kIq1sF = 0.125f;
float decode_iq1_s(const uint8_t* x, int8_t* v, int* ls) {
  for (int g = 0; g < 8; g++) {
    const unsigned qh = rd16(x + 34 + 2 * g);
    ls[2 * g] = ls[2 * g + 1] = 2 * static_cast<int>((qh >> 12) & 7) + 1;
    const int delta = (qh & 0x8000) ? -1 : 1;
    for (int l = 0; l < 4; l++) {
      const unsigned index = x[2 + 4 * g + l] | (((qh >> (3 * l)) & 7) << 8);
      put_iq1(v + 32 * g + 8 * l, iq1s_grid[index & 2047], delta);
    }
  }
  return f16_at(x);
}

// IQ1_M (56 bytes): u8 qs[32] @0; u8 qh[16] @32 (nibble l&1 of qh[2g + l/2]: bits 0..2 index bits
// 8..10 of row l, bit 3 its offset's sign); u16 scales[4] @48: 3-bit scales of rows 0-1 / 2-3 of
// group g at bits 6(g&1) / 6(g&1) + 3 of scales[g/2]; the top nibbles of the four words, lowest
// word first, are the f16 d.
constexpr int kIq1mBytes = 56;
constexpr float kIq1mF = 0.125f;
float decode_iq1_m(const uint8_t* x, int8_t* v, int* ls) {
  unsigned dbits = 0;
  for (int k = 0; k < 4; k++) dbits |= static_cast<unsigned>(rd16(x + 48 + 2 * k) >> 12) << (4 * k);
  for (int g = 0; g < 8; g++) {
    const unsigned sc = rd16(x + 48 + 2 * (g >> 1));
    const int shift = 6 * (g & 1);
    ls[2 * g] = 2 * static_cast<int>((sc >> shift) & 7) + 1;
    ls[2 * g + 1] = 2 * static_cast<int>((sc >> (shift + 3)) & 7) + 1;
    for (int l = 0; l < 4; l++) {
      const unsigned nib = (x[32 + 2 * g + (l >> 1)] >> (4 * (l & 1))) & 15;
      const unsigned index = x[4 * g + l] | ((nib & 7) << 8);
      put_iq1(v + 32 * g + 8 * l, iq1s_grid[index & 2047], (nib & 8) ? -1 : 1);
    }
  }
  return fp16_to_f32(static_cast<uint16_t>(dbits));
}

using DecodeFn = float (*)(const uint8_t* x, int8_t* v, int* ls);

// nb blocks → f32: y = (d · float(ls·v)) · F (exact; see the top of the file).
template <DecodeFn decode, int bytes>
void deq_blocks(float f, const uint8_t* s, float* y, int64_t nb) {
  int8_t v[256];
  int ls[16];
  for (int64_t i = 0; i < nb; i++, s += bytes, y += 256) {
    const float d = decode(s, v, ls);
    for (int j = 0; j < 256; j++) y[j] = (d * static_cast<float>(ls[j >> 4] * v[j])) * f;
  }
}

// One block's integer sum against one column's codes: Σ_g ls[g]·Σ_{16 elements of g} v·a.
inline int block_sumi(const int8_t* v, const int8_t* aq, const int* ls) {
  int sumi = 0;
  for (int g = 0; g < 16; g++) {
    int is = 0;
    for (int j = 16 * g; j < 16 * g + 16; j++) is += v[j] * aq[j];
    sumi += ls[g] * is;
  }
  return sumi;
}

#if defined(__aarch64__)
// The same sum with NEON widening multiplies (baseline NEON, no dotprod): |v| ≤ 62 and |a| ≤ 127,
// so two products add up in an int16 lane (≤ 15748) before vpadalq widens them; integer sums in
// any order are the scalar's exactly.
inline int block_sumi_neon(const int8_t* v, const int8_t* aq, const int* ls) {
  int32x4_t acc = vdupq_n_s32(0);
  for (int g = 0; g < 16; g++) {
    const int8x16_t vv = vld1q_s8(v + 16 * g);
    const int8x16_t av = vld1q_s8(aq + 16 * g);
    int16x8_t p = vmull_s8(vget_low_s8(vv), vget_low_s8(av));
    p = vmlal_s8(p, vget_high_s8(vv), vget_high_s8(av));
    acc = vmlaq_n_s32(acc, vpaddlq_s16(p), ls[g]);
  }
  return vaddvq_s32(acc);
}
#endif

using SumiFn = int (*)(const int8_t* v, const int8_t* aq, const int* ls);

// The vec_dot contract (quants_internal.h) for any decoder: each block is decoded once and used
// for up to kMaxCols columns (more columns are taken kMaxCols at a time). Per block and column
// sumi = Σ_g ls[g]·Σ v·a over 16-element sub-blocks (|sumi| < 2^26, by `sum`), then
// acc += d·a.d·sumi; out = F·acc.
template <DecodeFn decode, int bytes, SumiFn sum>
void dot_blocks(float f, int64_t n, const void* w, const void* act, size_t act_stride, int nc,
                float* out) {
  const int64_t nb = n / 256;
  int8_t v[256];
  int ls[16];
  for (int c0 = 0; c0 < nc; c0 += kMaxCols) {
    const int ncols = nc - c0 < kMaxCols ? nc - c0 : kMaxCols;
    const BlockQ8K* a[kMaxCols];
    float acc[kMaxCols];
    for (int c = 0; c < ncols; c++) {
      a[c] = reinterpret_cast<const BlockQ8K*>(static_cast<const uint8_t*>(act) +
                                               static_cast<size_t>(c0 + c) * act_stride);
      acc[c] = 0.0f;
    }
    const auto* x = static_cast<const uint8_t*>(w);
    for (int64_t i = 0; i < nb; i++, x += bytes) {
      const float d = decode(x, v, ls);
      for (int c = 0; c < ncols; c++) {
        const int sumi = sum(v, a[c][i].qs, ls);
        acc[c] += (d * a[c][i].d) * static_cast<float>(sumi);
      }
    }
    for (int c = 0; c < ncols; c++) out[c0 + c] = f * acc[c];
  }
}

}  // namespace

#if defined(__aarch64__)
// The NEON kernels (neon_vec_dot in quants_neon.cpp lists them): the scalar decoder, NEON sums.
#define MINFER_IQ_NEON(name, BYTES, F)                                                           \
  void vec_dot_##name##_neon(int64_t n, const void* w, const void* act, size_t act_stride,      \
                             int nc, float* out) {                                               \
    dot_blocks<decode_##name, BYTES, block_sumi_neon>(F, n, w, act, act_stride, nc, out);        \
  }
#else
#define MINFER_IQ_NEON(name, BYTES, F)
#endif

#define MINFER_IQ_KERNELS(name, BYTES, F)                                                        \
  void deq_##name(const uint8_t* src, float* dst, int64_t nb) {                                 \
    deq_blocks<decode_##name, BYTES>(F, src, dst, nb);                                           \
  }                                                                                              \
  void vec_dot_##name##_scalar(int64_t n, const void* w, const void* act, size_t act_stride,    \
                               int nc, float* out) {                                             \
    dot_blocks<decode_##name, BYTES, block_sumi>(F, n, w, act, act_stride, nc, out);             \
  }                                                                                              \
  MINFER_IQ_NEON(name, BYTES, F)

MINFER_IQ_KERNELS(iq2_xxs, kIq2xxsBytes, kIq2xxsF)
MINFER_IQ_KERNELS(iq2_xs, kIq2xsBytes, kIq2xsF)
MINFER_IQ_KERNELS(iq2_s, kIq2sBytes, kIq2sF)
MINFER_IQ_KERNELS(iq3_xxs, kIq3xxsBytes, kIq3xxsF)
MINFER_IQ_KERNELS(iq3_s, kIq3sBytes, kIq3sF)
MINFER_IQ_KERNELS(iq1_s, kIq1sBytes, kIq1sF)
MINFER_IQ_KERNELS(iq1_m, kIq1mBytes, kIq1mF)
#undef MINFER_IQ_KERNELS
#undef MINFER_IQ_NEON

}  // namespace minfer::cpu::q
