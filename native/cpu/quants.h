// Row conversions between f32 and every stored dtype, for kernels that need them (get_rows,
// cpy/set_rows into quantized or 16-bit caches, matmul's activation quantization).
// Implemented in quants*.cpp; bit layouts are ggml's (see @minfer/gguf QUANTIZATION.md).
#pragma once
#include <cstdint>

#include "../common/program_format.h"

namespace minfer::cpu {

// Whether dequantize_row / quantize_row handle dtype `t`.
bool has_dequantize(program::DType t);
bool has_quantize(program::DType t);

// Writes the `n` values stored at `src` (dtype `t`, n a whole number of blocks) as f32 to `dst`.
void dequantize_row(program::DType t, const void* src, float* dst, int64_t n);

// Stores `n` f32 values from `src` into `dst` as dtype `t` (n a whole number of blocks).
void quantize_row(program::DType t, const float* src, void* dst, int64_t n);

}  // namespace minfer::cpu
