// The contract of the copies (native/common/op_contract.h): CPY (a converted to the output's
// dtype, walking both in row-major element order, so the shapes may differ when the element counts
// agree) and CONCAT (a and b joined along dim 0-3). Also the rules for destination rows that CPY
// and SET_ROWS (contract_rows.h) share.
//
// Which block-quantized dtypes a backend can write is its own: CPY and SET_ROWS take it as a
// predicate (kQuantizes), which the contract asks only about block dtypes, and the refusals list
// the dtypes it accepts.
#pragma once
#include <cstddef>

#include "op_contract.h"

namespace minfer::contract {

// The float dtypes every backend converts between (CPY's sources, CPY and SET_ROWS destinations).
inline bool float_dtype(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// A block-quantized dtype the backend writes (rows quantized from F32), by its predicate.
inline bool quantized_dst(DType t, bool (*quantizes)(DType)) {
  const program::BlockLayout* l = program::block_layout(static_cast<int32_t>(t));
  return l && l->block_size > 1 && quantizes(t);
}

// The block dtypes the predicate accepts, comma-separated in kBlockLayouts' order ("none" when
// none), into buf; for the refusals, so that they name what this backend writes.
inline const char* quantized_dst_names(bool (*quantizes)(DType), char* buf, size_t size) {
  size_t n = 0;
  buf[0] = '\0';
  for (const program::BlockLayout& l : program::kBlockLayouts) {
    const DType t = static_cast<DType>(l.dtype);
    if (!quantized_dst(t, quantizes)) continue;
    const int w = std::snprintf(buf + n, size - n, "%s%s", n ? ", " : "", program::dtype_name(t));
    if (w < 0 || static_cast<size_t>(w) >= size - n) {  // full: the list ends at the last whole name
      buf[n] = '\0';
      break;
    }
    n += static_cast<size_t>(w);
  }
  if (n == 0) std::snprintf(buf, size, "none");
  return buf;
}

// A quantized destination of dtype t with rows of ne0 elements (element stride nb0): the rows must
// be whole, contiguous blocks, since the kernels quantize a block at a time into consecutive bytes.
inline const char* check_dst_rows(const char* op, DType t, int64_t ne0, int64_t nb0) {
  const program::BlockLayout* l = program::block_layout(static_cast<int32_t>(t));
  const int64_t bs = l ? l->block_size : 1;
  if (ne0 % bs != 0)
    return fail("%s: %s destination rows (%lld elements) are not a whole number of blocks of %lld", op,
                program::dtype_name(t), (long long)ne0, (long long)bs);
  if (l && nb0 != l->type_size)
    return fail("%s: %s destination rows must be contiguous (nb[0] %lld, block size %d bytes)", op,
                program::dtype_name(t), (long long)nb0, l->type_size);
  return nullptr;
}

// CPY: a plain dtype (F32, F16, BF16, I32) copied to the same dtype bit for bit, or a float dtype
// converted to a float dtype or to a quantized one kQuantizes accepts (rows of whole, contiguous
// blocks); a and the output hold as many elements, any strides.
template <bool (*kQuantizes)(DType)>
inline const char* check_cpy(const NodeView& args) {
  if (args.n_inputs != 1 || args.n_outputs != 1)
    return fail("cpy: takes 1 input and 1 output, got %d and %d", args.n_inputs, args.n_outputs);
  const Tensor *a = args.in[0], *o = args.out[0];
  const bool same_plain = a->dtype == o->dtype && (float_dtype(a->dtype) || a->dtype == DType::I32);
  if (!same_plain) {
    if (!float_dtype(a->dtype))
      return fail("cpy: cannot convert from %s (the source must be F32, F16 or BF16)", program::dtype_name(a->dtype));
    if (!float_dtype(o->dtype) && !quantized_dst(o->dtype, kQuantizes)) {
      char names[160];
      return fail("cpy: cannot convert %s to %s (the destination must be F32, F16, BF16 or a dtype with a quantizer: "
                  "%s)",
                  program::dtype_name(a->dtype), program::dtype_name(o->dtype),
                  quantized_dst_names(kQuantizes, names, sizeof names));
    }
  }
  const int64_t na = a->ne[0] * a->ne[1] * a->ne[2] * a->ne[3], no = o->ne[0] * o->ne[1] * o->ne[2] * o->ne[3];
  if (na != no) return fail("cpy: source and destination differ in element count");
  if (quantized_dst(o->dtype, kQuantizes))
    if (const char* e = check_dst_rows("cpy", o->dtype, o->ne[0], o->nb[0])) return e;
  return nullptr;
}

// CONCAT: a, b and the output of one plain dtype (F32, F16, BF16 or I32: elements are copied bit
// for bit, and a block dtype would split blocks along dim 0), any strides; dim (parameter) 0-3; a
// and b agree outside dim, and the output is their shape with the two sizes along dim added.
inline const char* check_concat(const NodeView& args) {
  if (args.n_inputs != 2 || args.n_outputs != 1)
    return fail("concat: takes 2 inputs and 1 output, got %d and %d", args.n_inputs, args.n_outputs);
  const Tensor *a = args.in[0], *b = args.in[1], *o = args.out[0];
  const int dim = program::param_i32(args, program::param::CONCAT::dim);
  if (dim < 0 || dim > 3) return fail("concat: dim %d is not 0-3", dim);
  if (!float_dtype(a->dtype) && a->dtype != DType::I32)
    return fail("concat: operands must be F32, F16, BF16 or I32, got %s", program::dtype_name(a->dtype));
  if (b->dtype != a->dtype || o->dtype != a->dtype)
    return fail("concat: operands and output must have the same dtype, got %s, %s and %s",
                program::dtype_name(a->dtype), program::dtype_name(b->dtype), program::dtype_name(o->dtype));
  for (int i = 0; i < 4; i++) {
    if (i != dim && a->ne[i] != b->ne[i]) return fail("concat: operands differ in dim %d", i);
    const int64_t want = i == dim ? a->ne[i] + b->ne[i] : a->ne[i];
    if (o->ne[i] != want) return fail("concat: the output has the wrong size in dim %d", i);
  }
  return nullptr;
}

}  // namespace minfer::contract
