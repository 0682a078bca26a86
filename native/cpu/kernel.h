// The contract between the CPU executor and its kernels.
//
// Each kernel source file registers the ops it implements with a static Registrar:
//
//   static const Registrar add_kernel(program::Op::ADD, {check_add, no_scratch, 1, run_add});
//
// The executor resolves a program's tensors to pointers (Tensor), calls `check` once per node
// when the program is loaded (a non-null message refuses the program with that message), sizes
// one scratch area per node with `scratch_bytes`, then runs each node on every pool thread:
// `run(args, phase, ith, nth)` for phase 0 .. n_phases-1 with a barrier between phases and
// between nodes. A kernel splits its work by `ith` of `nth` and must not write outside its
// outputs and its scratch.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../common/program_format.h"
#include "../common/op_contract.h"
#include "../common/program_loader.h"

namespace minfer::cpu {

// Instruction-set levels a kernel may use, chosen at run time from what the CPU and OS support
// (or forced lower for testing). Kernels fall back to their scalar code for levels they lack.
enum class SimdLevel : int { Scalar = 0, AVX2 = 1, AVX512 = 2, NEON = 3 };

// A program tensor resolved to memory: element [i0,i1,i2,i3] of a plain dtype is at
// data + i0*nb[0] + i1*nb[1] + i2*nb[2] + i3*nb[3]; for block dtypes nb[0] is the block size in bytes.
using Tensor = program::Tensor;

// The node (op, inputs, outputs, parameter words: native/common/op_contract.h) and what this
// backend's kernels need besides.
struct NodeArgs : program::NodeView {
  uint8_t* scratch;        // this node's scratch (same pointer on every thread), or nullptr
  SimdLevel simd;
  // False: products run on the dot-product kernels at every column count, never the panel GEMM
  // (the runtime's panelGemm option; slower prefill). With float weights a column's result is then
  // the same bits whatever the batch it runs in.
  bool panel_gemm = true;
};

using program::param_f32;
using program::param_i32;

struct KernelDef {
  // nullptr when the kernel supports these dtypes and shapes, else a message naming what it lacks.
  // The op contract (native/common/contract_*.h) first, then what this backend implements.
  const char* (*check)(const program::NodeView& args);
  // Bytes of scratch the node needs with `n_threads` threads (0 for none).
  size_t (*scratch_bytes)(const NodeArgs& args, int n_threads);
  int n_phases;
  void (*run)(const NodeArgs& args, int phase, int ith, int nth);
};

// Registers `def` for `op` (at static-initialisation time). Registering an op twice aborts.
struct Registrar {
  Registrar(program::Op op, const KernelDef& def);
};

// The kernel of an op, or nullptr when none is registered.
const KernelDef* find_kernel(program::Op op);

inline size_t no_scratch(const NodeArgs&, int) { return 0; }

// Kernels cannot return errors from `run`; data-dependent violations (an index from a tensor
// that is out of range) are reported here instead: the kernel skips the offending work and
// calls this, and the executor fails the whole execute with the first report ("OUT_OF_RANGE").
// Thread-safe; implemented by the executor.
void report_kernel_error(const char* message);

// Rows [start, end) of `n` that thread `ith` of `nth` takes.
inline void split_range(int64_t n, int ith, int nth, int64_t* start, int64_t* end) {
  const int64_t per = (n + nth - 1) / nth;
  *start = per * ith < n ? per * ith : n;
  *end = *start + per < n ? *start + per : n;
}

}  // namespace minfer::cpu
