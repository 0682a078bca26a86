// GET_ROWS: out[:, i, j, l] = a[:, idx[i, j or 0], j, l] as f32, for any dtype with a dequantizer
// (quants.h). a [ne0, nRows, ne2, ne3] with contiguous rows; idx I32 [nIdx, 1 or ne2];
// out F32 [ne0, nIdx, ne2, ne3].
// Every index is bounds-checked: an index outside [0, nRows) is reported through
// report_kernel_error (the executor then fails the execute with OUT_OF_RANGE) and that output
// row is written as NaN instead of reading a.
#include <cstring>
#include <limits>

#include "kernel.h"
#include "quants.h"

namespace minfer::cpu {
namespace {

using program::DType;

int64_t type_size_of(DType t, int64_t* block) {
  for (const auto& l : program::kBlockLayouts)
    if (l.dtype == static_cast<int32_t>(t)) {
      *block = l.block_size;
      return l.type_size;
    }
  *block = 0;
  return 0;
}

const char* check_get_rows(const NodeArgs& args) {
  if (args.n_inputs != 2 || args.n_outputs != 1) return "get_rows takes 2 inputs and 1 output";
  const Tensor* a = args.in[0];
  const Tensor* idx = args.in[1];
  const Tensor* out = args.out[0];
  if (!has_dequantize(a->dtype)) return "get_rows cannot read this dtype (no dequantizer)";
  int64_t block;
  const int64_t ts = type_size_of(a->dtype, &block);
  if (block <= 0 || a->ne[0] % block != 0) return "get_rows: a's rows are not a whole number of blocks";
  if (a->nb[0] != ts) return "get_rows: a's rows must be contiguous";
  if (idx->dtype != DType::I32) return "get_rows: the index must be I32";
  if (idx->ne[2] != 1 || idx->ne[3] != 1) return "get_rows takes a 1-D or 2-D index";
  if (idx->ne[1] != 1 && idx->ne[1] != a->ne[2]) return "get_rows: index rows must match a's dim 2";
  if (out->dtype != DType::F32 || out->nb[0] != 4) return "get_rows: the output must be contiguous F32 rows";
  if (out->ne[0] != a->ne[0] || out->ne[1] != idx->ne[0] || out->ne[2] != a->ne[2] || out->ne[3] != a->ne[3])
    return "get_rows: the output shape is wrong";
  return nullptr;
}

void run_get_rows(const NodeArgs& args, int, int ith, int nth) {
  const Tensor* a = args.in[0];
  const Tensor* idx = args.in[1];
  const Tensor* out = args.out[0];
  const int64_t n_idx = idx->ne[0], ne2 = a->ne[2];
  const int64_t total = n_idx * ne2 * a->ne[3];
  int64_t r0, r1;
  split_range(total, ith, nth, &r0, &r1);
  bool bad = false;
  for (int64_t r = r0; r < r1; r++) {
    const int64_t i = r % n_idx, j = (r / n_idx) % ne2, l = r / (n_idx * ne2);
    int32_t id;
    std::memcpy(&id, idx->data + i * idx->nb[0] + (idx->ne[1] == 1 ? 0 : j) * idx->nb[1], 4);
    float* dst = reinterpret_cast<float*>(out->data + i * out->nb[1] + j * out->nb[2] + l * out->nb[3]);
    if (id < 0 || id >= a->ne[1]) {
      for (int64_t c = 0; c < a->ne[0]; c++) dst[c] = std::numeric_limits<float>::quiet_NaN();
      bad = true;
      continue;
    }
    dequantize_row(a->dtype, a->data + id * a->nb[1] + j * a->nb[2] + l * a->nb[3], dst, a->ne[0]);
  }
  if (bad) report_kernel_error("get_rows: row index out of range; the row was written as NaN");
}

const Registrar get_rows_kernel(program::Op::GET_ROWS, {check_get_rows, no_scratch, 1, run_get_rows});

}  // namespace
}  // namespace minfer::cpu
