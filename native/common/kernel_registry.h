// The table of kernels by op behind each backend's Registrar and find_kernel. Registrars run during
// static initialisation of the addon, in no particular order, so a backend keeps its table in a
// function-local static. A registration that cannot be right (an op outside the vocabulary, a
// second kernel for an op, a definition the backend rejects) aborts with a message: it is a build
// error, found the first time the addon loads.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>

#include "op_info.h"

namespace minfer::program {

template <class Def>
class KernelRegistry {
 public:
  static constexpr int kMaxOpCode = 256;

  // Registers def for op. `invalid` is nullptr, or why the backend cannot use def.
  void add(const char* backend, Op op, const Def& def, const char* invalid) {
    const int code = static_cast<int>(op);
    if (code < 0 || code >= kMaxOpCode) failed(backend, op, "op code out of range");
    if (!op_info(code)) failed(backend, op, "op not in the vocabulary of program_format.h");
    if (invalid) failed(backend, op, invalid);
    if (present_[code]) failed(backend, op, "registered twice");
    defs_[code] = def;
    present_[code] = true;
  }

  // The kernel of an op, or nullptr when none is registered.
  const Def* find(Op op) const {
    const int code = static_cast<int>(op);
    if (code < 0 || code >= kMaxOpCode) return nullptr;
    return present_[code] ? &defs_[code] : nullptr;
  }

  // The names of the ops with a kernel, comma-separated, in the vocabulary's order.
  std::string names() const {
    std::string out;
    for (const OpInfo& info : kOps) {
      if (!find(info.op)) continue;
      if (!out.empty()) out += ",";
      out += info.name;
    }
    return out;
  }

 private:
  [[noreturn]] static void failed(const char* backend, Op op, const char* why) {
    std::fprintf(stderr, "minfer %s: cannot register a kernel for %s (op %d): %s\n", backend,
                 op_name(static_cast<int32_t>(op)), static_cast<int>(op), why);
    std::abort();
  }

  Def defs_[kMaxOpCode] = {};
  bool present_[kMaxOpCode] = {};
};

}  // namespace minfer::program
