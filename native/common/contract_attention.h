// The contract of ATTENTION (native/common/op_contract.h):
//   out[:, h, j] = softmax_c(softcap(q[:, h, j] · k[:, h/g, c] * scale) + mask[c, j]) · v[:, h/g, c]
// with q F32 [hd, nHead, nQ], k F32/F16/BF16/Q8_0 [hd, nKvHead, nKv], v F32/F16/BF16/Q8_0
// [hdv, nKvHead, nKv] (any strides, but each k/v row contiguous in dim 0; a Q8_0 row is whole
// 32-element blocks, so its head size is a multiple of 32), and as 4th input either a mask F32/F16
// [nKv, >= nQ] (-inf hides a cell) or spans I32 [2, nQ] (query j sees cells [start_j, end_j)).
// GQA: nHead is a multiple of nKvHead. Output F32 [hdv, nHead, nQ].
//
// Every backend reads all of these dtypes, so they are part of the contract; a backend with a
// narrower kernel, or limits of its own (tile sizes), checks them after check_attention.
#pragma once
#include "op_contract.h"

namespace minfer::contract {

// The dtypes k and v may have.
inline bool attention_kv_type(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::Q8_0;
}

// nb[0] of a contiguous k/v row: one element, or for Q8_0 one 32-element block ({f16 d, int8 q[32]}).
inline int64_t attention_kv_elem_bytes(DType t) { return t == DType::Q8_0 ? 34 : t == DType::F32 ? 4 : 2; }

inline const char* check_attention(const NodeView& args) {
  if (const char* e = check_counts("attention", args, 4)) return e;
  const Tensor *q = args.in[0], *k = args.in[1], *v = args.in[2], *m = args.in[3], *o = args.out[0];
  using program::dtype_name;
  if (const char* e = need_f32("attention", "q", q)) return e;
  if (!attention_kv_type(k->dtype))
    return fail("attention: k must be F32, F16, BF16 or Q8_0, got %s", dtype_name(k->dtype));
  if (!attention_kv_type(v->dtype))
    return fail("attention: v must be F32, F16, BF16 or Q8_0, got %s", dtype_name(v->dtype));
  if ((k->dtype == DType::Q8_0 && k->ne[0] % 32 != 0) || (v->dtype == DType::Q8_0 && v->ne[0] % 32 != 0))
    return fail("attention: Q8_0 k/v need head sizes that are multiples of 32 (%lld, %lld)", (long long)k->ne[0],
                (long long)v->ne[0]);
  if (const char* e = need_f32("attention", "the output", o)) return e;
  if (k->nb[0] != attention_kv_elem_bytes(k->dtype) || v->nb[0] != attention_kv_elem_bytes(v->dtype))
    return fail("attention: k and v rows must be contiguous in dim 0 (nb[0] %lld and %lld)", (long long)k->nb[0],
                (long long)v->nb[0]);
  if (q->ne[0] != k->ne[0])
    return fail("attention: q and k must have the same head size (%lld vs %lld)", (long long)q->ne[0],
                (long long)k->ne[0]);
  if (k->ne[1] != v->ne[1] || k->ne[2] != v->ne[2])
    return fail("attention: k and v must have the same heads and length");
  if (k->ne[1] <= 0 || q->ne[1] % k->ne[1] != 0)
    return fail("attention: q heads (%lld) must be a multiple of kv heads (%lld)", (long long)q->ne[1],
                (long long)k->ne[1]);
  if (q->ne[3] != 1 || k->ne[3] != 1 || v->ne[3] != 1) return fail("attention: takes 3-D q, k and v");
  if (o->ne[0] != v->ne[0] || o->ne[1] != q->ne[1] || o->ne[2] != q->ne[2] || o->ne[3] != 1)
    return fail("attention: the output must be [hdv, nHead, nQ]");
  if (m->dtype == DType::I32) {
    if (m->ne[0] != 2 || m->ne[1] != q->ne[2] || m->ne[2] != 1 || m->ne[3] != 1)
      return fail("attention: spans must be I32 [2, nQ]");
  } else {
    if (m->dtype != DType::F32 && m->dtype != DType::F16)
      return fail("attention: the mask must be F32 or F16 (or spans I32), got %s", dtype_name(m->dtype));
    if (m->ne[0] != k->ne[2] || m->ne[1] < q->ne[2] || m->ne[2] != 1 || m->ne[3] != 1)
      return fail("attention: the mask must be [nKv, >= nQ] = [%lld, %lld], got [%lld, %lld, %lld, %lld]",
                  (long long)k->ne[2], (long long)q->ne[2], (long long)m->ne[0], (long long)m->ne[1],
                  (long long)m->ne[2], (long long)m->ne[3]);
  }
  return nullptr;
}

}  // namespace minfer::contract
