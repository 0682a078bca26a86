// The kernel registry behind kernel.h's Registrar and find_kernel. Registrars run during static
// initialisation of the addon, in no particular order, so the table is a function-local static.
#include <cstdio>
#include <cstdlib>

#include "kernel.h"
#include "op_table.h"

namespace minfer::cpu {
namespace {

constexpr int kMaxOpCode = 256;

struct Table {
  KernelDef defs[kMaxOpCode] = {};
  bool present[kMaxOpCode] = {};
};

Table& table() {
  static Table t;
  return t;
}

[[noreturn]] void registration_failed(program::Op op, const char* why) {
  std::fprintf(stderr, "minfer cpu: cannot register a kernel for %s (op %d): %s\n",
               op_name(static_cast<int32_t>(op)), static_cast<int>(op), why);
  std::abort();
}

}  // namespace

Registrar::Registrar(program::Op op, const KernelDef& def) {
  const int code = static_cast<int>(op);
  if (code < 0 || code >= kMaxOpCode) registration_failed(op, "op code out of range");
  if (!op_info(code)) registration_failed(op, "op not in the vocabulary of program_format.h/op_table.cpp");
  if (!def.run) registration_failed(op, "KernelDef.run is null");
  if (def.n_phases < 1) registration_failed(op, "KernelDef.n_phases must be at least 1");
  Table& t = table();
  if (t.present[code]) registration_failed(op, "registered twice");
  t.defs[code] = def;
  t.present[code] = true;
}

const KernelDef* find_kernel(program::Op op) {
  const int code = static_cast<int>(op);
  if (code < 0 || code >= kMaxOpCode) return nullptr;
  const Table& t = table();
  return t.present[code] ? &t.defs[code] : nullptr;
}

}  // namespace minfer::cpu
