// The contract of the row gathers and scatters at runtime indices (native/common/op_contract.h):
// GET_ROWS (out[:, i, j, l] = a[:, idx[i, j or 0], j, l] as F32) and SET_ROWS
// (dst[:, idx[i, i2 % m2, i3 % m3], i2, i3] = src[:, i, i2, i3]; the output is dst). The indices are
// data: each kernel bounds-checks them when it runs, so the contract checks only their dtype and
// shape.
//
// Which dtypes a backend reads rows of (GET_ROWS, kDequantizes) or writes quantized rows of
// (SET_ROWS, kQuantizes as in contract_copy.h) is its own, passed in as a predicate.
#pragma once
#include "contract_copy.h"
#include "op_contract.h"

namespace minfer::contract {

// GET_ROWS: a [ne0, nRows, ne2, ne3] of a dtype kDequantizes accepts, with rows of whole,
// contiguous blocks; idx I32 [nIdx, 1 or ne2]; out contiguous F32 rows [ne0, nIdx, ne2, ne3].
template <bool (*kDequantizes)(DType)>
inline const char* check_get_rows(const NodeView& args) {
  if (args.n_inputs != 2 || args.n_outputs != 1) return "get_rows takes 2 inputs and 1 output";
  const Tensor *a = args.in[0], *idx = args.in[1], *out = args.out[0];
  if (!kDequantizes(a->dtype)) return "get_rows cannot read this dtype (no dequantizer)";
  const program::BlockLayout* l = program::block_layout(static_cast<int32_t>(a->dtype));
  if (!l || l->block_size <= 0 || a->ne[0] % l->block_size != 0)
    return "get_rows: a's rows are not a whole number of blocks";
  if (a->nb[0] != l->type_size) return "get_rows: a's rows must be contiguous";
  if (idx->dtype != DType::I32) return "get_rows: the index must be I32";
  if (idx->ne[2] != 1 || idx->ne[3] != 1) return "get_rows takes a 1-D or 2-D index";
  if (idx->ne[1] != 1 && idx->ne[1] != a->ne[2]) return "get_rows: index rows must match a's dim 2";
  if (out->dtype != DType::F32 || out->nb[0] != 4) return "get_rows: the output must be contiguous F32 rows";
  if (out->ne[0] != a->ne[0] || out->ne[1] != idx->ne[0] || out->ne[2] != a->ne[2] || out->ne[3] != a->ne[3])
    return "get_rows: the output shape is wrong";
  return nullptr;
}

// SET_ROWS: inputs (dst, src, idx), the output dst itself. dst [ne0, nRows, n2, n3] F32, F16, BF16
// or a quantized dtype kQuantizes accepts (rows of whole, contiguous blocks); src F32
// [ne0, n, n2, n3]; idx I32 [n, m2, m3] with m2 | n2 and m3 | n3 (ggml's broadcast).
template <bool (*kQuantizes)(DType)>
inline const char* check_set_rows(const NodeView& args) {
  if (args.n_inputs != 3 || args.n_outputs != 1)
    return fail("set_rows: takes 3 inputs and 1 output, got %d and %d", args.n_inputs, args.n_outputs);
  const Tensor *d = args.out[0], *src = args.in[1], *idx = args.in[2];
  if (!float_dtype(d->dtype) && !quantized_dst(d->dtype, kQuantizes)) {
    char names[160];
    return fail("set_rows: dst must be F32, F16, BF16 or a dtype with a quantizer (%s), got %s",
                quantized_dst_names(kQuantizes, names, sizeof names), program::dtype_name(d->dtype));
  }
  if (args.in[0]->dtype != d->dtype) return fail("set_rows: the output must be dst (same dtype)");
  if (src->dtype != DType::F32) return fail("set_rows: src must be F32, got %s", program::dtype_name(src->dtype));
  if (idx->dtype != DType::I32)
    return fail("set_rows: the index must be I32, got %s", program::dtype_name(idx->dtype));
  if (d->ne[0] != src->ne[0])
    return fail("set_rows: src rows (%lld) must be as long as dst rows (%lld)", (long long)src->ne[0],
                (long long)d->ne[0]);
  if (idx->ne[0] != src->ne[1]) return fail("set_rows: takes one index per src row");
  if (src->ne[2] != d->ne[2] || src->ne[3] != d->ne[3]) return fail("set_rows: src and dst differ in dims 2 and 3");
  if (idx->ne[1] <= 0 || idx->ne[2] <= 0 || idx->ne[3] != 1 || src->ne[2] % idx->ne[1] != 0 ||
      src->ne[3] % idx->ne[2] != 0)
    return fail("set_rows: the index does not broadcast over src's dims 2 and 3");
  if (quantized_dst(d->dtype, kQuantizes))
    if (const char* e = check_dst_rows("set_rows", d->dtype, d->ne[0], d->nb[0])) return e;
  return nullptr;
}

}  // namespace minfer::contract
