// GET_ROWS: out[:, i, j, l] = a[:, idx[i, j or 0], j, l] as f32, for any dtype with a dequantizer
// (quants.h). a [ne0, nRows, ne2, ne3] with contiguous rows; idx I32 [nIdx, 1 or ne2];
// out F32 [ne0, nIdx, ne2, ne3].
// Every index is bounds-checked: an index outside [0, nRows) is reported through
// report_kernel_error (the executor then fails the execute with OUT_OF_RANGE) and that output
// row is written as NaN instead of reading a.
#include <cstring>
#include <limits>

#include "../common/contract_rows.h"
#include "kernel.h"
#include "quants.h"

namespace minfer::cpu {
namespace {

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

// The contract, with the tables dequantize_row reads.
const Registrar get_rows_kernel(program::Op::GET_ROWS,
                                {contract::check_get_rows<has_dequantize>, no_scratch, 1, run_get_rows});

}  // namespace
}  // namespace minfer::cpu
