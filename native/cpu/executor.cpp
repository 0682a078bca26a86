#include "executor.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "../common/program_loader.h"
#include "op_table.h"

namespace minfer::cpu {

namespace pf = program;

namespace {

Code load_code(pf::LoadCode c) {
  switch (c) {
    case pf::LoadCode::Ok: return Code::Ok;
    case pf::LoadCode::BadProgram: return Code::BadProgram;
    case pf::LoadCode::OutOfRange: return Code::OutOfRange;
    case pf::LoadCode::UnsupportedOp: return Code::UnsupportedOp;
  }
  return Code::Internal;
}

// The execute a pool thread is working for, for report_kernel_error.
struct RunContext {
  const LoadedProgram* program = nullptr;
  const std::vector<NodeArgs>* nodes = nullptr;
  const std::vector<const KernelDef*>* kernels = nullptr;
  ThreadPool* pool = nullptr;
  std::vector<double>* micros = nullptr;
  std::atomic<bool> failed{false};
  std::mutex mu;
  Status first;

  void fail(Code code, size_t node, const std::string& message) {
    std::lock_guard<std::mutex> lock(mu);
    if (!first.ok()) return;
    const int32_t op = static_cast<int32_t>((*nodes)[node].op);
    first = Status::Error(code, pf::node_prefix(node, op) + message);
    failed.store(true, std::memory_order_release);
  }
};

thread_local RunContext* tls_context = nullptr;
thread_local size_t tls_node = 0;

void run_task(void* p, int ith, int nth) {
  RunContext& c = *static_cast<RunContext*>(p);
  tls_context = &c;
  const auto& nodes = *c.nodes;
  const auto& kernels = *c.kernels;
  auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < nodes.size(); i++) {
    tls_node = i;
    const KernelDef* k = kernels[i];
    for (int phase = 0; phase < k->n_phases; phase++) {
      // Skip work after a failure but keep every barrier, so all threads stay in step.
      if (!c.failed.load(std::memory_order_acquire)) {
        try {
          k->run(nodes[i], phase, ith, nth);
        } catch (const std::exception& e) {
          c.fail(Code::Internal, i, std::string("kernel threw: ") + e.what());
        } catch (...) {
          c.fail(Code::Internal, i, "kernel threw a non-standard exception");
        }
      }
      c.pool->barrier();
    }
    if (c.micros && ith == 0) {
      const auto t1 = std::chrono::steady_clock::now();
      (*c.micros)[i] = std::chrono::duration<double, std::micro>(t1 - t0).count();
      t0 = t1;
    }
  }
  tls_context = nullptr;
}

}  // namespace

void report_kernel_error(const char* message) {
  RunContext* c = tls_context;
  if (!c) return;  // outside an execute (a kernel's check): nothing to fail
  c->fail(Code::OutOfRange, tls_node, message ? message : "kernel reported an error");
}

Status LoadedProgram::load(const uint8_t* bytes, size_t length, const std::vector<BufferBinding>& buffers,
                           SimdLevel simd, int n_threads, LoadedProgram* out, bool panel_gemm) {
  pf::ParsedProgram parsed;
  const pf::LoadResult r = pf::parse_program(bytes, length, buffers, &parsed);
  if (!r.ok()) return Status::Error(load_code(r.code), r.message);

  LoadedProgram p;
  p.tensors_ = std::move(parsed.tensors);
  const size_t n_nodes = parsed.nodes.size();
  p.nodes_.resize(n_nodes);
  p.kernels_.resize(n_nodes);
  p.node_scratch_.resize(n_nodes);
  p.params_.assign(n_nodes * pf::kMaxParams, 0);
  for (size_t i = 0; i < n_nodes; i++) {
    const pf::ParsedNode& n = parsed.nodes[i];
    NodeArgs& a = p.nodes_[i];
    a.op = n.op;
    a.n_inputs = n.n_inputs;
    a.n_outputs = n.n_outputs;
    for (int k = 0; k < pf::kMaxInputs; k++) a.in[k] = k < n.n_inputs ? &p.tensors_[n.inputs[k]] : nullptr;
    for (int k = 0; k < pf::kMaxOutputs; k++) a.out[k] = k < n.n_outputs ? &p.tensors_[n.outputs[k]] : nullptr;
    uint32_t* params = &p.params_[i * pf::kMaxParams];
    std::memcpy(params, n.params, sizeof n.params);
    a.params = params;
    a.scratch = nullptr;
    a.simd = simd;
    // (a batch-invariant program keeps every product on the dot kernels, whose sums for a column
    // do not depend on the column count; the panel GEMM's do)
    a.panel_gemm = panel_gemm && (parsed.flags & pf::kFlagBatchInvariant) == 0;

    const std::string who = pf::node_prefix(i, static_cast<int32_t>(n.op));
    const KernelDef* k = find_kernel(a.op);
    if (!k) return Status::Error(Code::NoKernel, who + "no CPU kernel is registered for this op");
    if (k->check) {
      const char* why = k->check(a);
      if (why) return Status::Error(Code::UnsupportedShape, who + why);
    }
    p.kernels_[i] = k;
    p.node_scratch_[i] = k->scratch_bytes ? k->scratch_bytes(a, n_threads) : 0;
    if (p.node_scratch_[i] > p.scratch_bytes_) p.scratch_bytes_ = p.node_scratch_[i];
  }
  *out = std::move(p);
  return Status::Ok();
}

Status check_program(const uint8_t* bytes, size_t length, const std::vector<uint64_t>& buffer_sizes,
                     SimdLevel simd) {
  std::vector<BufferBinding> buffers(buffer_sizes.size());
  for (size_t i = 0; i < buffers.size(); i++) buffers[i].size = buffer_sizes[i];
  LoadedProgram p;
  return LoadedProgram::load(bytes, length, buffers, simd, 1, &p);
}

Executor::Executor(int n_threads, SimdLevel simd, bool panel_gemm)
    : pool_(n_threads), simd_(simd), panel_gemm_(panel_gemm), scratch_(nullptr, std::free) {}

Status Executor::execute(const uint8_t* bytes, size_t length, const std::vector<BufferBinding>& buffers,
                         std::vector<double>* node_micros) {
  std::lock_guard<std::mutex> lock(mu_);
  LoadedProgram p;
  Status s = LoadedProgram::load(bytes, length, buffers, simd_, pool_.size(), &p, panel_gemm_);
  if (!s.ok()) return s;
  if (p.scratch_bytes_ > scratch_capacity_) {
    const size_t bytes_needed = (p.scratch_bytes_ + 63) / 64 * 64;
    scratch_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, bytes_needed)));
    scratch_capacity_ = scratch_ ? bytes_needed : 0;
    if (!scratch_) {
      return Status::Error(Code::OutOfMemory, "cannot allocate " + std::to_string(bytes_needed) + " bytes of scratch");
    }
  }
  for (size_t i = 0; i < p.nodes_.size(); i++) {
    if (p.node_scratch_[i] > 0) p.nodes_[i].scratch = scratch_.get();
  }
  if (node_micros) node_micros->assign(p.nodes_.size(), 0.0);
  if (p.nodes_.empty()) return Status::Ok();

  RunContext c;
  c.program = &p;
  c.nodes = &p.nodes_;
  c.kernels = &p.kernels_;
  c.pool = &pool_;
  c.micros = node_micros;
  pool_.run(run_task, &c);
  return c.first;
}

}  // namespace minfer::cpu
