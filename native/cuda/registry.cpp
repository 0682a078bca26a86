// The kernel registry behind kernel.h's Registrar and find_kernel. Registrars run during static
// initialisation of the addon, in no particular order, so the table is a function-local static.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "../common/op_info.h"
#include "kernel.h"

namespace minfer::cuda {
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
  std::fprintf(stderr, "minfer cuda: cannot register a kernel for %s (op %d): %s\n",
               program::op_name(static_cast<int32_t>(op)), static_cast<int>(op), why);
  std::abort();
}

}  // namespace

Registrar::Registrar(program::Op op, const KernelDef& def) {
  const int code = static_cast<int>(op);
  if (code < 0 || code >= kMaxOpCode) registration_failed(op, "op code out of range");
  if (!program::op_info(code)) registration_failed(op, "op not in the vocabulary of program_format.h");
  if (!def.launch) registration_failed(op, "KernelDef.launch is null");
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

const char* registered_ops() {
  static std::string names;
  names.clear();
  for (const program::OpInfo& info : program::kOps) {
    if (!find_kernel(info.op)) continue;
    if (!names.empty()) names += ",";
    names += info.name;
  }
  return names.c_str();
}

}  // namespace minfer::cuda
