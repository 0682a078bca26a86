// Shared pieces of matmul.cpp (tiled row × column loop), visible to the tests.
#pragma once
#include <cstddef>
#include <cstdint>

#include "gemm.h"
#include "kernel.h"
#include "quants_internal.h"

namespace minfer::cpu::mm {

// One weight matrix (rows w + r·w_nb1) against converted activation columns
// (act + c·act_stride); column c's output row is out_col(ctx, c), written at [r].
struct TileJob {
  q::VecDotFn dot;
  int64_t k;
  const uint8_t* w;
  int64_t w_nb1;
  size_t w_row_bytes;
  const uint8_t* act;
  size_t act_stride;
  float* (*out_col)(const void* ctx, int64_t c);
  const void* ctx;
  q::GemmFn gemm = nullptr;  // panel GEMM for this weight type, used when there are enough columns
};

// The panel GEMM of weight type t for this node, or nullptr: none at its SIMD level, or the
// runtime keeps every column count on the dot-product kernels (panelGemm false).
inline q::GemmFn gemm_of(const NodeArgs& args, program::DType t) {
  return args.panel_gemm ? q::gemm_for(t, args.simd) : nullptr;
}
// Rows [r0, r1) × columns [c0, c1) of a job, tiled for cache reuse.
void tile_rows_cols(const TileJob& job, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

// Thread ith's share of an m-row × n-column job (rows when m is large enough, else columns).
// (Panel-GEMM jobs are not split this way: threads take 32-row panels from a shared counter.)
void split_job(int64_t m, int64_t n, int ith, int nth, int64_t* r0, int64_t* r1, int64_t* c0, int64_t* c1);

size_t align64(size_t x);
// The addend c of a fused matmul (matmul_add.cpp; F32, broadcast over out as ADD's b, as
// native/common/contract_matmul.h checks):
// out[r, j, i2, i3] += c[r % c0, j % c1, i2 % c2, i3 % c3] for rows [r0, r1) and columns [j0, j1)
// of every plane of out (one float add per element, as ADD).
void add_c(const Tensor* c, const Tensor* out, int64_t r0, int64_t r1, int64_t j0, int64_t j1);
void convert_row(const Tensor* b, int64_t i1, int64_t i2, int64_t i3, q::ActFormat fmt, SimdLevel level, void* dst,
                 float* tmp);

}  // namespace minfer::cpu::mm
