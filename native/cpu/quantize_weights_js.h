// JavaScript number semantics for the native weight quantizers (quantize_weights*.cpp), which
// must write the same bytes as the TypeScript ones of @minfer/gguf (packages/gguf/src/quant/).
// TypeScript computes in doubles; Math.fround rounds to f32; Math.min/max propagate NaN and order
// -0 below +0; storing into a Uint8Array/Int8Array wraps modulo 256 after ToInt32 (NaN, ±Inf → 0).
// Each helper below is one of those, named for the TypeScript it stands for.
//
// No contraction of a*b+c into a fused multiply-add (one rounding instead of two): g++ contracts
// by default in C++ on targets with FMA (AArch64), so every file that includes this turns it off.
#pragma once
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace minfer::cpu::qw {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/** Math.fround(v). */
inline double fr(double v) { return static_cast<double>(static_cast<float>(v)); }

/** Math.floor(t) for t ≥ 0 (or NaN): a truncating conversion below 2^31, much cheaper than floor. */
inline double floor_pos(double t) {
  return t < 2147483648.0 ? static_cast<double>(static_cast<int32_t>(t)) : std::floor(t);
}

/** roundAway(v) of the TypeScript: nearest integer, halves away from zero. */
inline double round_away(double v) {
  const double r = floor_pos(std::fabs(v) + 0.5);  // = floor(−v + 0.5) for v < 0, exactly
  return v < 0 ? -r : r;                           // a select, not a branch on the sign
}

/** Math.max(a, b). */
inline double js_max(double a, double b) {
  if (a > b) return a;
  if (b > a) return b;
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  return std::signbit(a) ? b : a;  // equal: Math.max(-0, +0) is +0
}

/** Math.min(a, b). */
inline double js_min(double a, double b) {
  if (a < b) return a;
  if (b < a) return b;
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  return std::signbit(a) ? a : b;  // equal: Math.min(-0, +0) is -0
}

/**
 * clamp(v, lo, hi) of the TypeScript, Math.min(Math.max(v, lo), hi), for constant bounds lo < hi
 * with hi > 0 and lo not −0 (all its callers'): then selects give the same zeros as Math.min/max,
 * without a branch on v; a NaN v stays NaN.
 */
inline double clamp(double v, double lo, double hi) {
  double r = v > lo ? v : lo;
  r = r < hi ? r : hi;
  return std::isnan(v) ? v : r;
}

/** Math.round(v): nearest integer, halves toward +Infinity. */
inline double js_round(double v) {
  if (!std::isfinite(v)) return v;
  const double f = std::floor(v);
  const double r = f + (v - f >= 0.5 ? 1.0 : 0.0);  // v − floor(v) is exact
  return r == 0 ? std::copysign(0.0, v) : r;
}

/** ToInt32(v): what `v | 0` gives. */
inline int32_t to_int32(double v) {
  if (std::fabs(v) < 2147483648.0) return static_cast<int32_t>(v);  // truncates; false for NaN
  if (!std::isfinite(v)) return 0;
  double m = std::fmod(std::trunc(v), 4294967296.0);
  if (m < 0) m += 4294967296.0;
  return static_cast<int32_t>(static_cast<uint32_t>(m));
}

/** The byte a Uint8Array (or Int8Array) stores for v. */
inline uint8_t to_u8(double v) { return static_cast<uint8_t>(to_int32(v)); }

/** The double with bits u. */
inline double from_bits(uint64_t u) {
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}

/** IEEE binary16 bits of v rounded from the double directly (f32ToF16 of f16.ts). */
inline uint16_t f16_bits(double x) {
  if (std::isnan(x)) return 0x7e00;
  const uint32_t sign = std::signbit(x) ? 0x8000u : 0u;
  const double a = std::fabs(x);
  if (a >= 65520) return static_cast<uint16_t>(sign | 0x7c00u);
  const auto half_even = [](double v) {  // v ≥ 0, < 2^25: nearest integer, ties to even
    const double f = floor_pos(v);
    const double r = v - f;  // exact
    const uint32_t i = static_cast<uint32_t>(f);
    return r > 0.5 || (r == 0.5 && (i & 1)) ? i + 1 : i;
  };
  if (a < 0x1p-14) return static_cast<uint16_t>(sign | half_even(a * 0x1p24));
  uint64_t bits = 0;
  std::memcpy(&bits, &a, 8);
  const int e = static_cast<int>(bits >> 52) - 1023;                            // 2^e ≤ a < 2^(e+1), −14 ≤ e ≤ 15
  const uint32_t m = half_even(a * from_bits(static_cast<uint64_t>(1033 - e) << 52));  // a·2^(10−e): 1024..2048
  return static_cast<uint16_t>(sign | ((static_cast<uint32_t>(e + 15) << 10) + (m - 1024)));
}

/** The value of binary16 bits h (f16ToF32 of f16.ts). */
inline double f16_value(uint16_t h) {
  const double s = (h & 0x8000) ? -1.0 : 1.0;
  const int e = (h >> 10) & 31;
  const int m = h & 1023;
  if (e == 0) return s * m * 0x1p-24;
  if (e == 31) return m ? kNaN : s * kInf;
  return s * (1024 + m) * std::ldexp(1.0, e - 25);
}

/** roundToF16(v) of f16.ts: the f16 value nearest v. */
inline double round_to_f16(double v) { return f16_value(f16_bits(v)); }

/** Little-endian stores (writeU16 / writeU32 of the TypeScript). */
inline void put_u16(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
inline void put_u32(uint8_t* p, uint32_t v) {
  put_u16(p, v);
  put_u16(p + 2, v >> 16);
}

}  // namespace minfer::cpu::qw
