// The contract of ROPE (native/common/op_contract.h): a [headDim, nHead, nTokens, n3] and the
// output F32 and of one shape, positions I32 [nTokens] (one per token), mode 0 (normal) or 2
// (neox), nDims even, positive and at most headDim, and optional frequency factors F32
// [nDims/2]. Any strides, on every backend.
#pragma once
#include "op_contract.h"

namespace minfer::contract {

inline const char* check_rope(const NodeView& args) {
  namespace P = program::param::ROPE;
  if (args.n_inputs < 2 || args.n_inputs > 3 || args.n_outputs != 1)
    return fail("rope: takes 2 or 3 inputs and 1 output, got %d and %d", args.n_inputs, args.n_outputs);
  const Tensor *a = args.in[0], *pos = args.in[1], *o = args.out[0];
  if (const char* e = need_f32("rope", "a", a)) return e;
  if (const char* e = need_f32("rope", "the output", o)) return e;
  if (pos->dtype != DType::I32) return fail("rope: positions must be I32, got %s", program::dtype_name(pos->dtype));
  if (!same_shape(a, o)) return fail("rope: the output must have a's shape");
  const int mode = program::param_i32(args, P::mode), n_dims = program::param_i32(args, P::nDims);
  if (mode != 0 && mode != 2) return fail("rope: mode %d is neither 0 (normal) nor 2 (neox)", mode);
  if (n_dims <= 0 || n_dims % 2 != 0 || n_dims > a->ne[0])
    return fail("rope: nDims %d must be even, positive and at most the head size %lld", n_dims, (long long)a->ne[0]);
  if (pos->ne[0] != a->ne[2] || pos->ne[1] != 1 || pos->ne[2] != 1 || pos->ne[3] != 1)
    return fail("rope: takes one position per token: positions [%lld] for %lld tokens", (long long)pos->ne[0],
                (long long)a->ne[2]);
  if (args.n_inputs == 3) {
    const Tensor* ff = args.in[2];
    if (const char* e = need_f32("rope", "frequency factors", ff)) return e;
    if (ff->ne[0] != n_dims / 2 || ff->ne[1] != 1 || ff->ne[2] != 1 || ff->ne[3] != 1)
      return fail("rope: frequency factors must be [%d]", n_dims / 2);
  }
  return nullptr;
}

}  // namespace minfer::contract
