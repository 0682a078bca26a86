// The op vocabulary (native/common/op_info.h), under the CPU backend's namespace.
#pragma once
#include "../common/op_info.h"

namespace minfer::cpu {

using program::OpInfo;
using program::op_info;
using program::op_name;

}  // namespace minfer::cpu
