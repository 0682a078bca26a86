// Panel GEMM for batched MUL_MAT with quantized weights (prefill): a panel of weight rows is
// decoded once into an interleaved layout (per 32-element block: the rows' scales, then eight
// groups of four codes, row after row), then run against every activation column with integer
// dot products whose lanes are weight rows, so one float conversion and one FMA finish a whole
// block for 16 rows (Q4_0, Q5_0, Q8_0, and IQ4_NL, MXFP4 through a 16-level table, in
// gemm_avx512.cpp; Q4_K in gemm_k_avx512.cpp). Float weights (F32, F16, BF16; gemm_f_avx512.cpp)
// are converted to F32 panels, one k's rows a vector. Only where the SIMD level has such a kernel
// (AVX-512 VNNI); elsewhere, and for few columns, matmul.cpp keeps the row-by-row vec_dot loop.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../common/program_format.h"

namespace minfer::cpu {
enum class SimdLevel : int;
}  // namespace minfer::cpu

namespace minfer::cpu::q {

// Where column c's output row lives (the rows [r0, r1) of it are written).
using OutColFn = float* (*)(const void* ctx, int64_t c);

// Weight rows [r0, r1) (k elements each, rows w + r·w_nb1) × activation columns [c0, c1)
// (act + c·act_stride, in the weight type's activation format).
using GemmFn = void (*)(int64_t k, const uint8_t* w, int64_t w_nb1, int64_t r0, int64_t r1, const uint8_t* act,
                        size_t act_stride, int64_t c0, int64_t c1, OutColFn out_col, const void* ctx);

// Rows per panel; matmul.cpp hands panels to threads one at a time.
constexpr int kGemmPanelRows = 32;
// Below this many columns the vec_dot loop is used.
constexpr int kGemmMinCols = 8;

// The panel GEMM of weight type `t` at `level`, or nullptr when there is none.
GemmFn gemm_for(program::DType t, SimdLevel level);

#if defined(__x86_64__) || defined(_M_X64)
void gemm_q4_0_avx512(int64_t, const uint8_t*, int64_t, int64_t, int64_t, const uint8_t*, size_t, int64_t, int64_t,
                      OutColFn, const void*);
void gemm_q5_0_avx512(int64_t, const uint8_t*, int64_t, int64_t, int64_t, const uint8_t*, size_t, int64_t, int64_t,
                      OutColFn, const void*);
void gemm_q8_0_avx512(int64_t, const uint8_t*, int64_t, int64_t, int64_t, const uint8_t*, size_t, int64_t, int64_t,
                      OutColFn, const void*);
void gemm_iq4_nl_avx512(int64_t, const uint8_t*, int64_t, int64_t, int64_t, const uint8_t*, size_t, int64_t, int64_t,
                        OutColFn, const void*);
void gemm_mxfp4_avx512(int64_t, const uint8_t*, int64_t, int64_t, int64_t, const uint8_t*, size_t, int64_t, int64_t,
                       OutColFn, const void*);
void gemm_f32_avx512(int64_t, const uint8_t*, int64_t, int64_t, int64_t, const uint8_t*, size_t, int64_t, int64_t,
                     OutColFn, const void*);
void gemm_f16_avx512(int64_t, const uint8_t*, int64_t, int64_t, int64_t, const uint8_t*, size_t, int64_t, int64_t,
                     OutColFn, const void*);
void gemm_bf16_avx512(int64_t, const uint8_t*, int64_t, int64_t, int64_t, const uint8_t*, size_t, int64_t, int64_t,
                      OutColFn, const void*);
void gemm_q4_k_avx512(int64_t, const uint8_t*, int64_t, int64_t, int64_t, const uint8_t*, size_t, int64_t, int64_t,
                      OutColFn, const void*);
#endif

}  // namespace minfer::cpu::q
