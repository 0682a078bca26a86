// Loads (validates) and runs programs on one CUDA device, behind plain C++ (no CUDA types in this
// header, so addon.cpp stays host code). A program is parsed and checked by
// native/common/program_loader.h, every node's kernel checks its dtypes and shapes, then the
// kernels are enqueued on the executor's stream. A program that has run before with the same
// bytes and buffers is captured into a CUDA graph the second time and replayed from then on
// (unless made without graphs: MINFER_CUDA_GRAPHS=0 in JavaScript). Data-dependent errors reported by kernels fail the
// execute after the stream synchronises, naming the node.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../common/program_loader.h"
#include "tuning.h"

namespace minfer::cuda {

// Stable codes of a failed execute or check, as JavaScript sees them.
enum class ExecCode : int {
  Ok = 0,
  BadProgram,
  UnsupportedOp,
  UnsupportedShape,
  OutOfRange,
  NoKernel,
  OutOfMemory,
  CudaError,
};
const char* exec_code_name(ExecCode c);

struct ExecStatus {
  ExecCode code = ExecCode::Ok;
  std::string message;
  bool ok() const { return code == ExecCode::Ok; }
};

struct ExecStats {
  bool graph_replayed = false;  // this execute replayed a captured graph
  bool graph_captured = false;  // this execute captured one
  bool graph_failed = false;    // capture failed on this execute: it ran with direct launches
};

// Validates a program against buffer sizes only (no device, no memory): what supportsOp asks.
// With fused_runs, also lists the runs of nodes fused kernels would take, by their node counts in
// program order (kernel.h: fused_match).
ExecStatus check_program(const uint8_t* bytes, size_t length, const std::vector<uint64_t>& buffer_sizes,
                         std::vector<size_t>* fused_runs = nullptr, const Tuning& tuning = Tuning{});

class Executor {
 public:
  // Creates the stream and error record on `device`; `status` says whether that worked.
  Executor(int device, bool use_graphs, Tuning tuning, ExecStatus* status);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  int device() const { return device_; }

  // Validates, enqueues (or replays) and waits. `node_micros` (when non-null) gets microseconds
  // per node in program order, measured with events captured into a one-off graph with the nodes
  // (launched directly without graphs); a fused run's time goes to its first node. `id` (0: none)
  // names the program for launch(): the caller promises that one id always means the same bytes.
  ExecStatus execute(const uint8_t* bytes, size_t length, const std::vector<program::BufferBinding>& buffers,
                     std::vector<double>* node_micros, ExecStats* stats, uint64_t id = 0);

  // A host-to-device copy (the bytes are copied out of src during launch) and a device-to-host
  // copy into page-locked memory, checked against their buffers by the caller.
  struct Upload {
    void* dst;
    const void* src;
    size_t bytes;
  };
  struct Download {
    void* dst;
    const void* src;
    size_t bytes;
  };
  // The replay fast path, on the calling thread and without waiting: when program `id` (given to
  // execute before) has a captured graph over the same buffers, enqueues the uploads (through the
  // executor's page-locked staging), the graph, the downloads, the error record and an event, and
  // sets *launched. Otherwise (not captured yet, another run in flight, the executor busy) it does
  // nothing and *launched is false: the caller then writes, executes and reads as usual. A status
  // that is not ok is a CUDA failure of the enqueue.
  ExecStatus launch(uint64_t id, size_t length, const std::vector<program::BufferBinding>& buffers,
                    const std::vector<Upload>& uploads, const std::vector<Download>& downloads, bool* launched);
  // The launched run: false while it runs; true when it has finished (or failed), with *status
  // (data-dependent errors reported by kernels, as execute reports them). Only after launch.
  bool poll(ExecStatus* status);

  // Graphs captured and kept now, and totals since creation.
  size_t graphs_cached() const;
  uint64_t graph_replays() const { return replays_; }
  uint64_t graph_captures() const { return captures_; }
  // Replays that launch() enqueued on the caller's thread (also counted in graph_replays).
  uint64_t launches() const { return launches_; }
  // Programs whose capture failed (they launch directly), and the last capture error.
  uint64_t graph_failures() const { return graph_failures_; }
  // Fused runs of nodes (kernel.h: fused_match) in the programs loaded so far (MINFER_CUDA_FUSE=0: 0).
  uint64_t fused_runs() const { return fused_runs_; }
  // With Tuning::step_times: executes timed, and their summed GPU time (first node to last),
  // host time inside execute, and host time until the launch was enqueued (microseconds).
  // Of them, the replays launch() enqueued, with the GPU time of their uploads (from before the
  // first to the graph's start) and of their downloads (from the graph's end to after the last);
  // and of launch()'s host time, that until the graph's launch (checks, staging, the uploads
  // enqueued) and that in cudaGraphLaunch.
  struct StepTimes {
    uint64_t runs = 0, replays = 0;
    double gpu_us = 0, execute_us = 0, launch_us = 0, upload_us = 0, download_us = 0;
    double upload_enqueue_us = 0, graph_launch_us = 0;
  };
  StepTimes step_times() const {
    std::lock_guard<std::mutex> lock(times_mu_);
    return times_;
  }
  std::string last_graph_error() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_graph_error_;
  }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int device_;
  mutable std::mutex mu_;
  mutable std::mutex times_mu_;
  StepTimes times_;
  uint64_t replays_ = 0;
  uint64_t captures_ = 0;
  uint64_t launches_ = 0;
  uint64_t graph_failures_ = 0;
  uint64_t fused_runs_ = 0;
  std::string last_graph_error_;
};

}  // namespace minfer::cuda
