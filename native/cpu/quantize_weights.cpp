// Dispatch of the native weight quantizers (quantize_weights.h) and the legacy 32-value types
// Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0, ported from packages/gguf/src/quant/legacy.ts: every f32
// operation there (Math.fround) is one f32 operation here, every double operation a double one.
#include "quantize_weights.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "../common/fp16.h"
#include "quantize_weights_js.h"

namespace minfer::cpu::qw {

using program::DType;

bool quantize_layout(DType t, int32_t* block_size, int32_t* type_size) {
  switch (t) {
    case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::Q8_0:
    case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K:
    case DType::IQ4_NL: case DType::IQ4_XS:
      break;
    default:
      return false;
  }
  for (const auto& l : program::kBlockLayouts) {
    if (l.dtype == static_cast<int32_t>(t)) {
      *block_size = l.block_size;
      *type_size = l.type_size;
      return true;
    }
  }
  return false;
}

bool quantize_source(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

namespace {

/** Values per chunk decoded at a time: a whole number of blocks of every type. */
constexpr int64_t kChunk = 4096;

/**
 * Binary16 values → f32, exactly: each half's exponent and mantissa moved into an f32's place and
 * rebiased by a multiplication with 2^112 (exact for normal and subnormal halves); ±Infinity and
 * NaN keep their own exponent. Branch-free, so the compiler vectorizes it.
 */
void decode_f16(const uint8_t* src, int64_t n, float* out) {
  for (int64_t i = 0; i < n; i++) {
    uint16_t h = 0;
    std::memcpy(&h, src + 2 * i, 2);
    const uint32_t em = h & 0x7fffu;
    const uint32_t moved = em << 13;
    float f = 0;
    std::memcpy(&f, &moved, 4);
    f *= 0x1p112f;
    uint32_t u = 0;
    std::memcpy(&u, &f, 4);
    const uint32_t special = 0u - static_cast<uint32_t>(em >= 0x7c00u);  // all ones for ±Infinity, NaN
    u = (u & ~special) | ((0x7f800000u | moved) & special);
    u |= static_cast<uint32_t>(h & 0x8000u) << 16;
    std::memcpy(out + i, &u, 4);
  }
}

/** Decodes n values of src (F32, F16 or BF16 bytes, any alignment) into out, exactly. */
void decode(DType t, const uint8_t* src, int64_t n, float* out) {
  if (t == DType::F32) {
    std::memcpy(out, src, static_cast<size_t>(n) * 4);
  } else if (t == DType::F16) {
    decode_f16(src, n, out);
  } else {
    for (int64_t i = 0; i < n; i++) {
      uint16_t h = 0;
      std::memcpy(&h, src + 2 * i, 2);
      out[i] = bf16_to_f32(h);
    }
  }
}

/** Blocks [0, nb) of x, the first at element `first` of the rows; imp indexed by column. */
void quantize_blocks(DType t, const float* x, int64_t nb, int32_t bs, int32_t ts, int64_t first, int64_t row_len,
                     const float* imp, uint8_t* dst) {
  switch (t) {
    case DType::Q4_0: return quantize_q4_0(x, nb, dst);
    case DType::Q4_1: return quantize_q4_1(x, nb, dst);
    case DType::Q5_0: return quantize_q5_0(x, nb, dst);
    case DType::Q5_1: return quantize_q5_1(x, nb, dst);
    case DType::Q8_0: return quantize_q8_0(x, nb, dst);
    default: break;
  }
  for (int64_t i = 0; i < nb; i++) {
    const float* xb = x + i * bs;
    const float* ib = imp ? imp + (first + i * bs) % row_len : nullptr;
    uint8_t* out = dst + i * ts;
    switch (t) {
      case DType::Q2_K: quantize_q2_k(xb, ib, out); break;
      case DType::Q3_K: quantize_q3_k(xb, ib, out); break;
      case DType::Q4_K: quantize_q4_k(xb, ib, out); break;
      case DType::Q5_K: quantize_q5_k(xb, ib, out); break;
      case DType::Q6_K: quantize_q6_k(xb, ib, out); break;
      case DType::IQ4_NL: quantize_iq4_nl(xb, ib, out); break;
      case DType::IQ4_XS: quantize_iq4_xs(xb, ib, out); break;
      default: return;
    }
  }
}

}  // namespace

void quantize_rows(DType t, DType src_type, const void* src, int64_t n, int64_t row_len, const float* imp,
                   uint8_t* dst) {
  int32_t bs = 0, ts = 0;
  if (!quantize_layout(t, &bs, &ts) || !quantize_source(src_type) || n <= 0) return;
  const int64_t esize = src_type == DType::F32 ? 4 : 2;
  const auto* bytes = static_cast<const uint8_t*>(src);
  std::vector<float> buf(static_cast<size_t>(std::min(n, kChunk)));
  for (int64_t first = 0; first < n; first += kChunk) {
    const int64_t m = std::min(kChunk, n - first);
    decode(src_type, bytes + first * esize, m, buf.data());
    quantize_blocks(t, buf.data(), m / bs, bs, ts, first, row_len, imp, dst + first / bs * ts);
  }
}

// ---- legacy ------------------------------------------------------------------------------------
//
// Each type has a fast path for blocks whose values and inverse scale are finite: then every
// intermediate is small and the float operations of the TypeScript (Math.fround of a product or
// sum of two f32 values) are single f32 operations, without the checks NaN and ±Infinity need.

namespace {

/** Whether x[0..32) holds only finite values (checked on the bits: no sum to round). */
bool finite32(const float* x) {
  uint32_t bad = 0;
  for (int j = 0; j < 32; j++) {
    uint32_t u = 0;
    std::memcpy(&u, x + j, 4);
    bad |= static_cast<uint32_t>((u & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

/** The first element of x[0..32) with the largest |x|, keeping its sign (signedAbsMax). */
double signed_abs_max(const float* x, bool finite) {
  if (finite) {  // the largest magnitude (branch-free), then the first element that has it
    float amax = 0;
    for (int j = 0; j < 32; j++) amax = std::fabs(x[j]) > amax ? std::fabs(x[j]) : amax;
    if (amax == 0) return 0;
    for (int j = 0; j < 32; j++) {
      if (std::fabs(x[j]) == amax) return x[j];
    }
  }
  double amax = 0;
  double max = 0;
  for (int j = 0; j < 32; j++) {
    const double v = x[j];
    if (amax < std::fabs(v)) {
      amax = std::fabs(v);
      max = v;
    }
  }
  return max;
}

/** The code Math.min(top, Math.trunc(v)) as an int32, the way `|` and `<<` read it. */
inline uint32_t code(double top, double v) {
  if (v >= top) return static_cast<uint32_t>(top);  // top is an integer: trunc(v) ≥ top
  if (v > -2147483648.0) return static_cast<uint32_t>(static_cast<int32_t>(v));  // false for NaN
  return static_cast<uint32_t>(to_int32(js_min(top, std::trunc(v))));
}

/** Math.fround(1 / d), or 0 for d = 0. */
inline double inverse(double d) { return d != 0 ? fr(1 / d) : 0; }

/** min and max of x[0..32), NaNs skipped (±Infinity when all are NaN). */
void min_max(const float* x, double* lo, double* hi) {
  float mn = std::numeric_limits<float>::infinity(), mx = -mn;
  for (int j = 0; j < 32; j++) {  // selects, not branches: the compiler vectorizes it
    mn = x[j] < mn ? x[j] : mn;
    mx = x[j] > mx ? x[j] : mx;
  }
  *lo = mn;
  *hi = mx;
}

/**
 * Codes min(top, ⌊(x[j] − sub)·id + add⌋) of x[0..32) in f32 steps (Math.fround after each
 * operation, as the TypeScript); `sub` = 0 for the symmetric types. Finite values and id.
 */
void codes_fast(const float* x, float sub, float id, float add, int top, int32_t* q) {
  for (int j = 0; j < 32; j++) {
    const float t = (x[j] - sub) * id + add;  // ≥ 0 up to a rounding: truncation is Math.trunc here
    const int32_t c = static_cast<int32_t>(t);
    q[j] = c < top ? c : top;
  }
}

/** codes_fast, or the general path (any value, any scale) of the symmetric types. */
void codes_sym(const float* x, bool finite, double id, double add, int top, int32_t* q) {
  if (finite && std::isfinite(id)) return codes_fast(x, 0, static_cast<float>(id), static_cast<float>(add), top, q);
  for (int j = 0; j < 32; j++) q[j] = static_cast<int32_t>(code(top, fr(fr(x[j] * id) + add)));
}

/** codes_fast, or the general path of the types with a minimum. */
void codes_min(const float* x, bool finite, double min, double id, int top, int32_t* q) {
  if (finite && std::isfinite(id)) {
    return codes_fast(x, static_cast<float>(min), static_cast<float>(id), 0.5f, top, q);
  }
  for (int j = 0; j < 32; j++) q[j] = static_cast<int32_t>(code(top, fr(fr(fr(x[j] - min) * id) + 0.5)));
}

/** The 4-bit packing: element j low nibble, j + 16 high nibble of byte j. */
void pack4(const int32_t* q, uint8_t* dst) {
  for (int j = 0; j < 16; j++) dst[j] = static_cast<uint8_t>((q[j] & 15) | ((q[j + 16] & 15) << 4));
}

/** Bit 4 of each code, element k at bit k (as the TypeScript's int32 `>>` and `<<` give). */
uint32_t high_bits(const int32_t* q) {
  uint32_t qh = 0;
  for (int j = 0; j < 32; j++) qh |= static_cast<uint32_t>(q[j] >> 4) << j;
  return qh;
}

}  // namespace

// Q4_0: d = (signed abs-max)/−8, q = min(15, ⌊x/d + 8.5⌋).
void quantize_q4_0(const float* x, int64_t nb, uint8_t* dst) {
  int32_t q[32];
  for (int64_t i = 0; i < nb; i++, x += 32, dst += 18) {
    const bool finite = finite32(x);
    const double d = fr(signed_abs_max(x, finite) / -8);
    put_u16(dst, f16_bits(d));
    codes_sym(x, finite, inverse(d), 8.5, 15, q);
    pack4(q, dst + 2);
  }
}

// Q4_1: d = (max − min)/15, m = min, q = min(15, ⌊(x − min)/d + 0.5⌋).
void quantize_q4_1(const float* x, int64_t nb, uint8_t* dst) {
  int32_t q[32];
  for (int64_t i = 0; i < nb; i++, x += 32, dst += 20) {
    double min = 0, max = 0;
    min_max(x, &min, &max);
    const double d = fr(fr(max - min) / 15);
    put_u16(dst, f16_bits(d));
    put_u16(dst + 2, f16_bits(min));
    codes_min(x, finite32(x), min, inverse(d), 15, q);
    pack4(q, dst + 4);
  }
}

// Q5_0: d = (signed abs-max)/−16, q = min(31, ⌊x/d + 16.5⌋), bit 4 of q in qh.
void quantize_q5_0(const float* x, int64_t nb, uint8_t* dst) {
  int32_t q[32];
  for (int64_t i = 0; i < nb; i++, x += 32, dst += 22) {
    const bool finite = finite32(x);
    const double d = fr(signed_abs_max(x, finite) / -16);
    put_u16(dst, f16_bits(d));
    codes_sym(x, finite, inverse(d), 16.5, 31, q);
    put_u32(dst + 2, high_bits(q));
    pack4(q, dst + 6);
  }
}

// Q5_1: d = (max − min)/31, m = min, q = min(31, ⌊(x − min)/d + 0.5⌋).
void quantize_q5_1(const float* x, int64_t nb, uint8_t* dst) {
  int32_t q[32];
  for (int64_t i = 0; i < nb; i++, x += 32, dst += 24) {
    double min = 0, max = 0;
    min_max(x, &min, &max);
    const double d = fr(fr(max - min) / 31);
    put_u16(dst, f16_bits(d));
    put_u16(dst + 2, f16_bits(min));
    codes_min(x, finite32(x), min, inverse(d), 31, q);
    put_u32(dst + 4, high_bits(q));
    pack4(q, dst + 8);
  }
}

// Q8_0: d = abs-max/127, q = round(x/d), halves away from zero.
void quantize_q8_0(const float* x, int64_t nb, uint8_t* dst) {
  for (int64_t i = 0; i < nb; i++, x += 32, dst += 34) {
    const bool finite = finite32(x);
    float famax = 0;
    for (int j = 0; j < 32; j++) famax = std::fabs(x[j]) > famax ? std::fabs(x[j]) : famax;  // Math.max, NaN apart
    bool nan = false;
    if (!finite) {
      for (int j = 0; j < 32; j++) nan = nan || std::isnan(x[j]);
    }
    const double amax = nan ? kNaN : famax;
    const double d = fr(amax / 127);
    const double id = inverse(d);
    put_u16(dst, f16_bits(d));
    if (finite && std::isfinite(id)) {
      const float idf = static_cast<float>(id);
      for (int j = 0; j < 32; j++) {
        const double t = x[j] * idf;                                              // |t| ≤ 127 and a bit
        const int32_t r = static_cast<int32_t>(std::fabs(t) + 0.5);              // ⌊|t| + 0.5⌋, exact in double
        dst[2 + j] = static_cast<uint8_t>(t < 0 ? -r : r);
      }
    } else {
      for (int j = 0; j < 32; j++) dst[2 + j] = to_u8(round_away(fr(x[j] * id)));
    }
  }
}

}  // namespace minfer::cpu::qw
