// The contract of the element-wise ops (native/common/op_contract.h): ADD and MUL (b broadcast
// over a by ggml's rule: b.ne[i] divides a.ne[i]), the unary SCALE, SILU, GELU, TANH and GELU_ERF,
// and the gated SWIGLU and GEGLU (act(gate) * up). All F32, any strides, on every backend.
#pragma once
#include "op_contract.h"

namespace minfer::contract {

// ADD, MUL: a, b and the output F32, b broadcast over a, the output a's shape.
inline const char* check_binary(const NodeView& args, const char* op) {
  if (const char* e = check_counts(op, args, 2)) return e;
  const Tensor *a = args.in[0], *b = args.in[1], *o = args.out[0];
  if (const char* e = need_f32(op, "a", a)) return e;
  if (const char* e = need_f32(op, "b", b)) return e;
  if (const char* e = need_f32(op, "the output", o)) return e;
  for (int i = 0; i < 4; i++) {
    if (b->ne[i] <= 0 || a->ne[i] % b->ne[i] != 0)
      return fail("%s: b [%lld,%lld,%lld,%lld] does not broadcast over a [%lld,%lld,%lld,%lld]", op,
                  (long long)b->ne[0], (long long)b->ne[1], (long long)b->ne[2], (long long)b->ne[3],
                  (long long)a->ne[0], (long long)a->ne[1], (long long)a->ne[2], (long long)a->ne[3]);
  }
  if (!same_shape(a, o)) return fail("%s: the output must have a's shape", op);
  return nullptr;
}
inline const char* check_add(const NodeView& a) { return check_binary(a, "add"); }
inline const char* check_mul(const NodeView& a) { return check_binary(a, "mul"); }

// SCALE, SILU, GELU, TANH, GELU_ERF: a and the output F32, of one shape.
inline const char* check_unary(const NodeView& args, const char* op) {
  if (const char* e = check_counts(op, args, 1)) return e;
  if (const char* e = need_f32(op, "a", args.in[0])) return e;
  if (const char* e = need_f32(op, "the output", args.out[0])) return e;
  if (!same_shape(args.in[0], args.out[0])) return fail("%s: the output must have a's shape", op);
  return nullptr;
}
inline const char* check_scale(const NodeView& a) { return check_unary(a, "scale"); }
inline const char* check_silu(const NodeView& a) { return check_unary(a, "silu"); }
inline const char* check_gelu(const NodeView& a) { return check_unary(a, "gelu"); }
inline const char* check_tanh(const NodeView& a) { return check_unary(a, "tanh"); }
inline const char* check_gelu_erf(const NodeView& a) { return check_unary(a, "gelu_erf"); }

// SWIGLU (kGelu false), GEGLU (true): gate, up and the output F32, of one shape.
template <bool kGelu>
inline const char* check_gated(const NodeView& args) {
  const char* op = kGelu ? "geglu" : "swiglu";
  if (const char* e = check_counts(op, args, 2)) return e;
  if (const char* e = need_f32(op, "gate", args.in[0])) return e;
  if (const char* e = need_f32(op, "up", args.in[1])) return e;
  if (const char* e = need_f32(op, "the output", args.out[0])) return e;
  if (!same_shape(args.in[0], args.in[1])) return fail("%s: gate and up must have the same shape", op);
  if (!same_shape(args.in[0], args.out[0])) return fail("%s: the output must have gate's shape", op);
  return nullptr;
}

}  // namespace minfer::contract
