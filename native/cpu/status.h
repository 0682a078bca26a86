// Status values of the CPU backend's infrastructure (executor, buffers, features, pool).
// Every failure carries a stable code and a message; addon.cpp turns them into JavaScript errors
// with `code` at one choke point. Nothing here throws across the boundary.
#pragma once
#include <string>
#include <utility>

namespace minfer::cpu {

enum class Code : int {
  Ok = 0,
  BadProgram,        // the program bytes are malformed (magic, sizes, indices, strides, …)
  UnsupportedOp,     // an op code outside the vocabulary this build knows
  UnsupportedShape,  // a kernel refused the node's dtypes or shapes
  OutOfRange,        // a tensor or access outside its buffer (load time or data-dependent)
  NoKernel,          // a known op with no kernel registered
  BadArgument,       // a bad value from JavaScript (size, offset, option)
  Disposed,          // a disposed object was used
  Busy,              // refused while an execute holds the object
  ReadOnly,          // a write to a read-only (mapped) buffer
  IoError,           // open/stat/mmap failed
  OutOfMemory,       // allocation failed
  SimdUnavailable,   // a SIMD level above what this CPU and OS allow was forced
  Internal,          // a bug: an exception escaped a kernel, …
};

// "BAD_PROGRAM", "NO_KERNEL", …: the `code` JavaScript sees.
const char* code_name(Code code);

struct Status {
  Code code = Code::Ok;
  std::string message;

  bool ok() const { return code == Code::Ok; }
  static Status Ok() { return Status{}; }
  static Status Error(Code code, std::string message) { return Status{code, std::move(message)}; }
};

}  // namespace minfer::cpu
