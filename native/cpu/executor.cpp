#include "executor.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "op_table.h"

namespace minfer::cpu {

namespace pf = program;

namespace {

const pf::BlockLayout* block_layout(int32_t dtype) {
  for (const pf::BlockLayout& b : pf::kBlockLayouts) {
    if (b.dtype == dtype) return &b;
  }
  return nullptr;
}

std::string str(int64_t v) { return std::to_string(v); }

Status bad(const std::string& message) { return Status::Error(Code::BadProgram, message); }

std::string node_prefix(size_t i, int32_t op) {
  return "node " + std::to_string(i) + " (" + op_name(op) + "): ";
}

// Bytes from the tensor's first byte to one past its last: sum over dims of (n-1)*nb plus one
// element (or block). False on overflow.
bool byte_span(const pf::TensorRecord& t, const pf::BlockLayout& b, int64_t* span) {
  for (int i = 0; i < 4; i++) {
    if (t.ne[i] == 0) {
      *span = 0;
      return true;
    }
  }
  int64_t last = b.type_size;
  for (int i = 0; i < 4; i++) {
    const int64_t n = i == 0 ? t.ne[0] / b.block_size : t.ne[i];
    int64_t step;
    if (__builtin_mul_overflow(n - 1, t.nb[i], &step) || __builtin_add_overflow(last, step, &last)) return false;
  }
  *span = last;
  return true;
}

Status load_tensor(size_t i, const pf::TensorRecord& t, const std::vector<BufferBinding>& buffers,
                   Tensor* out) {
  const std::string who = "tensor " + std::to_string(i) + ": ";
  const pf::BlockLayout* b = block_layout(t.dtype);
  if (!b) return bad(who + "unknown dtype id " + str(t.dtype));
  if (t.buffer < 0 || static_cast<size_t>(t.buffer) >= buffers.size()) {
    return bad(who + "buffer slot " + str(t.buffer) + " is not one of the program's " +
               std::to_string(buffers.size()) + " slots");
  }
  if (t.offset < 0) return bad(who + "negative byte offset " + str(t.offset));
  int64_t numel = 1;
  for (int d = 0; d < 4; d++) {
    if (t.ne[d] < 0) return bad(who + "negative ne[" + std::to_string(d) + "] = " + str(t.ne[d]));
    if (t.nb[d] < 0) return bad(who + "negative nb[" + std::to_string(d) + "] = " + str(t.nb[d]));
    if (__builtin_mul_overflow(numel, t.ne[d], &numel)) return bad(who + "element count overflows");
  }
  if (b->block_size > 1) {
    if (t.ne[0] % b->block_size != 0) {
      return bad(who + "ne[0] = " + str(t.ne[0]) + " is not a whole number of " + str(b->block_size) +
                 "-element blocks");
    }
    if (t.nb[0] != b->type_size) {
      return bad(who + "nb[0] = " + str(t.nb[0]) + " must be the block size in bytes (" + str(b->type_size) + ")");
    }
  }
  int64_t span = 0;
  int64_t end = 0;
  if (!byte_span(t, *b, &span) || __builtin_add_overflow(t.offset, span, &end)) {
    return bad(who + "byte span overflows");
  }
  const BufferBinding& buf = buffers[t.buffer];
  if (static_cast<uint64_t>(end) > buf.size) {
    return Status::Error(Code::OutOfRange, who + "bytes " + str(t.offset) + ".." + str(end) +
                                               " are outside buffer slot " + str(t.buffer) + " (" +
                                               std::to_string(buf.size) + " bytes)");
  }
  out->dtype = static_cast<pf::DType>(t.dtype);
  out->data = buf.data ? buf.data + t.offset : nullptr;
  for (int d = 0; d < 4; d++) {
    out->ne[d] = t.ne[d];
    out->nb[d] = t.nb[d];
  }
  return Status::Ok();
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
    first = Status::Error(code, node_prefix(node, op) + message);
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
                           SimdLevel simd, int n_threads, LoadedProgram* out) {
  if (!bytes || length < static_cast<size_t>(pf::kHeaderBytes)) {
    return bad("a program of " + std::to_string(length) + " bytes is shorter than its " +
               std::to_string(pf::kHeaderBytes) + "-byte header");
  }
  pf::Header h;
  std::memcpy(&h, bytes, sizeof h);
  if (h.magic != pf::kMagic) return bad("not a program (bad magic)");
  if (h.version != pf::kVersion) {
    return bad("program version " + std::to_string(h.version) + "; this build reads version " +
               std::to_string(pf::kVersion));
  }
  if (h.tensor_record_bytes != static_cast<uint32_t>(pf::kTensorRecordBytes) ||
      h.node_record_bytes != static_cast<uint32_t>(pf::kNodeRecordBytes) || h.reserved != 0) {
    return bad("record sizes " + std::to_string(h.tensor_record_bytes) + "/" + std::to_string(h.node_record_bytes) +
               " (reserved " + std::to_string(h.reserved) + ") do not match this build's " +
               std::to_string(pf::kTensorRecordBytes) + "/" + std::to_string(pf::kNodeRecordBytes) + " (0)");
  }
  const uint64_t expected = uint64_t{pf::kHeaderBytes} + uint64_t{8} * h.n_buffers +
                            uint64_t{pf::kTensorRecordBytes} * h.n_tensors +
                            uint64_t{pf::kNodeRecordBytes} * h.n_nodes;
  if (expected != length) {
    return bad("header counts (" + std::to_string(h.n_buffers) + " buffers, " + std::to_string(h.n_tensors) +
               " tensors, " + std::to_string(h.n_nodes) + " nodes) need " + std::to_string(expected) +
               " bytes; the program has " + std::to_string(length));
  }
  if (h.n_buffers != buffers.size()) {
    return bad("the program has " + std::to_string(h.n_buffers) + " buffer slots but " +
               std::to_string(buffers.size()) + " buffers were passed");
  }
  const uint8_t* at = bytes + pf::kHeaderBytes;
  for (uint32_t i = 0; i < h.n_buffers; i++, at += 8) {
    int64_t need;
    std::memcpy(&need, at, 8);
    if (need < 0) return bad("buffer slot " + std::to_string(i) + " declares a negative size");
    if (static_cast<uint64_t>(need) > buffers[i].size) {
      return Status::Error(Code::OutOfRange, "buffer slot " + std::to_string(i) + ": the program needs " +
                                                 str(need) + " bytes, the buffer has " +
                                                 std::to_string(buffers[i].size));
    }
  }

  LoadedProgram p;
  p.tensors_.resize(h.n_tensors);
  std::vector<int32_t> tensor_slot(h.n_tensors);
  for (uint32_t i = 0; i < h.n_tensors; i++, at += pf::kTensorRecordBytes) {
    pf::TensorRecord t;
    std::memcpy(&t, at, sizeof t);
    Status s = load_tensor(i, t, buffers, &p.tensors_[i]);
    if (!s.ok()) return s;
    tensor_slot[i] = t.buffer;
  }

  p.nodes_.resize(h.n_nodes);
  p.kernels_.resize(h.n_nodes);
  p.node_scratch_.resize(h.n_nodes);
  p.params_.assign(size_t{h.n_nodes} * pf::kMaxParams, 0);
  for (uint32_t i = 0; i < h.n_nodes; i++, at += pf::kNodeRecordBytes) {
    pf::NodeRecord n;
    std::memcpy(&n, at, sizeof n);
    const OpInfo* info = op_info(n.op);
    if (!info) {
      return Status::Error(Code::UnsupportedOp, "node " + std::to_string(i) + ": op code " + str(n.op) +
                                                    " is not an op this build knows");
    }
    const std::string who = node_prefix(i, n.op);
    if (n.n_inputs < info->min_inputs || n.n_inputs > info->max_inputs) {
      return bad(who + std::to_string(n.n_inputs) + " inputs; the op takes " + std::to_string(info->min_inputs) +
                 ".." + std::to_string(info->max_inputs));
    }
    if (n.n_outputs < info->min_outputs || n.n_outputs > info->max_outputs) {
      return bad(who + std::to_string(n.n_outputs) + " outputs; the op takes " +
                 std::to_string(info->min_outputs) + ".." + std::to_string(info->max_outputs));
    }
    if (n.n_params != info->n_params) {
      return bad(who + std::to_string(n.n_params) + " parameters; the op takes " + std::to_string(info->n_params));
    }
    NodeArgs& a = p.nodes_[i];
    a.op = static_cast<pf::Op>(n.op);
    a.n_inputs = n.n_inputs;
    a.n_outputs = n.n_outputs;
    for (int k = 0; k < pf::kMaxInputs; k++) a.in[k] = nullptr;
    for (int k = 0; k < pf::kMaxOutputs; k++) a.out[k] = nullptr;
    for (int k = 0; k < n.n_inputs; k++) {
      const int32_t t = n.inputs[k];
      if (t < 0 || static_cast<uint32_t>(t) >= h.n_tensors) {
        return bad(who + "input " + std::to_string(k) + " is tensor " + str(t) + " of " + std::to_string(h.n_tensors));
      }
      a.in[k] = &p.tensors_[t];
    }
    for (int k = 0; k < n.n_outputs; k++) {
      const int32_t t = n.outputs[k];
      if (t < 0 || static_cast<uint32_t>(t) >= h.n_tensors) {
        return bad(who + "output " + std::to_string(k) + " is tensor " + str(t) + " of " +
                   std::to_string(h.n_tensors));
      }
      if (buffers[tensor_slot[t]].read_only) {
        return bad(who + "output " + std::to_string(k) + " (tensor " + str(t) + ") is in read-only buffer slot " +
                   str(tensor_slot[t]));
      }
      a.out[k] = &p.tensors_[t];
    }
    uint32_t* params = &p.params_[size_t{i} * pf::kMaxParams];
    std::memcpy(params, n.params, sizeof n.params);
    a.params = params;
    a.scratch = nullptr;
    a.simd = simd;

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

Executor::Executor(int n_threads, SimdLevel simd) : pool_(n_threads), simd_(simd), scratch_(nullptr, std::free) {}

Status Executor::execute(const uint8_t* bytes, size_t length, const std::vector<BufferBinding>& buffers,
                         std::vector<double>* node_micros) {
  std::lock_guard<std::mutex> lock(mu_);
  LoadedProgram p;
  Status s = LoadedProgram::load(bytes, length, buffers, simd_, pool_.size(), &p);
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
