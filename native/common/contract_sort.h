// The contract of ARGSORT and TOP_K (native/common/op_contract.h): a F32 in, I32 indices out, one
// row of the output per row (dims 1-3) of a. ARGSORT's output rows have a's length; TOP_K's have
// k entries, 1 <= k <= the row length. Rows are at most 2^31 - 1 long, so an index fits the I32.
#pragma once
#include "op_contract.h"

namespace minfer::contract {

// What ARGSORT and TOP_K share: one input and one output, a F32, the output I32 with a's rows.
inline const char* check_sort_rows(const NodeView& args, const char* op) {
  if (args.n_inputs != 1 || args.n_outputs != 1)
    return fail("%s: takes 1 input and 1 output, got %d and %d", op, args.n_inputs, args.n_outputs);
  if (const char* e = need_f32(op, "a", args.in[0])) return e;
  if (args.out[0]->dtype != DType::I32)
    return fail("%s: the output must be I32, got %s", op, program::dtype_name(args.out[0]->dtype));
  if (args.in[0]->ne[0] > INT32_MAX) return fail("%s: rows longer than 2^31 - 1", op);
  for (int i = 1; i < 4; i++)
    if (args.in[0]->ne[i] != args.out[0]->ne[i]) return fail("%s: the output must have a's rows", op);
  return nullptr;
}

// ARGSORT: the output a's shape (every index of each row).
inline const char* check_argsort(const NodeView& args) {
  if (const char* e = check_sort_rows(args, "argsort")) return e;
  if (args.out[0]->ne[0] != args.in[0]->ne[0]) return fail("argsort: the output must have a's shape");
  return nullptr;
}

// TOP_K: k (parameter k) between 1 and the row length, the output rows k long.
inline const char* check_top_k(const NodeView& args) {
  if (const char* e = check_sort_rows(args, "top_k")) return e;
  const int k = program::param_i32(args, program::param::TOP_K::k);
  if (k < 1 || k > args.in[0]->ne[0]) return fail("top_k: k = %d must be 1-%lld", k, (long long)args.in[0]->ne[0]);
  if (args.out[0]->ne[0] != k) return fail("top_k: the output rows must have k = %d entries", k);
  return nullptr;
}

}  // namespace minfer::contract
