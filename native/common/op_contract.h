// The op contract every backend shares: the node a kernel's `check` sees (NodeView), and the
// helpers the per-op contracts (contract_*.h) are written with. A contract checks input and output
// counts, shapes and layouts once for all backends; a backend's check adds only which dtypes and
// layouts its kernels implement (passed in as a capability, or checked after the contract).
//
// Each check returns nullptr when the node is acceptable, else a message naming the op and the
// problem (a static string or contract::fail's per-thread buffer, copied by the loader at once).
#pragma once
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "program_format.h"
#include "program_loader.h"

// Hidden: the CPU and CUDA addons share one process, and an exported inline function's static
// (fail's buffer) would be one process-wide object (see op_info.h).
#if defined(__GNUC__) || defined(__clang__)
#define MINFER_CONTRACT_HIDDEN __attribute__((visibility("hidden")))
#else
#define MINFER_CONTRACT_HIDDEN
#endif

namespace minfer::program {

// A node as its kernel's `check` sees it; each backend's NodeArgs extends it.
struct NodeView {
  Op op;
  int n_inputs;
  int n_outputs;
  const Tensor* in[kMaxInputs];
  const Tensor* out[kMaxOutputs];
  const uint32_t* params;  // raw parameter words, see param_i32/param_f32
};

inline int32_t param_i32(const NodeView& a, int i) {
  int32_t v;
  std::memcpy(&v, &a.params[i], 4);
  return v;
}
inline float param_f32(const NodeView& a, int i) {
  float v;
  std::memcpy(&v, &a.params[i], 4);
  return v;
}

}  // namespace minfer::program

namespace minfer::contract {

using program::DType;
using program::NodeView;
using program::Tensor;

// Formats a refusal into a per-thread buffer and returns it (valid until the next call on the
// same thread; the loader copies it right away).
MINFER_CONTRACT_HIDDEN inline const char* fail(const char* format, ...) __attribute__((format(printf, 1, 2)));
MINFER_CONTRACT_HIDDEN inline const char* fail(const char* format, ...) {
  static thread_local char buffer[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  return buffer;
}

inline bool same_shape(const Tensor* a, const Tensor* b) {
  for (int i = 0; i < 4; i++)
    if (a->ne[i] != b->ne[i]) return false;
  return true;
}

// "<op>: <what> must be F32, got <dtype>" unless t is F32.
inline const char* need_f32(const char* op, const char* what, const Tensor* t) {
  if (t->dtype != DType::F32) return fail("%s: %s must be F32, got %s", op, what, program::dtype_name(t->dtype));
  return nullptr;
}

// "<op>: takes N inputs and 1 output, got …" unless the node has n_in inputs and one output.
inline const char* check_counts(const char* op, const NodeView& a, int n_in) {
  if (a.n_inputs != n_in || a.n_outputs != 1)
    return fail("%s: takes %d inputs and 1 output, got %d and %d", op, n_in, a.n_inputs, a.n_outputs);
  return nullptr;
}

}  // namespace minfer::contract
