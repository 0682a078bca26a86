// The contract between the CUDA executor and its kernels.
//
// Each kernel source file (native/cuda/ops/*.cu) registers the ops it implements:
//
//   static const Registrar add_kernel(program::Op::ADD, {check_add, no_scratch, launch_add});
//
// The executor parses and validates a program (native/common/program_loader.h; tensor `data`
// pointers are device addresses), calls `check` once per node when the program is loaded (a
// non-null message refuses the program with that message, the same text supportsOp explains),
// sizes one device scratch area shared by all nodes with `scratch_bytes`, then calls `launch` for
// each node in order. `launch` only enqueues work on `ctx.stream` (no synchronisation, no
// allocation, no host reads of device data: the sequence may be captured into a CUDA graph and
// replayed) and returns the first CUDA error it sees (cudaGetLastError after its launches).
// A kernel must not write outside its outputs and the scratch.
//
// Data-dependent violations (an index read from a tensor that is out of range) are reported from
// device code with report_error(ctx.err, ctx.node, detail): the kernel skips the offending work,
// and the executor fails the execute with "node N (OP): ... out of range" after the stream
// synchronises. Host code never clamps such an index.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../common/program_format.h"
#include "../common/op_contract.h"
#include "../common/program_loader.h"
#include "tuning.h"

namespace minfer::cuda {

using program::Tensor;

// The node (op, inputs, outputs, parameter words: native/common/op_contract.h) and what this
// backend's kernels need besides (nothing yet).
struct NodeArgs : program::NodeView {};

using program::param_f32;
using program::param_i32;

// The first data-dependent error of an execute, in device memory (zeroed before each execute).
struct DeviceError {
  int code;       // 0 = none; 1 = an index read from an input is out of range
  int node;       // the node that reported it
  long long detail;  // the offending value
};

struct LaunchContext {
  cudaStream_t stream;
  DeviceError* err;  // device pointer
  int node;          // this node's index in the program
  void* scratch;     // device scratch of at least scratch_bytes(args) bytes (nullptr when 0)
  int sm_count;      // multiprocessors of the device
  Tuning tuning;     // kernel variants chosen for this executor
  // Zeroed device counters a kernel may use to find the last of its blocks (each kernel leaves
  // them zero again: the executor allocates them once), and how many there are.
  unsigned* counters;
  int n_counters;
};

struct KernelDef {
  // nullptr when the kernel supports these dtypes, shapes and parameters, else a message naming
  // what it lacks (make it with check_fail).
  // The op contract (native/common/contract_*.h) first, then what this backend implements.
  const char* (*check)(const program::NodeView& args);
  // Bytes of device scratch the node needs (0 for none).
  size_t (*scratch_bytes)(const NodeArgs& args);
  // Enqueues the node's work; returns cudaSuccess or the first error.
  cudaError_t (*launch)(const NodeArgs& args, const LaunchContext& ctx);
};

// Registers `def` for `op` (at static-initialisation time). Registering an op twice aborts.
struct Registrar {
  Registrar(program::Op op, const KernelDef& def);
};

// The kernel of an op, or nullptr when none is registered.
const KernelDef* find_kernel(program::Op op);

// Names of the ops with a kernel (for diagnostics), comma-separated.
const char* registered_ops();

inline size_t no_scratch(const NodeArgs&) { return 0; }

// Fused launches (ops/fused.cu): a run of adjacent, already checked nodes that one kernel
// executes with the same results. fused_match returns how many nodes from `nodes` a fused kernel
// takes under tuning t (0: none; at most `available`); fused_launch enqueues it, ctx.node being the
// first node.
size_t fused_match(const NodeArgs* nodes, size_t available, const Tuning& t);
cudaError_t fused_launch(const NodeArgs* nodes, size_t count, const LaunchContext& ctx);
// Bytes of scratch a fused run needs (0: the largest of its nodes' own is enough).
size_t fused_scratch_bytes(const NodeArgs* nodes, size_t count);

// A printf-formatted message in a thread-local buffer, for `check` to return.
const char* check_fail(const char* format, ...) __attribute__((format(printf, 1, 2)));

#ifdef __CUDACC__
// Records the first data-dependent error of the execute (later ones are dropped).
__device__ inline void report_error(DeviceError* err, int node, long long detail) {
  if (atomicCAS(&err->code, 0, 1) == 0) {
    err->node = node;
    err->detail = detail;
  }
}
#endif

// True when a tensor's elements are contiguous (nb[0] = element or block size, each next dim
// packed right after the previous one).
inline bool is_contiguous(const Tensor& t) {
  const program::BlockLayout* b = program::block_layout(static_cast<int32_t>(t.dtype));
  if (!b) return false;
  int64_t want = b->type_size;
  if (t.nb[0] != want) return false;
  want *= t.ne[0] / b->block_size;
  for (int d = 1; d < 4; d++) {
    if (t.ne[d] > 1 && t.nb[d] != want) return false;
    want *= t.ne[d];
  }
  return true;
}

inline int64_t nelements(const Tensor& t) { return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]; }

// Whether the byte ranges two tensors' elements occupy intersect (strides are non-negative in
// programs; an element is one block for block types).
inline bool overlap(const Tensor& a, const Tensor& b) {
  auto range = [](const Tensor& t, uintptr_t* lo, uintptr_t* hi) {
    const program::BlockLayout* bl = program::block_layout(static_cast<int32_t>(t.dtype));
    uintptr_t span = static_cast<uintptr_t>(bl ? bl->type_size : 1);
    for (int d = 0; d < 4; d++)
      if (t.ne[d] > 1) span += static_cast<uintptr_t>((t.ne[d] - 1) * t.nb[d]);
    *lo = reinterpret_cast<uintptr_t>(t.data);
    *hi = *lo + span;
  };
  uintptr_t alo, ahi, blo, bhi;
  range(a, &alo, &ahi);
  range(b, &blo, &bhi);
  return alo < bhi && blo < ahi;
}

}  // namespace minfer::cuda
