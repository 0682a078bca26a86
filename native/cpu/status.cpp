#include "status.h"

namespace minfer::cpu {

const char* code_name(Code code) {
  switch (code) {
    case Code::Ok: return "OK";
    case Code::BadProgram: return "BAD_PROGRAM";
    case Code::UnsupportedOp: return "UNSUPPORTED_OP";
    case Code::UnsupportedShape: return "UNSUPPORTED_SHAPE";
    case Code::OutOfRange: return "OUT_OF_RANGE";
    case Code::NoKernel: return "NO_KERNEL";
    case Code::BadArgument: return "INVALID_ARGUMENT";
    case Code::Disposed: return "DISPOSED";
    case Code::Busy: return "BUSY";
    case Code::ReadOnly: return "READ_ONLY";
    case Code::IoError: return "IO_ERROR";
    case Code::OutOfMemory: return "OUT_OF_MEMORY";
    case Code::SimdUnavailable: return "SIMD_UNAVAILABLE";
    case Code::Internal: return "INTERNAL";
  }
  return "INTERNAL";
}

}  // namespace minfer::cpu
