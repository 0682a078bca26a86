// Native weight quantizers: the algorithms of @minfer/gguf's TypeScript quantizers
// (packages/gguf/src/quant/{legacy,k-quant,k-quant-low,iq4-quant}.ts), ported operation for
// operation so that they write the same bytes, with and without an importance vector, for any
// f32 input. `minfer gguf quantize` runs them in its worker threads (quantizeWeights of
// @minfer/backend-cpu). Unlike the kernels' quantize_row (quants.h), which follows ggml's
// reference, these follow minfer's own searches.
#pragma once
#include <cstdint>

#include "../common/program_format.h"

namespace minfer::cpu::qw {

/** Elements and bytes per block of `t` when it is a type these quantizers write, else false. */
bool quantize_layout(program::DType t, int32_t* block_size, int32_t* type_size);

/** Whether values of dtype `t` can be a source (F32, F16, BF16). */
bool quantize_source(program::DType t);

/**
 * Quantizes the `n` values at `src` (dtype `src_type`, any alignment; whole rows of `row_len`
 * values, `row_len` a whole number of blocks) to `t` into `dst` (n / block_size · type_size
 * bytes). `imp`, null or `row_len` finite values ≥ 0: entry j weighs column j of every row in the
 * types whose TypeScript quantizer takes an importance (Q2_K..Q6_K, IQ4_NL, IQ4_XS); the others
 * ignore it. The caller has checked all of it.
 */
void quantize_rows(program::DType t, program::DType src_type, const void* src, int64_t n, int64_t row_len,
                   const float* imp, uint8_t* dst);

// Per-type entry points (quantize_weights_*.cpp): `nb` blocks of x into dst; `imp` indexed like
// x (the block's columns), or null.
void quantize_q4_0(const float* x, int64_t nb, uint8_t* dst);
void quantize_q4_1(const float* x, int64_t nb, uint8_t* dst);
void quantize_q5_0(const float* x, int64_t nb, uint8_t* dst);
void quantize_q5_1(const float* x, int64_t nb, uint8_t* dst);
void quantize_q8_0(const float* x, int64_t nb, uint8_t* dst);
void quantize_q4_k(const float* x, const float* imp, uint8_t* dst);  // one 256-value block
void quantize_q5_k(const float* x, const float* imp, uint8_t* dst);
void quantize_q6_k(const float* x, const float* imp, uint8_t* dst);
void quantize_q2_k(const float* x, const float* imp, uint8_t* dst);
void quantize_q3_k(const float* x, const float* imp, uint8_t* dst);
void quantize_iq4_nl(const float* x, const float* imp, uint8_t* dst);  // one 32-value block
void quantize_iq4_xs(const float* x, const float* imp, uint8_t* dst);  // one 256-value block

}  // namespace minfer::cpu::qw
