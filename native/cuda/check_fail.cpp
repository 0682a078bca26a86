// kernel.h's check_fail: a formatted refusal message in a thread-local buffer.
#include <cstdarg>
#include <cstdio>

#include "kernel.h"

namespace minfer::cuda {

const char* check_fail(const char* format, ...) {
  thread_local char buffer[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  return buffer;
}

}  // namespace minfer::cuda
