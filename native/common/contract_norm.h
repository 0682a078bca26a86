// The contract of the row normalisations (native/common/op_contract.h): RMS_NORM and NORM (one
// input) and RMS_NORM_MUL (a and a weight w broadcast over a's rows by ggml's rule, with
// w.ne[0] == a.ne[0]). All F32, any strides, on every backend.
#pragma once
#include "op_contract.h"

namespace minfer::contract {

// What all three share: n_in inputs, a and the output F32 and of one shape, and rows that are not
// empty (a row's mean divides by its length).
inline const char* check_norm_rows(const NodeView& args, const char* op, int n_in) {
  if (const char* e = check_counts(op, args, n_in)) return e;
  const Tensor *a = args.in[0], *o = args.out[0];
  if (const char* e = need_f32(op, "a", a)) return e;
  if (const char* e = need_f32(op, "the output", o)) return e;
  if (!same_shape(a, o)) return fail("%s: the output must have a's shape", op);
  if (a->ne[0] < 1) return fail("%s: rows must not be empty", op);
  return nullptr;
}
inline const char* check_rms_norm(const NodeView& a) { return check_norm_rows(a, "rms_norm", 1); }
inline const char* check_norm(const NodeView& a) { return check_norm_rows(a, "norm", 1); }

// RMS_NORM_MUL: the rows' rule, and the weight F32, one row as long as a's, repeated over a's
// other dims (each of its dims 1..3 divides a's).
inline const char* check_rms_norm_mul(const NodeView& args) {
  if (const char* e = check_norm_rows(args, "rms_norm_mul", 2)) return e;
  const Tensor *a = args.in[0], *w = args.in[1];
  if (const char* e = need_f32("rms_norm_mul", "the weight", w)) return e;
  if (w->ne[0] != a->ne[0]) return fail("rms_norm_mul: the weight must match a's rows");
  for (int i = 1; i < 4; i++)
    if (w->ne[i] <= 0 || a->ne[i] % w->ne[i] != 0)
      return fail("rms_norm_mul: the weight does not broadcast over a in dim %d", i);
  return nullptr;
}

}  // namespace minfer::contract
