// Loads (validates) and runs programs. Everything in a program comes from JavaScript and is
// checked before any kernel sees it: header, sizes, dtypes, buffer slots, byte spans against the
// actual buffers, ops, input/output/parameter counts, tensor indices, then each kernel's check.
// A failure is a Status naming the node index and op, never a crash.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../common/program_loader.h"
#include "kernel.h"
#include "status.h"
#include "thread_pool.h"

namespace minfer::cpu {

// One buffer slot as the executor sees it (native/common/program_loader.h).
using BufferBinding = program::BufferBinding;

// A validated program with its tensors resolved to memory.
class LoadedProgram {
 public:
  static Status load(const uint8_t* bytes, size_t length, const std::vector<BufferBinding>& buffers,
                     SimdLevel simd, int n_threads, LoadedProgram* out, bool panel_gemm = true);

  size_t n_nodes() const { return nodes_.size(); }
  // Bytes of the largest scratch area a node needs (nodes run one after another and share it).
  size_t scratch_bytes() const { return scratch_bytes_; }

 private:
  friend class Executor;
  std::vector<Tensor> tensors_;
  std::vector<NodeArgs> nodes_;
  std::vector<const KernelDef*> kernels_;
  std::vector<size_t> node_scratch_;
  std::vector<uint32_t> params_;  // kMaxParams words per node
  size_t scratch_bytes_ = 0;
};

// Validates a program against buffer sizes only (no memory): what supportsOp asks.
Status check_program(const uint8_t* bytes, size_t length, const std::vector<uint64_t>& buffer_sizes,
                     SimdLevel simd);

// Runs programs on a pool. One execute at a time (others wait on a mutex).
class Executor {
 public:
  Executor(int n_threads, SimdLevel simd, bool panel_gemm = true);
  int threads() const { return pool_.size(); }
  SimdLevel simd() const { return simd_; }
  bool panel_gemm() const { return panel_gemm_; }

  // Loads and runs; `node_micros` (when non-null) gets microseconds per node in program order.
  Status execute(const uint8_t* bytes, size_t length, const std::vector<BufferBinding>& buffers,
                 std::vector<double>* node_micros);

 private:
  std::mutex mu_;
  ThreadPool pool_;
  SimdLevel simd_;
  bool panel_gemm_;
  std::unique_ptr<uint8_t, void (*)(void*)> scratch_;
  size_t scratch_capacity_ = 0;
};

}  // namespace minfer::cpu
