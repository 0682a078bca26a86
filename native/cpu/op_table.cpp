#include "op_table.h"

namespace minfer::cpu {
namespace {

#define MINFER_OP(NAME)                                                                          \
  OpInfo {                                                                                       \
    program::Op::NAME, #NAME, program::param::NAME::kCount, program::param::NAME::kMinInputs,    \
        program::param::NAME::kMaxInputs, program::param::NAME::kMinOutputs,                     \
        program::param::NAME::kMaxOutputs                                                        \
  }

const OpInfo kOps[] = {
    MINFER_OP(GET_ROWS),   MINFER_OP(MUL_MAT),      MINFER_OP(ADD),           MINFER_OP(MUL),
    MINFER_OP(SCALE),      MINFER_OP(RMS_NORM),     MINFER_OP(NORM),          MINFER_OP(ROPE),
    MINFER_OP(SOFTMAX),    MINFER_OP(ATTENTION),    MINFER_OP(SILU),          MINFER_OP(GELU),
    MINFER_OP(SWIGLU),     MINFER_OP(CPY),          MINFER_OP(SET_ROWS),      MINFER_OP(CONCAT),
    MINFER_OP(ARGSORT),    MINFER_OP(TOP_K),        MINFER_OP(MUL_MAT_ID),    MINFER_OP(RMS_NORM_MUL),
    MINFER_OP(MUL_MAT_MULTI),
};

#undef MINFER_OP

}  // namespace

const OpInfo* op_info(int32_t code) {
  for (const OpInfo& info : kOps) {
    if (static_cast<int32_t>(info.op) == code) return &info;
  }
  return nullptr;
}

const char* op_name(int32_t code) {
  const OpInfo* info = op_info(code);
  return info ? info->name : "unknown op";
}

}  // namespace minfer::cpu
