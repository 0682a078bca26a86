// Test-only stand-in for quants.cpp while it does not build: Q8_0 only (blocks of 32: an f16 scale
// d = max|x| / 127 and 32 int8 values round(x / d)); other dtypes are reported unavailable.
#include <cmath>
#include <cstring>

#include "../../common/fp16.h"
#include "../quants.h"

namespace minfer::cpu {
bool has_dequantize(program::DType t) { return t == program::DType::Q8_0; }
bool has_quantize(program::DType t) { return t == program::DType::Q8_0; }
void quantize_row(program::DType, const float* src, void* dst, int64_t n) {
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t b = 0; b < n / 32; b++, out += 34) {
    float amax = 0;
    for (int i = 0; i < 32; i++) amax = std::fmax(amax, std::fabs(src[b * 32 + i]));
    const float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
    const uint16_t h = f32_to_fp16(d);
    std::memcpy(out, &h, 2);
    for (int i = 0; i < 32; i++) out[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(src[b * 32 + i] * id)));
  }
}
void dequantize_row(program::DType, const void* src, float* dst, int64_t n) {
  const auto* in = static_cast<const uint8_t*>(src);
  for (int64_t b = 0; b < n / 32; b++, in += 34) {
    uint16_t h;
    std::memcpy(&h, in, 2);
    const float d = fp16_to_f32(h);
    for (int i = 0; i < 32; i++) dst[b * 32 + i] = d * static_cast<int8_t>(in[2 + i]);
  }
}
}  // namespace minfer::cpu
