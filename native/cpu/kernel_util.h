// Small helpers shared by kernel sources: refusal messages for `check`.
#pragma once
#include <cstdio>

namespace minfer::cpu {

// Formats a `check` refusal into a per-thread buffer and returns it (valid until the next call on
// the same thread, which is how the executor uses it: copied right away).
template <typename... A>
const char* fail(const char* fmt, A... a) {
  static thread_local char msg[256];
  std::snprintf(msg, sizeof msg, fmt, a...);
  return msg;
}

}  // namespace minfer::cpu
