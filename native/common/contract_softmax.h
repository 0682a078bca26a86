// The contract of SOFTMAX (native/common/op_contract.h): a and the output F32 and of one shape,
// and an optional mask, F32 or F16, with a's row length and at least a's rows, broadcast over a's
// dims 2 and 3 (each of its dims 2 and 3 divides a's). Any strides, on every backend.
#pragma once
#include "op_contract.h"

namespace minfer::contract {

inline const char* check_softmax(const NodeView& args) {
  if (args.n_inputs < 1 || args.n_inputs > 2 || args.n_outputs != 1)
    return fail("softmax: takes 1 or 2 inputs and 1 output, got %d and %d", args.n_inputs, args.n_outputs);
  const Tensor *a = args.in[0], *o = args.out[0];
  if (const char* e = need_f32("softmax", "a", a)) return e;
  if (const char* e = need_f32("softmax", "the output", o)) return e;
  if (!same_shape(a, o)) return fail("softmax: the output must have a's shape");
  if (args.n_inputs == 2) {
    const Tensor* m = args.in[1];
    if (m->dtype != DType::F32 && m->dtype != DType::F16)
      return fail("softmax: the mask must be F32 or F16, got %s", program::dtype_name(m->dtype));
    if (m->ne[0] != a->ne[0] || m->ne[1] < a->ne[1] || m->ne[2] <= 0 || m->ne[3] <= 0 ||
        a->ne[2] % m->ne[2] != 0 || a->ne[3] % m->ne[3] != 0)
      return fail("softmax: the mask [%lld,%lld,%lld,%lld] does not cover a [%lld,%lld,%lld,%lld]",
                  (long long)m->ne[0], (long long)m->ne[1], (long long)m->ne[2], (long long)m->ne[3],
                  (long long)a->ne[0], (long long)a->ne[1], (long long)a->ne[2], (long long)a->ne[3]);
  }
  return nullptr;
}

}  // namespace minfer::contract
