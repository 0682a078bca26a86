// The CUDA executor (executor.h): validation, kernel launch, CUDA graph capture and replay,
// data-dependent error reporting. Every CUDA status is checked and named.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <list>
#include <memory>
#include <string>
#include <tuple>

#include "device.h"
#include "executor.h"
#include "kernel.h"
#include "pdl.cuh"

namespace minfer::cuda {

namespace pf = program;

bool& pdl_on() {
  static thread_local bool on = false;
  return on;
}

const char* exec_code_name(ExecCode c) {
  switch (c) {
    case ExecCode::Ok: return "OK";
    case ExecCode::BadProgram: return "BAD_PROGRAM";
    case ExecCode::UnsupportedOp: return "UNSUPPORTED_OP";
    case ExecCode::UnsupportedShape: return "UNSUPPORTED_SHAPE";
    case ExecCode::OutOfRange: return "OUT_OF_RANGE";
    case ExecCode::NoKernel: return "NO_KERNEL";
    case ExecCode::OutOfMemory: return "OUT_OF_MEMORY";
    case ExecCode::CudaError: return "CUDA_ERROR";
  }
  return "INTERNAL";
}

namespace {

ExecStatus err(ExecCode code, std::string message) { return ExecStatus{code, std::move(message)}; }

ExecStatus cuda_fail(const char* what, cudaError_t e) {
  return err(e == cudaErrorMemoryAllocation ? ExecCode::OutOfMemory : ExecCode::CudaError,
             std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

#define MINFER_EXEC_TRY(call)                         \
  do {                                                \
    const cudaError_t e_ = (call);                    \
    if (e_ != cudaSuccess) return cuda_fail(#call, e_); \
  } while (0)

ExecCode from_load(pf::LoadCode c) {
  switch (c) {
    case pf::LoadCode::Ok: return ExecCode::Ok;
    case pf::LoadCode::BadProgram: return ExecCode::BadProgram;
    case pf::LoadCode::OutOfRange: return ExecCode::OutOfRange;
    case pf::LoadCode::UnsupportedOp: return ExecCode::UnsupportedOp;
  }
  return ExecCode::BadProgram;
}

// A program resolved to kernels: its tensors, node arguments, kernels and scratch need.
struct Loaded {
  pf::ParsedProgram parsed;
  std::vector<NodeArgs> args;
  std::vector<const KernelDef*> kernels;
  std::vector<uint8_t> fused;  // at the first node of a fused run: its length (else 0)
  size_t scratch = 0;
  // PROGRAM_FLAG_BATCH_INVARIANT: its launches run under batch_invariant_tuning (tuning.h)
  bool invariant = false;
};

ExecStatus load(const uint8_t* bytes, size_t length, const std::vector<pf::BufferBinding>& buffers, Loaded* out,
                const Tuning* fuse = nullptr) {
  const pf::LoadResult r = pf::parse_program(bytes, length, buffers, &out->parsed);
  if (!r.ok()) return err(from_load(r.code), r.message);
  out->invariant = (out->parsed.flags & pf::kFlagBatchInvariant) != 0;
  const size_t n = out->parsed.nodes.size();
  out->args.resize(n);
  out->kernels.resize(n);
  for (size_t i = 0; i < n; i++) {
    const pf::ParsedNode& p = out->parsed.nodes[i];
    NodeArgs& a = out->args[i];
    a.op = p.op;
    a.n_inputs = p.n_inputs;
    a.n_outputs = p.n_outputs;
    for (int k = 0; k < pf::kMaxInputs; k++) a.in[k] = k < p.n_inputs ? &out->parsed.tensors[p.inputs[k]] : nullptr;
    for (int k = 0; k < pf::kMaxOutputs; k++)
      a.out[k] = k < p.n_outputs ? &out->parsed.tensors[p.outputs[k]] : nullptr;
    a.params = p.params;
    const std::string who = pf::node_prefix(i, static_cast<int32_t>(p.op));
    const KernelDef* k = find_kernel(p.op);
    if (!k) return err(ExecCode::NoKernel, who + "no CUDA kernel is registered for this op");
    if (k->check) {
      if (const char* why = k->check(a)) return err(ExecCode::UnsupportedShape, who + why);
    }
    out->kernels[i] = k;
    const size_t s = k->scratch_bytes ? k->scratch_bytes(a) : 0;
    if (s > out->scratch) out->scratch = s;
  }
  out->fused.assign(n, 0);
  if (fuse) {
    const Tuning t = out->invariant ? batch_invariant_tuning(*fuse) : *fuse;
    for (size_t i = 0; i < n;) {
      const size_t run = fused_match(&out->args[i], n - i, t);
      out->fused[i] = static_cast<uint8_t>(run);
      if (run > 1) out->scratch = std::max(out->scratch, fused_scratch_bytes(&out->args[i], run));
      i += run > 1 ? run : 1;
    }
  }
  return ExecStatus{};
}

// A 64-bit hash of a program's bytes and its buffer bindings, eight bytes at a time (a decode
// program is tens of kilobytes and is hashed every step).
uint64_t hash_bytes(uint64_t h, const void* data, size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  for (; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

}  // namespace

ExecStatus check_program(const uint8_t* bytes, size_t length, const std::vector<uint64_t>& buffer_sizes,
                         std::vector<size_t>* fused_runs, const Tuning& tuning) {
  std::vector<pf::BufferBinding> buffers(buffer_sizes.size());
  for (size_t i = 0; i < buffers.size(); i++) {
    buffers[i].size = buffer_sizes[i];
    // Distinct, far-apart stand-in addresses, never dereferenced: fusion's overlap tests use them.
    buffers[i].data = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(i + 1) << 40);
  }
  Loaded l;
  const ExecStatus s = load(bytes, length, buffers, &l, fused_runs != nullptr && tuning.fuse ? &tuning : nullptr);
  if (s.ok() && fused_runs) {
    fused_runs->clear();
    for (uint8_t run : l.fused)
      if (run > 1) fused_runs->push_back(run);
  }
  return s;
}

struct Executor::Impl {
  int device = 0;
  bool use_graphs = true;
  cudaStream_t stream = nullptr;
  DeviceError* err_dev = nullptr;
  DeviceError* err_host = nullptr;  // pinned
  void* scratch = nullptr;
  size_t scratch_capacity = 0;
  std::vector<void*> retired;  // earlier scratch allocations, still addressed by captured graphs
  int sm_count = 0;
  int cc_major = 0;
  Tuning tuning;
  cudaEvent_t time0 = nullptr, time1 = nullptr;  // Tuning::step_times: around an execute's launches
  // launch()'s own state: its run in flight, its error record, events and upload staging.
  bool inflight = false;
  const Loaded* inflight_program = nullptr;
  DeviceError* fast_err = nullptr;  // pinned
  cudaEvent_t fast_done = nullptr, fast_t0 = nullptr, fast_t1 = nullptr;
  // Tuning::step_times: before the uploads and after the downloads (fast_done takes no time)
  cudaEvent_t fast_u0 = nullptr, fast_d1 = nullptr;
  std::chrono::steady_clock::time_point fast_host0;
  uint8_t* staging = nullptr;  // pinned
  size_t staging_capacity = 0;
  static constexpr int kCounters = 16384;
  unsigned* counters = nullptr;  // LaunchContext::counters, zeroed once

  // A program seen before: its bytes and buffers (the key), runs, and its graph once captured.
  struct Entry {
    uint64_t hash = 0;
    std::vector<uint8_t> bytes;
    std::vector<uint64_t> buffers;  // data pointer and size of each slot
    int runs = 0;
    std::unique_ptr<Loaded> loaded;  // parsed and checked once: a replay skips both
    cudaGraphExec_t exec = nullptr;
    bool no_graph = false;  // capture failed once: this program launches directly from now on
    uint64_t id = 0;        // the caller's name for the program (execute's id), 0: none
  };
  std::list<Entry> entries;  // most recently used first
  static constexpr size_t kMaxEntries = 64;

  void drop_graphs() {
    for (Entry& e : entries) {
      if (e.exec) cudaGraphExecDestroy(e.exec);
    }
    entries.clear();
  }

  ~Impl() {
    cudaSetDevice(device);
    if (stream) cudaStreamSynchronize(stream);
    drop_graphs();
    if (scratch) cudaFree(scratch);
    for (void* p : retired) cudaFree(p);
    if (err_dev) cudaFree(err_dev);
    if (counters) cudaFree(counters);
    if (err_host) cudaFreeHost(err_host);
    if (fast_err) cudaFreeHost(fast_err);
    if (staging) cudaFreeHost(staging);
    if (fast_done) cudaEventDestroy(fast_done);
    if (fast_t0) cudaEventDestroy(fast_t0);
    if (fast_t1) cudaEventDestroy(fast_t1);
    if (fast_u0) cudaEventDestroy(fast_u0);
    if (fast_d1) cudaEventDestroy(fast_d1);
    if (time0) cudaEventDestroy(time0);
    if (time1) cudaEventDestroy(time1);
    if (stream) cudaStreamDestroy(stream);
  }

  // Enqueues every node (the error record reset first). `events` (optional) gets one event
  // recorded before the first node and after each node; `external`: as event nodes of a graph
  // being captured.
  ExecStatus enqueue(const Loaded& l, const std::vector<cudaEvent_t>* events, bool external = false) {
    auto record = [&](cudaEvent_t e) {
      return external ? cudaEventRecordWithFlags(e, stream, cudaEventRecordExternal) : cudaEventRecord(e, stream);
    };
    MINFER_EXEC_TRY(cudaMemsetAsync(err_dev, 0, sizeof(DeviceError), stream));
    if (events) MINFER_EXEC_TRY(record((*events)[0]));
    const PdlScope pdl(tuning.pdl && cc_major >= 9);
    const Tuning t = l.invariant ? batch_invariant_tuning(tuning) : tuning;
    // A fused run is one launch: its time goes to its first node (the others record ~0).
    for (size_t i = 0; i < l.args.size();) {
      LaunchContext ctx{stream, err_dev, static_cast<int>(i), scratch, sm_count, t, counters, kCounters};
      const size_t run = l.fused[i] > 1 ? l.fused[i] : 1;
      const cudaError_t e = run > 1 ? fused_launch(&l.args[i], run, ctx) : l.kernels[i]->launch(l.args[i], ctx);
      if (e != cudaSuccess) {
        return err(e == cudaErrorMemoryAllocation ? ExecCode::OutOfMemory : ExecCode::CudaError,
                   pf::node_prefix(i, static_cast<int32_t>(l.args[i].op)) + "kernel launch failed" +
                       (run > 1 ? " (fused with the next " + std::to_string(run - 1) + " nodes): " : ": ") +
                       cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
      }
      for (size_t k = 0; k < run; k++)
        if (events) MINFER_EXEC_TRY(record((*events)[i + k + 1]));
      i += run;
    }
    return ExecStatus{};
  }

  // Scratch grows to the next power of two of a program's need. The old allocation is kept (and
  // freed with the executor) because graphs captured before hold its address; at most twice the
  // final size is held in all.
  ExecStatus ensure_scratch(size_t bytes) {
    if (bytes <= scratch_capacity) return ExecStatus{};
    size_t want = 4096;
    while (want < bytes) want *= 2;
    MINFER_EXEC_TRY(cudaStreamSynchronize(stream));
    void* fresh = nullptr;
    MINFER_EXEC_TRY(cudaMalloc(&fresh, want));
    if (scratch) retired.push_back(scratch);
    scratch = fresh;
    scratch_capacity = want;
    return ExecStatus{};
  }

  Entry* find(uint64_t hash, const uint8_t* bytes, size_t length, const std::vector<uint64_t>& key) {
    for (auto it = entries.begin(); it != entries.end(); ++it) {
      if (it->hash != hash || it->bytes.size() != length || it->buffers != key) continue;
      if (std::memcmp(it->bytes.data(), bytes, length) != 0) continue;
      entries.splice(entries.begin(), entries, it);
      return &entries.front();
    }
    return nullptr;
  }

  Entry* remember(uint64_t hash, const uint8_t* bytes, size_t length, std::vector<uint64_t> key) {
    // (the least recently used goes; never the program of a launched run not yet polled, which
    // launch() moved to the front: its Loaded is what poll() names errors by)
    if (entries.size() >= kMaxEntries && !(inflight && entries.back().loaded.get() == inflight_program)) {
      if (entries.back().exec) cudaGraphExecDestroy(entries.back().exec);
      entries.pop_back();
    }
    entries.emplace_front();
    Entry& e = entries.front();
    e.hash = hash;
    e.bytes.assign(bytes, bytes + length);
    e.buffers = std::move(key);
    return &e;
  }

  ExecStatus capture(const Loaded& l, Entry* e) {
    MINFER_EXEC_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    const ExecStatus s = enqueue(l, nullptr);
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(stream, &graph);
    if (!s.ok()) {
      if (graph) cudaGraphDestroy(graph);
      return s;
    }
    if (end != cudaSuccess) return cuda_fail("cudaStreamEndCapture", end);
    const cudaError_t inst = cudaGraphInstantiate(&e->exec, graph, 0);
    cudaGraphDestroy(graph);
    if (inst != cudaSuccess) {
      e->exec = nullptr;
      return cuda_fail("cudaGraphInstantiate", inst);
    }
    return ExecStatus{};
  }

  ExecStatus finish(const Loaded& l) {
    MINFER_EXEC_TRY(cudaMemcpyAsync(err_host, err_dev, sizeof(DeviceError), cudaMemcpyDeviceToHost, stream));
    MINFER_EXEC_TRY(cudaStreamSynchronize(stream));
    if (err_host->code != 0) {
      const int node = err_host->node;
      const int32_t op = node >= 0 && static_cast<size_t>(node) < l.args.size()
                             ? static_cast<int32_t>(l.args[node].op)
                             : -1;
      return err(ExecCode::OutOfRange, pf::node_prefix(node, op) + "an index read from an input is out of range (" +
                                           std::to_string(err_host->detail) + ")");
    }
    return ExecStatus{};
  }
};

Executor::Executor(int device, bool use_graphs, Tuning tuning, ExecStatus* status)
    : impl_(new Impl), device_(device) {
  Impl& m = *impl_;
  m.device = device;
  m.use_graphs = use_graphs;
  m.tuning = tuning;
  *status = [&]() -> ExecStatus {
    MINFER_EXEC_TRY(cudaSetDevice(device));
    MINFER_EXEC_TRY(cudaDeviceGetAttribute(&m.sm_count, cudaDevAttrMultiProcessorCount, device));
    MINFER_EXEC_TRY(cudaDeviceGetAttribute(&m.cc_major, cudaDevAttrComputeCapabilityMajor, device));
    MINFER_EXEC_TRY(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking));
    MINFER_EXEC_TRY(cudaMalloc(&m.err_dev, sizeof(DeviceError)));
    MINFER_EXEC_TRY(cudaMallocHost(&m.err_host, sizeof(DeviceError)));
    MINFER_EXEC_TRY(cudaMallocHost(&m.fast_err, sizeof(DeviceError)));
    MINFER_EXEC_TRY(cudaEventCreateWithFlags(&m.fast_done, cudaEventDisableTiming));
    MINFER_EXEC_TRY(cudaMalloc(&m.counters, sizeof(unsigned) * Impl::kCounters));
    MINFER_EXEC_TRY(cudaMemset(m.counters, 0, sizeof(unsigned) * Impl::kCounters));
    if (tuning.step_times) {
      MINFER_EXEC_TRY(cudaEventCreate(&m.time0));
      MINFER_EXEC_TRY(cudaEventCreate(&m.time1));
      MINFER_EXEC_TRY(cudaEventCreate(&m.fast_t0));
      MINFER_EXEC_TRY(cudaEventCreate(&m.fast_t1));
      MINFER_EXEC_TRY(cudaEventCreate(&m.fast_u0));
      MINFER_EXEC_TRY(cudaEventCreate(&m.fast_d1));
    }
    return ExecStatus{};
  }();
}

Executor::~Executor() = default;

size_t Executor::graphs_cached() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& e : impl_->entries) n += e.exec ? 1 : 0;
  return n;
}

ExecStatus Executor::execute(const uint8_t* bytes, size_t length, const std::vector<pf::BufferBinding>& buffers,
                             std::vector<double>* node_micros, ExecStats* stats, uint64_t id) {
  const auto host0 = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  Impl& m = *impl_;
  if (!m.stream) return err(ExecCode::CudaError, "the executor did not start (see the error of its creation)");
  MINFER_EXEC_TRY(cudaSetDevice(device_));
  if (const std::string w = wait_for_uploads(device_, m.stream); !w.empty()) return err(ExecCode::CudaError, w);

  if (node_micros || !m.use_graphs) {
    Loaded l;
    ExecStatus s = load(bytes, length, buffers, &l, m.tuning.fuse ? &m.tuning : nullptr);
    if (!s.ok()) return s;
    if (node_micros) node_micros->assign(l.args.size(), 0.0);
    if (l.args.empty()) return ExecStatus{};
    s = m.ensure_scratch(l.scratch);
    if (!s.ok()) return s;
    if (!node_micros) {
      s = m.enqueue(l, nullptr);
      return s.ok() ? m.finish(l) : s;
    }
    std::vector<cudaEvent_t> events(l.args.size() + 1, nullptr);
    for (auto& e : events) MINFER_EXEC_TRY(cudaEventCreate(&e));
    // With graphs, the nodes and their events are captured into one graph and launched once: the
    // times are then the GPU's, as in a replayed step, without the host's launch gaps. Without
    // graphs (or when capturing fails) the nodes are launched directly between events.
    bool ran = false;
    if (m.use_graphs) {
      cudaGraph_t graph = nullptr;
      cudaGraphExec_t exec = nullptr;
      ExecStatus c = [&]() -> ExecStatus {
        MINFER_EXEC_TRY(cudaStreamBeginCapture(m.stream, cudaStreamCaptureModeThreadLocal));
        const ExecStatus q = m.enqueue(l, &events, true);
        const cudaError_t end = cudaStreamEndCapture(m.stream, &graph);
        if (!q.ok()) return q;
        MINFER_EXEC_TRY(end);
        MINFER_EXEC_TRY(cudaGraphInstantiate(&exec, graph, 0));
        MINFER_EXEC_TRY(cudaGraphUpload(exec, m.stream));
        MINFER_EXEC_TRY(cudaGraphLaunch(exec, m.stream));
        return ExecStatus{};
      }();
      ran = c.ok();
      if (!ran) {
        // A failed capture is not an error of this program: it launches directly (the times then
        // include the host's launch gaps), and says so as a graph failure does.
        cudaGetLastError();
        graph_failures_++;
        last_graph_error_ = "profile capture: " + c.message;
        if (stats) stats->graph_failed = true;
      }
      s = ran ? m.finish(l) : ExecStatus{};
      if (exec) cudaGraphExecDestroy(exec);
      if (graph) cudaGraphDestroy(graph);
    }
    if (!ran && s.ok()) {
      s = m.enqueue(l, &events);
      if (s.ok()) s = m.finish(l);
    }
    if (s.ok()) {
      for (size_t i = 0; i < l.args.size(); i++) {
        float ms = 0;
        if (cudaEventElapsedTime(&ms, events[i], events[i + 1]) == cudaSuccess) (*node_micros)[i] = ms * 1000.0;
      }
    }
    for (auto& e : events) cudaEventDestroy(e);
    return s;
  }

  // A program is known by its bytes and its buffers' addresses and sizes; one seen before was
  // parsed and checked then (the same bytes over the same buffers give the same answer), so it
  // is not parsed again, and from its second run on it replays a CUDA graph.
  std::vector<uint64_t> key;
  key.reserve(buffers.size() * 2);
  for (const pf::BufferBinding& b : buffers) {
    key.push_back(reinterpret_cast<uint64_t>(b.data));
    key.push_back(b.size);
  }
  const uint64_t hash = hash_bytes(hash_bytes(1469598103934665603ull, bytes, length), key.data(), key.size() * 8);
  const bool timed = m.time0 != nullptr;
  std::chrono::steady_clock::time_point launched;
  // The launches are between the two events; the GPU time is theirs, the host's from entry on.
  auto mark_start = [&]() -> ExecStatus {
    if (timed) MINFER_EXEC_TRY(cudaEventRecord(m.time0, m.stream));
    return ExecStatus{};
  };
  auto finish_timed = [&](const Loaded& l) -> ExecStatus {
    if (timed) MINFER_EXEC_TRY(cudaEventRecord(m.time1, m.stream));
    launched = std::chrono::steady_clock::now();
    ExecStatus s = m.finish(l);
    if (!s.ok() || !timed) return s;
    float gpu_ms = 0;
    MINFER_EXEC_TRY(cudaEventElapsedTime(&gpu_ms, m.time0, m.time1));
    const auto done = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> tl(times_mu_);
    times_.runs++;
    times_.gpu_us += gpu_ms * 1000.0;
    times_.execute_us += std::chrono::duration<double, std::micro>(done - host0).count();
    times_.launch_us += std::chrono::duration<double, std::micro>(launched - host0).count();
    return s;
  };
  Impl::Entry* e = m.find(hash, bytes, length, key);
  if (e && id != 0) e->id = id;
  if (!e) {
    auto l = std::make_unique<Loaded>();
    ExecStatus s = load(bytes, length, buffers, l.get(), m.tuning.fuse ? &m.tuning : nullptr);
    if (!s.ok()) return s;
    if (l->args.empty()) return ExecStatus{};
    s = m.ensure_scratch(l->scratch);
    if (!s.ok()) return s;
    s = mark_start();
    if (!s.ok()) return s;
    s = m.enqueue(*l, nullptr);
    if (!s.ok()) return s;
    for (uint8_t run : l->fused) fused_runs_ += run > 1 ? 1 : 0;
    e = m.remember(hash, bytes, length, std::move(key));
    e->id = id;
    e->loaded = std::move(l);
    e->runs++;
    return finish_timed(*e->loaded);
  }
  const Loaded& l = *e->loaded;
  if (e->exec) {
    if (const ExecStatus t = mark_start(); !t.ok()) return t;
    MINFER_EXEC_TRY(cudaGraphLaunch(e->exec, m.stream));
    replays_++;
    if (stats) stats->graph_replayed = true;
  } else if (!e->no_graph) {
    ExecStatus s = m.capture(l, e);
    if (s.ok()) {
      if (const ExecStatus t = mark_start(); !t.ok()) return t;
      MINFER_EXEC_TRY(cudaGraphLaunch(e->exec, m.stream));
      captures_++;
      if (stats) stats->graph_captured = true;
    } else {
      // A program whose launches cannot be captured still runs, launched directly, and says so
      // (graph_failures / last_graph_error in the executor's stats). A sticky CUDA error is not
      // hidden: the direct launch or the synchronisation after it reports it.
      cudaGetLastError();
      e->no_graph = true;
      graph_failures_++;
      last_graph_error_ = s.message;
      if (stats) stats->graph_failed = true;
      if (const ExecStatus t = mark_start(); !t.ok()) return t;
      s = m.enqueue(l, nullptr);
      if (!s.ok()) return s;
    }
  } else {
    if (const ExecStatus t = mark_start(); !t.ok()) return t;
    ExecStatus s = m.enqueue(l, nullptr);
    if (!s.ok()) return s;
  }
  e->runs++;
  return finish_timed(l);
}

ExecStatus Executor::launch(uint64_t id, size_t length, const std::vector<pf::BufferBinding>& buffers,
                            const std::vector<Upload>& uploads, const std::vector<Download>& downloads, bool* launched) {
  *launched = false;
  const auto host0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  Impl& m = *impl_;
  if (!lock.owns_lock() || m.inflight || !m.stream || id == 0) return ExecStatus{};
  // The program by its id, over the same buffers, captured already.
  Impl::Entry* e = nullptr;
  for (auto it = m.entries.begin(); it != m.entries.end(); ++it) {
    if (it->id != id || it->bytes.size() != length || !it->exec || it->buffers.size() != buffers.size() * 2) continue;
    bool same = true;
    for (size_t i = 0; i < buffers.size() && same; i++)
      same = it->buffers[2 * i] == reinterpret_cast<uint64_t>(buffers[i].data) && it->buffers[2 * i + 1] == buffers[i].size;
    if (!same) continue;
    m.entries.splice(m.entries.begin(), m.entries, it);
    e = &m.entries.front();
    break;
  }
  if (!e) return ExecStatus{};
  size_t up_bytes = 0;
  for (const Upload& u : uploads) up_bytes += (u.bytes + 255) & ~size_t{255};
  MINFER_EXEC_TRY(cudaSetDevice(device_));
  if (up_bytes > m.staging_capacity) {
    // (a run of this executor may still read the old staging: wait for the stream first)
    MINFER_EXEC_TRY(cudaStreamSynchronize(m.stream));
    if (m.staging) MINFER_EXEC_TRY(cudaFreeHost(m.staging));
    m.staging = nullptr;
    m.staging_capacity = 0;
    size_t want = 64 << 10;
    while (want < up_bytes) want *= 2;
    MINFER_EXEC_TRY(cudaMallocHost(&m.staging, want));
    m.staging_capacity = want;
  }
  if (const std::string w = wait_for_uploads(device_, m.stream); !w.empty()) return err(ExecCode::CudaError, w);
  const bool timed = m.fast_t0 != nullptr;
  if (timed) MINFER_EXEC_TRY(cudaEventRecord(m.fast_u0, m.stream));
  size_t at = 0;
  for (const Upload& u : uploads) {
    if (u.bytes == 0) continue;
    std::memcpy(m.staging + at, u.src, u.bytes);
    MINFER_EXEC_TRY(cudaMemcpyAsync(u.dst, m.staging + at, u.bytes, cudaMemcpyHostToDevice, m.stream));
    at += (u.bytes + 255) & ~size_t{255};
  }
  if (timed) MINFER_EXEC_TRY(cudaEventRecord(m.fast_t0, m.stream));
  std::chrono::steady_clock::time_point graph0, graph1;  // (Tuning::step_times only)
  if (timed) graph0 = std::chrono::steady_clock::now();
  MINFER_EXEC_TRY(cudaGraphLaunch(e->exec, m.stream));
  if (timed) graph1 = std::chrono::steady_clock::now();
  if (timed) MINFER_EXEC_TRY(cudaEventRecord(m.fast_t1, m.stream));
  for (const Download& d : downloads)
    if (d.bytes > 0) MINFER_EXEC_TRY(cudaMemcpyAsync(d.dst, d.src, d.bytes, cudaMemcpyDeviceToHost, m.stream));
  MINFER_EXEC_TRY(cudaMemcpyAsync(m.fast_err, m.err_dev, sizeof(DeviceError), cudaMemcpyDeviceToHost, m.stream));
  if (timed) MINFER_EXEC_TRY(cudaEventRecord(m.fast_d1, m.stream));
  MINFER_EXEC_TRY(cudaEventRecord(m.fast_done, m.stream));
  replays_++;
  launches_++;
  e->runs++;
  m.inflight = true;
  m.inflight_program = e->loaded.get();
  m.fast_host0 = host0;
  *launched = true;
  if (timed) {
    std::lock_guard<std::mutex> tl(times_mu_);
    times_.launch_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - host0).count();
    times_.graph_launch_us += std::chrono::duration<double, std::micro>(graph1 - graph0).count();
    times_.upload_enqueue_us += std::chrono::duration<double, std::micro>(graph0 - host0).count();
  }
  return ExecStatus{};
}

bool Executor::poll(ExecStatus* status) {
  Impl& m = *impl_;
  *status = ExecStatus{};
  if (!m.inflight) {
    *status = err(ExecCode::CudaError, "poll: no launched run");
    return true;
  }
  const cudaError_t q = cudaEventQuery(m.fast_done);
  if (q == cudaErrorNotReady) return false;
  m.inflight = false;
  if (q != cudaSuccess) {
    *status = cuda_fail("cudaEventQuery", q);
    return true;
  }
  if (m.fast_err->code != 0) {
    const Loaded& l = *m.inflight_program;
    const int node = m.fast_err->node;
    const int32_t op = node >= 0 && static_cast<size_t>(node) < l.args.size() ? static_cast<int32_t>(l.args[node].op) : -1;
    *status = err(ExecCode::OutOfRange, pf::node_prefix(node, op) + "an index read from an input is out of range (" +
                                            std::to_string(m.fast_err->detail) + ")");
  }
  if (m.fast_t0) {
    float gpu_ms = 0, in_ms = 0, out_ms = 0;
    for (auto [ms, a, b] : {std::tuple{&gpu_ms, m.fast_t0, m.fast_t1}, std::tuple{&in_ms, m.fast_u0, m.fast_t0},
                            std::tuple{&out_ms, m.fast_t1, m.fast_d1}}) {
      const cudaError_t t = cudaEventElapsedTime(ms, a, b);
      if (t != cudaSuccess && status->ok()) *status = cuda_fail("cudaEventElapsedTime", t);
    }
    std::lock_guard<std::mutex> tl(times_mu_);
    times_.runs++;
    times_.replays++;
    times_.upload_us += in_ms * 1000.0;
    times_.download_us += out_ms * 1000.0;
    times_.gpu_us += gpu_ms * 1000.0;
    times_.execute_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - m.fast_host0).count();
  }
  return true;
}

}  // namespace minfer::cuda
