// The op vocabulary as the executor validates it: name, parameter count and input/output counts
// of each op, taken from program_format.h's param::<OP>:: constants (op_table.cpp lists each op
// once; a new op in the generated header needs one line there).
#pragma once
#include "../common/program_format.h"

namespace minfer::cpu {

struct OpInfo {
  program::Op op;
  const char* name;
  int n_params;
  int min_inputs, max_inputs;
  int min_outputs, max_outputs;
};

// nullptr when `code` is not an op this build knows.
const OpInfo* op_info(int32_t code);

// The op's name, or "op <code>" for unknown codes (for messages).
const char* op_name(int32_t code);

}  // namespace minfer::cpu
