// Generated from @minfer/ir (packages/ir/src/native-header.ts) by `pnpm --filter @minfer/ir gen:native`.
// Do not edit: change the TypeScript and regenerate. A test fails when the two differ.
// The op vocabulary as every backend's loader validates it: name, parameter count and
// input/output counts of each op, from program_format.h's param::<OP>:: constants.
#pragma once
#include "program_format.h"

namespace minfer::program {

struct OpInfo {
  Op op;
  const char* name;
  int n_params;
  int min_inputs, max_inputs;
  int min_outputs, max_outputs;
};

// Hidden: the CPU and CUDA addons share one process, and an exported inline variable is a
// STB_GNU_UNIQUE symbol that the dynamic loader binds process-wide (even for RTLD_LOCAL): the
// addon loaded first would lend its op table (input counts included) to the other.
#if defined(__GNUC__) || defined(__clang__)
#define MINFER_OPS_HIDDEN __attribute__((visibility("hidden")))
#else
#define MINFER_OPS_HIDDEN
#endif
#define MINFER_OP(NAME)                                                                    \
  OpInfo{Op::NAME, #NAME, param::NAME::kCount, param::NAME::kMinInputs, param::NAME::kMaxInputs, \
         param::NAME::kMinOutputs, param::NAME::kMaxOutputs}
MINFER_OPS_HIDDEN inline constexpr OpInfo kOps[] = {
    MINFER_OP(GET_ROWS),
    MINFER_OP(MUL_MAT),
    MINFER_OP(ADD),
    MINFER_OP(MUL),
    MINFER_OP(SCALE),
    MINFER_OP(RMS_NORM),
    MINFER_OP(NORM),
    MINFER_OP(ROPE),
    MINFER_OP(SOFTMAX),
    MINFER_OP(ATTENTION),
    MINFER_OP(SILU),
    MINFER_OP(GELU),
    MINFER_OP(SWIGLU),
    MINFER_OP(CPY),
    MINFER_OP(SET_ROWS),
    MINFER_OP(CONCAT),
    MINFER_OP(ARGSORT),
    MINFER_OP(TOP_K),
    MINFER_OP(MUL_MAT_ID),
    MINFER_OP(TANH),
    MINFER_OP(GEGLU),
    MINFER_OP(GELU_ERF),
    MINFER_OP(RMS_NORM_MUL),
    MINFER_OP(MUL_MAT_MULTI),
    MINFER_OP(MUL_MAT_ADD),
};
#undef MINFER_OP

// nullptr when `code` is not an op this build knows.
inline const OpInfo* op_info(int32_t code) {
  for (const OpInfo& info : kOps) {
    if (static_cast<int32_t>(info.op) == code) return &info;
  }
  return nullptr;
}

// The op's name, or "unknown op" for codes outside the vocabulary (for messages).
inline const char* op_name(int32_t code) {
  const OpInfo* info = op_info(code);
  return info ? info->name : "unknown op";
}

}  // namespace minfer::program
