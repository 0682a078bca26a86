// kernel.h's Registrar, find_kernel and registered_ops over the shared registry
// (native/common/kernel_registry.h).
#include "../common/kernel_registry.h"

#include <string>

#include "kernel.h"

namespace minfer::cuda {
namespace {

program::KernelRegistry<KernelDef>& registry() {
  static program::KernelRegistry<KernelDef> r;
  return r;
}

}  // namespace

Registrar::Registrar(program::Op op, const KernelDef& def) {
  registry().add("cuda", op, def, def.launch ? nullptr : "KernelDef.launch is null");
}

const KernelDef* find_kernel(program::Op op) { return registry().find(op); }

const char* registered_ops() {
  static std::string names;
  names = registry().names();
  return names.c_str();
}

}  // namespace minfer::cuda
