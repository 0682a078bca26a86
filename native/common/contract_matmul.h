// The contract of the matrix products (native/common/op_contract.h): MUL_MAT, MUL_MAT_ADD,
// MUL_MAT_MULTI and MUL_MAT_ID. Activations F32, F16 or BF16 with any strides (a backend gathers
// strided rows itself), outputs F32 with contiguous rows, addends F32 broadcast as ADD's b.
//
// Which weight dtypes a backend implements is its own business: it passes a WeightSupported
// predicate, and the contract takes each supported dtype's block geometry from
// program::block_layout (the file format's table, which both backends' kernels agree with), so
// the contract names no backend. The refusal of an unsupported weight lists the dtypes the
// predicate accepts, so a backend that gains a type names it without touching this file.
//
// The messages are those the CPU and CUDA backends gave before the contract was shared (the
// unsupported-weight refusal now also names the dtype it got); native/cpu/tests/matmul_test.cpp
// matches parts of them.
#pragma once
#include <cstddef>
#include <cstdio>

#include "op_contract.h"

namespace minfer::contract {

// Whether a backend's matrix-product kernels implement weights of dtype t.
using WeightSupported = bool (*)(DType t);

namespace matmul_detail {

// "A, B or C": the names of the dtypes with a block layout that `supported` accepts, in the
// layout table's order (program::kBlockLayouts: the plain types, then the quantized ones by id).
inline void supported_list(WeightSupported supported, char* buf, size_t size) {
  int n = 0;
  for (const program::BlockLayout& b : program::kBlockLayouts)
    if (supported(static_cast<DType>(b.dtype))) n++;
  buf[0] = '\0';
  size_t used = 0;
  int i = 0;
  for (const program::BlockLayout& b : program::kBlockLayouts) {
    if (!supported(static_cast<DType>(b.dtype))) continue;
    const char* sep = i == 0 ? "" : i == n - 1 ? " or " : ", ";
    const int w = std::snprintf(buf + used, size - used, "%s%s", sep, program::dtype_name(static_cast<DType>(b.dtype)));
    if (w < 0 || static_cast<size_t>(w) >= size - used) return;  // truncated: keep what fits
    used += static_cast<size_t>(w);
    i++;
  }
}

// The weight a (MUL_MAT's a, MUL_MAT_MULTI's w_i, MUL_MAT_ID's experts): a dtype the backend
// implements, rows a whole number of blocks, blocks contiguous (the kernels read a row as an
// array of blocks).
inline const char* check_weight(const Tensor* a, WeightSupported supported) {
  const program::BlockLayout* l = supported(a->dtype) ? program::block_layout(static_cast<int32_t>(a->dtype)) : nullptr;
  if (!l) {
    char list[256];
    supported_list(supported, list, sizeof list);
    if (list[0] == '\0') return fail("no weight dtype is implemented, got %s", program::dtype_name(a->dtype));
    return fail("weights must be %s, got %s", list, program::dtype_name(a->dtype));
  }
  if (a->ne[0] % l->block_size != 0) return "the weights' row length is not a whole number of blocks";
  if (a->nb[0] != l->type_size) return "the weights' rows must be contiguous (nb[0] = block size in bytes)";
  return nullptr;
}

// The activations b / x: F32, F16 or BF16, any element stride (a transposed view); the backends
// gather such rows before converting them.
inline const char* check_act(const Tensor* b) {
  if (b->dtype != DType::F32 && b->dtype != DType::F16 && b->dtype != DType::BF16)
    return "activations must be F32, F16 or BF16";
  return nullptr;
}

// An output: F32 [ne0, ne1, ne2, ne3] with contiguous rows (the kernels store a column's m
// results as one f32 array).
inline const char* check_out(const Tensor* o, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
  if (o->dtype != DType::F32) return "the output must be F32";
  if (o->nb[0] != 4) return "the output's rows must be contiguous";
  if (o->ne[0] != ne0 || o->ne[1] != ne1 || o->ne[2] != ne2 || o->ne[3] != ne3) return "the output shape is wrong";
  return nullptr;
}

// An addend c (MUL_MAT_ADD's c, MUL_MAT_MULTI's c_i): F32, broadcast over out as ADD's b (any
// strides). The callers word the refusal, naming which addend it is.
enum class AddendError { None, NotF32, NoBroadcast };
inline AddendError check_addend(const Tensor* c, const Tensor* out) {
  if (c->dtype != DType::F32) return AddendError::NotF32;
  for (int i = 0; i < 4; i++)
    if (c->ne[i] <= 0 || out->ne[i] % c->ne[i] != 0) return AddendError::NoBroadcast;
  return AddendError::None;
}

// MUL_MAT's and MUL_MAT_ADD's a and b: a [k, m, ne2a, ne3a] broadcast over b [k, n, ne2, ne3],
// the output [m, n, ne2, ne3].
inline const char* check_mul_mat_operands(const NodeView& args, WeightSupported supported) {
  const Tensor* a = args.in[0];
  const Tensor* b = args.in[1];
  if (const char* e = check_weight(a, supported)) return e;
  if (const char* e = check_act(b)) return e;
  if (a->ne[0] != b->ne[0]) return "mul_mat operands disagree on k";
  if (a->ne[2] <= 0 || a->ne[3] <= 0 || b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0)
    return "mul_mat: b's dims 2 and 3 must be multiples of a's";
  return check_out(args.out[0], a->ne[1], b->ne[1], b->ne[2], b->ne[3]);
}

}  // namespace matmul_detail

// Input index of MUL_MAT_MULTI's out_i addend, or 0 when the node has none (inputs x, w_1..w_n,
// then c_1..c_n when there are addends). The backends' run code finds c_i with it too.
inline int mul_mat_multi_addend(const NodeView& args, int i) {
  return args.n_inputs == 1 + 2 * args.n_outputs ? 1 + args.n_outputs + i : 0;
}

// MUL_MAT: out[m, n, i2, i3] = Σ_k a[k, m, i2/r2, i3/r3] · b[k, n, i2, i3].
inline const char* check_mul_mat(const NodeView& args, WeightSupported supported) {
  if (args.n_inputs != 2 || args.n_outputs != 1) return "mul_mat takes 2 inputs and 1 output";
  return matmul_detail::check_mul_mat_operands(args, supported);
}

// MUL_MAT_ADD: out = mul_mat(a, b) + c, c F32 broadcast over the product as ADD's b.
inline const char* check_mul_mat_add(const NodeView& args, WeightSupported supported) {
  using matmul_detail::AddendError;
  if (args.n_inputs != 3 || args.n_outputs != 1) return "mul_mat_add takes a, b, c and 1 output";
  if (const char* e = matmul_detail::check_mul_mat_operands(args, supported)) return e;
  switch (matmul_detail::check_addend(args.in[2], args.out[0])) {
    case AddendError::NotF32: return "mul_mat_add: c must be F32";
    case AddendError::NoBroadcast: return "mul_mat_add: c does not broadcast over the product";
    default: return nullptr;
  }
}

// MUL_MAT_MULTI: inputs x, w_1..w_n (2 or 3 two-dimensional weights [k, m_i] sharing x's k),
// optionally c_1..c_n; outputs out_i = mul_mat(w_i, x) [+ c_i], one per weight.
inline const char* check_mul_mat_multi(const NodeView& args, WeightSupported supported) {
  using matmul_detail::AddendError;
  const int nw = args.n_outputs;
  if (nw < 2 || nw > 3 || (args.n_inputs != 1 + nw && args.n_inputs != 1 + 2 * nw))
    return "mul_mat_multi takes x, 2-3 weights, optionally one addend per weight, and one output per weight";
  const Tensor* x = args.in[0];
  if (const char* e = matmul_detail::check_act(x)) return e;
  for (int i = 0; i < nw; i++) {
    const Tensor* w = args.in[1 + i];
    if (const char* e = matmul_detail::check_weight(w, supported)) return e;
    if (w->ne[0] != x->ne[0] || w->ne[2] != 1 || w->ne[3] != 1) return "mul_mat_multi: each weight must be [k, m] with x's k";
    if (const char* e = matmul_detail::check_out(args.out[i], w->ne[1], x->ne[1], x->ne[2], x->ne[3])) return e;
    if (const int ci = mul_mat_multi_addend(args, i)) {
      const char* const kNotF32[3] = {"mul_mat_multi: c1 must be F32", "mul_mat_multi: c2 must be F32",
                                      "mul_mat_multi: c3 must be F32"};
      const char* const kNoBroadcast[3] = {"mul_mat_multi: c1 does not broadcast over out1",
                                           "mul_mat_multi: c2 does not broadcast over out2",
                                           "mul_mat_multi: c3 does not broadcast over out3"};
      switch (matmul_detail::check_addend(args.in[ci], args.out[i])) {
        case AddendError::NotF32: return kNotF32[i];
        case AddendError::NoBroadcast: return kNoBroadcast[i];
        default: break;
      }
    }
  }
  return nullptr;
}

// MUL_MAT_ID: experts a [k, m, nE], b [k, 1 or nUsed, nTok], ids I32 [nUsed, nTok];
// out[:, e, t] = a[:, :, ids[e, t]]ᵀ · b[:, e or 0, t]. The ids' values are checked by the
// kernels at run time (they are data), not here.
inline const char* check_mul_mat_id(const NodeView& args, WeightSupported supported) {
  if (args.n_inputs != 3 || args.n_outputs != 1) return "mul_mat_id takes experts, b, ids and 1 output";
  const Tensor* a = args.in[0];
  const Tensor* b = args.in[1];
  const Tensor* ids = args.in[2];
  if (const char* e = matmul_detail::check_weight(a, supported)) return e;
  if (const char* e = matmul_detail::check_act(b)) return e;
  if (ids->dtype != DType::I32) return "mul_mat_id: ids must be I32";
  if (a->ne[3] != 1 || b->ne[3] != 1 || ids->ne[2] != 1 || ids->ne[3] != 1) return "mul_mat_id: too many dimensions";
  if (a->ne[0] != b->ne[0]) return "mul_mat_id: experts and b disagree on k";
  if (ids->ne[1] != b->ne[2]) return "mul_mat_id: ids must have one column per token";
  if (b->ne[1] != 1 && b->ne[1] != ids->ne[0]) return "mul_mat_id: b's dim 1 must be 1 or the number of experts used";
  return matmul_detail::check_out(args.out[0], a->ne[1], ids->ne[0], ids->ne[1], 1);
}

}  // namespace minfer::contract
