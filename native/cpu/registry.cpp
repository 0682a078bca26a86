// kernel.h's Registrar and find_kernel over the shared registry (native/common/kernel_registry.h).
#include "../common/kernel_registry.h"

#include "kernel.h"

namespace minfer::cpu {
namespace {

program::KernelRegistry<KernelDef>& registry() {
  static program::KernelRegistry<KernelDef> r;
  return r;
}

const char* invalid(const KernelDef& def) {
  if (!def.run) return "KernelDef.run is null";
  if (def.n_phases < 1) return "KernelDef.n_phases must be at least 1";
  return nullptr;
}

}  // namespace

Registrar::Registrar(program::Op op, const KernelDef& def) { registry().add("cpu", op, def, invalid(def)); }

const KernelDef* find_kernel(program::Op op) { return registry().find(op); }

}  // namespace minfer::cpu
