// Random valid blocks for the standalone kernel tests (quant_test, matmul_test):
// random bytes are a valid block of every quantized type once its scale fields are bounded.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "../../common/fp16.h"
#include "../../common/program_format.h"

namespace minfer::cpu::test {

// Writes bounded random scales into the block at p of type t (random bytes elsewhere make a valid
// block of every type without a quantizer): f16 scale fields in [-0.002, 0.004]; IQ1_M's f16 d,
// held in the top nibbles of its four u16 scale words at byte 48; MXFP4's E8M0 exponent byte
// (2^(e-127), 118..124).
inline void set_scale_fields(program::DType t, uint8_t* p, std::mt19937& rng) {
  std::vector<int> halves;
  switch (t) {
    case program::DType::Q4_0: case program::DType::Q5_0: case program::DType::Q8_0: halves = {0}; break;
    case program::DType::Q4_1: case program::DType::Q5_1: halves = {0, 2}; break;
    case program::DType::Q2_K: halves = {80, 82}; break;
    case program::DType::Q3_K: halves = {108}; break;
    case program::DType::Q4_K: case program::DType::Q5_K: halves = {0, 2}; break;
    case program::DType::Q6_K: halves = {208}; break;
    case program::DType::IQ2_XXS: case program::DType::IQ2_XS: case program::DType::IQ2_S: case program::DType::IQ3_XXS: case program::DType::IQ3_S:
    case program::DType::IQ1_S: case program::DType::IQ4_NL: case program::DType::IQ4_XS: halves = {0}; break;
    case program::DType::TQ1_0: halves = {52}; break;
    case program::DType::TQ2_0: halves = {64}; break;
    default: break;
  }
  std::uniform_real_distribution<float> ud(-0.002f, 0.004f);
  for (int off : halves) {
    const uint16_t h = minfer::f32_to_fp16(ud(rng));
    p[off] = h & 0xff;
    p[off + 1] = h >> 8;
  }
  if (t == program::DType::IQ1_M) {
    const uint16_t h = minfer::f32_to_fp16(ud(rng));
    for (int k = 0; k < 4; k++) p[49 + 2 * k] = static_cast<uint8_t>((p[49 + 2 * k] & 0x0f) | (((h >> (4 * k)) & 15) << 4));
  }
  if (t == program::DType::MXFP4) p[0] = static_cast<uint8_t>(std::uniform_int_distribution<int>(118, 124)(rng));
}

}  // namespace minfer::cpu::test
