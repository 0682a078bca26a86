// The CUDA backend's addon: device discovery, memory accounting, device buffers and copies,
// and a kernel self-test, exposed to JavaScript (packages/backend-cuda/src/native.ts). Every
// index and length from JavaScript is checked before it reaches CUDA; every CUDA status is checked
// (device.cu) and a failure throws an Error naming the call.
#include <napi.h>

#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "device.h"
#include "executor.h"
#include "kernel.h"

namespace {

using namespace minfer::cuda;

struct Buffer {
  int device = 0;
  void* ptr = nullptr;
  size_t size = 0;
  int busy = 0;  // executes in flight that use it (touched on the JavaScript thread only)
};

// An executor handle: the executor, and executes in flight (JavaScript thread only); for a run
// of launchReplay, the buffers it marked busy and the host arrays its downloads land in (kept
// alive until pollReplay sees it finish).
struct ExecutorHandle {
  std::unique_ptr<Executor> executor;
  int busy = 0;
  std::vector<Buffer*> replay_buffers;
  std::vector<Napi::Reference<Napi::Value>> replay_keep;
  bool replaying = false;
};

void throw_coded(Napi::Env env, const char* code, const std::string& message) {
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, code));
  throw e;
}

void check(Napi::Env env, const std::string& status) {
  if (!status.empty()) throw Napi::Error::New(env, status);
}

int device_arg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || !info[i].IsNumber()) throw Napi::TypeError::New(info.Env(), "device index must be a number");
  const double d = info[i].As<Napi::Number>().DoubleValue();
  if (!(d >= 0 && d < 1024) || d != static_cast<int>(d)) throw Napi::RangeError::New(info.Env(), "device index out of range");
  return static_cast<int>(d);
}

size_t size_arg(const Napi::CallbackInfo& info, size_t i, const char* what) {
  if (info.Length() <= i || !info[i].IsNumber()) throw Napi::TypeError::New(info.Env(), std::string(what) + " must be a number");
  const double d = info[i].As<Napi::Number>().DoubleValue();
  if (!(d >= 0 && d <= 9007199254740991.0) || d != static_cast<double>(static_cast<uint64_t>(d)))
    throw Napi::RangeError::New(info.Env(), std::string(what) + " must be a non-negative integer");
  return static_cast<size_t>(d);
}

Buffer* buffer_arg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || !info[i].IsExternal()) throw Napi::TypeError::New(info.Env(), "expected a CUDA buffer handle");
  Buffer* b = info[i].As<Napi::External<Buffer>>().Data();
  if (b == nullptr || b->ptr == nullptr) throw Napi::Error::New(info.Env(), "the CUDA buffer was freed");
  return b;
}

Napi::Value Probe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Versions v;
  std::vector<DeviceInfo> devices;
  const std::string status = probe(&v, &devices);
  Napi::Object out = Napi::Object::New(env);
  out.Set("runtimeVersion", v.runtime);
  out.Set("driverVersion", v.driver);
  if (!status.empty()) out.Set("error", status);
  Napi::Array list = Napi::Array::New(env, devices.size());
  for (size_t i = 0; i < devices.size(); i++) {
    const DeviceInfo& d = devices[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("index", d.index);
    o.Set("name", d.name);
    o.Set("computeCapability", std::to_string(d.major) + "." + std::to_string(d.minor));
    o.Set("smCount", d.sm_count);
    o.Set("totalBytes", static_cast<double>(d.total));
    o.Set("freeBytes", static_cast<double>(d.free));
    o.Set("pciBus", d.pci_bus);
    list.Set(static_cast<uint32_t>(i), o);
  }
  out.Set("devices", list);
  return out;
}

Napi::Value MemInfo(const Napi::CallbackInfo& info) {
  size_t free = 0, total = 0;
  check(info.Env(), mem_info(device_arg(info, 0), &free, &total));
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("free", static_cast<double>(free));
  o.Set("total", static_cast<double>(total));
  return o;
}

Napi::Value Alloc(const Napi::CallbackInfo& info) {
  const int device = device_arg(info, 0);
  const size_t bytes = size_arg(info, 1, "bytes");
  auto* b = new Buffer{device, nullptr, bytes};
  const std::string status = alloc(device, bytes, &b->ptr);
  if (!status.empty()) {
    delete b;
    throw Napi::Error::New(info.Env(), status);
  }
  return Napi::External<Buffer>::New(info.Env(), b, [](Napi::Env, Buffer* p) {
    if (p->ptr != nullptr) release(p->device, p->ptr);  // a buffer the program never freed
    delete p;
  });
}

Napi::Value Free(const Napi::CallbackInfo& info) {
  Buffer* b = buffer_arg(info, 0);
  if (b->busy > 0) throw_coded(info.Env(), "BUSY", "the CUDA buffer is used by an execute in flight");
  const std::string status = release(b->device, b->ptr);
  b->ptr = nullptr;
  check(info.Env(), status);
  return info.Env().Undefined();
}

// write(buffer, offset, Uint8Array)
Napi::Value Write(const Napi::CallbackInfo& info) {
  Buffer* b = buffer_arg(info, 0);
  const size_t offset = size_arg(info, 1, "offset");
  if (info.Length() < 3 || !info[2].IsTypedArray()) throw Napi::TypeError::New(info.Env(), "data must be a typed array");
  Napi::TypedArray t = info[2].As<Napi::TypedArray>();
  const size_t bytes = t.ByteLength();
  if (offset > b->size || bytes > b->size - offset)
    throw Napi::RangeError::New(info.Env(), "write: offset + length is past the end of the buffer");
  const uint8_t* src = static_cast<const uint8_t*>(t.ArrayBuffer().Data()) + t.ByteOffset();
  if (bytes > 0) check(info.Env(), copy_to_device(b->device, static_cast<uint8_t*>(b->ptr) + offset, src, bytes));
  return info.Env().Undefined();
}

// read(buffer, offset, length[, into]) → Uint8Array (new; with into, its first length bytes)
Napi::Value Read(const Napi::CallbackInfo& info) {
  Buffer* b = buffer_arg(info, 0);
  const size_t offset = size_arg(info, 1, "offset");
  const size_t bytes = size_arg(info, 2, "length");
  if (offset > b->size || bytes > b->size - offset)
    throw Napi::RangeError::New(info.Env(), "read: offset + length is past the end of the buffer");
  if (info.Length() > 3 && !info[3].IsUndefined()) {
    if (!info[3].IsTypedArray() || info[3].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
      throw Napi::TypeError::New(info.Env(), "read: into must be a Uint8Array");
    Napi::Uint8Array into = info[3].As<Napi::Uint8Array>();
    if (into.ByteLength() < bytes)
      throw Napi::RangeError::New(info.Env(), "read: into holds " + std::to_string(into.ByteLength()) + " bytes, " +
                                                  std::to_string(bytes) + " were asked for");
    if (bytes > 0) check(info.Env(), copy_to_host(b->device, into.Data(), static_cast<uint8_t*>(b->ptr) + offset, bytes));
    return Napi::Uint8Array::New(info.Env(), bytes, into.ArrayBuffer(), into.ByteOffset());
  }
  Napi::Uint8Array out = Napi::Uint8Array::New(info.Env(), bytes);
  if (bytes > 0) check(info.Env(), copy_to_host(b->device, out.Data(), static_cast<uint8_t*>(b->ptr) + offset, bytes));
  return out;
}

// allocHost(device, bytes) → Uint8Array over page-locked memory, freed when the array is collected.
Napi::Value AllocHost(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int device = device_arg(info, 0);
  const size_t bytes = size_arg(info, 1, "bytes");
  if (bytes == 0 || bytes > (size_t{1} << 40)) throw Napi::RangeError::New(env, "allocHost: bytes must be in [1, 2^40]");
  void* ptr = nullptr;
  check(env, alloc_host(device, bytes, &ptr));
  Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, ptr, bytes, [bytes](Napi::Env e, void* p) {
    release_host(p);  // at collection there is no one to report a failure to
    Napi::MemoryManagement::AdjustExternalMemory(e, -static_cast<int64_t>(bytes));
  });
  Napi::MemoryManagement::AdjustExternalMemory(env, static_cast<int64_t>(bytes));
  return Napi::Uint8Array::New(env, bytes, ab, 0);
}

Napi::Value SelfTest(const Napi::CallbackInfo& info) {
  const int device = device_arg(info, 0);
  const size_t n = size_arg(info, 1, "n");
  const size_t seed = size_arg(info, 2, "seed");
  if (n == 0 || n > (1u << 24) || seed > 1000000) throw Napi::RangeError::New(info.Env(), "selfTest: n in [1, 2^24], seed in [0, 10^6]");
  std::vector<int32_t> values;
  check(info.Env(), self_test(device, static_cast<int>(n), static_cast<int>(seed), &values));
  Napi::Int32Array out = Napi::Int32Array::New(info.Env(), values.size());
  std::memcpy(out.Data(), values.data(), values.size() * sizeof(int32_t));
  return out;
}


const uint8_t* bytes_arg(const Napi::CallbackInfo& info, size_t i, size_t* length) {
  if (info.Length() <= i || !info[i].IsTypedArray()) throw Napi::TypeError::New(info.Env(), "the program must be a Uint8Array");
  Napi::TypedArray t = info[i].As<Napi::TypedArray>();
  *length = t.ByteLength();
  return static_cast<const uint8_t*>(t.ArrayBuffer().Data()) + t.ByteOffset();
}

std::vector<uint64_t> sizes_arg(const Napi::CallbackInfo& info, size_t i) {
  Napi::Env env = info.Env();
  if (info.Length() <= i || !info[i].IsArray()) throw Napi::TypeError::New(env, "bufferSizes must be an array");
  Napi::Array a = info[i].As<Napi::Array>();
  std::vector<uint64_t> sizes(a.Length());
  for (uint32_t k = 0; k < a.Length(); k++) {
    Napi::Value v = a.Get(k);
    if (!v.IsNumber()) throw Napi::TypeError::New(env, "bufferSizes must hold numbers");
    const double d = v.As<Napi::Number>().DoubleValue();
    if (!(d >= 0 && d <= 9007199254740991.0) || d != static_cast<double>(static_cast<uint64_t>(d)))
      throw Napi::RangeError::New(env, "bufferSizes must hold non-negative integers");
    sizes[k] = static_cast<uint64_t>(d);
  }
  return sizes;
}

// checkProgram(program, bufferSizes) → null when every node has a kernel that accepts it, else
// { code, message }.
Napi::Value CheckProgram(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  size_t length = 0;
  const uint8_t* bytes = bytes_arg(info, 0, &length);
  const ExecStatus s = check_program(bytes, length, sizes_arg(info, 1));
  if (s.ok()) return env.Null();
  Napi::Object o = Napi::Object::New(env);
  o.Set("code", exec_code_name(s.code));
  o.Set("message", s.message);
  return o;
}

Tuning tuning_arg(const Napi::CallbackInfo& info, size_t i);

// fusedRuns(program, bufferSizes, tuning?) → the runs of nodes fused kernels would take under the
// tuning (createExecutor's), as their node counts in program order (the program must pass
// checkProgram: else an Error with the check's code).
Napi::Value FusedRuns(const Napi::CallbackInfo& info) {
  size_t length = 0;
  const uint8_t* bytes = bytes_arg(info, 0, &length);
  std::vector<size_t> runs;
  const ExecStatus s = check_program(bytes, length, sizes_arg(info, 1), &runs, tuning_arg(info, 2));
  if (!s.ok()) throw_coded(info.Env(), exec_code_name(s.code), s.message);
  Napi::Array out = Napi::Array::New(info.Env(), runs.size());
  for (size_t i = 0; i < runs.size(); i++) out.Set(static_cast<uint32_t>(i), static_cast<double>(runs[i]));
  return out;
}

Napi::Value RegisteredOps(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string names = registered_ops();
  Napi::Array out = Napi::Array::New(env);
  size_t start = 0;
  uint32_t n = 0;
  while (start < names.size()) {
    size_t end = names.find(',', start);
    if (end == std::string::npos) end = names.size();
    out.Set(n++, names.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

ExecutorHandle* executor_arg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || !info[i].IsExternal()) throw Napi::TypeError::New(info.Env(), "expected a CUDA executor handle");
  ExecutorHandle* h = info[i].As<Napi::External<ExecutorHandle>>().Data();
  if (h == nullptr || !h->executor) throw_coded(info.Env(), "DISPOSED", "the CUDA executor was disposed");
  return h;
}

// createExecutor(device, useGraphs, tuning?: { attnMma?, topkChunks?, fuse?, pdl?, attnPerQuery?, mvWideLoads?, stepTimes?, ropeBlock?, qkvRope?, fusedCombine?, invariantBatched?,
//                 perQueryFlash?: boolean, attnDecode?: "auto" | "tile" | "vec" | "flash", mmqCols?: [min, max], decodeRows?: number,
//                 mmqStreamk?: number, topkRadixRows?: number, attnQuantRows?: number, perQueryBlocks?: number, perQuerySplits?: number, normSliceRows?: number,
//                 mmqTargetBlocks?: number,
//                 attnWarps?: 1 | 2 | 4, gemmStages?: 2 | 3, mmqBlocks?: 2 | 3, mmqRows?: 0 | 64 | 128,
//                 mvShape?: { warps1, rows1, warps, rows, warpsLong, warpsFew, rowsFew, tightWarps, tightRows,
//                 tightRowsFirst, split, warps1Few, rows1Few, fewRows } })
// → handle (tuning_arg reads the tuning)
// The tuning object of argument i (createExecutor's third, fusedRuns' third); defaults where absent.
Tuning tuning_arg(const Napi::CallbackInfo& info, size_t i) {
  Tuning tuning;
  if (info.Length() > i && info[i].IsObject()) {
    Napi::Object t = info[i].As<Napi::Object>();
    auto flag = [&](const char* name, bool* out) {
      Napi::Value a = t.Get(name);
      if (!a.IsUndefined() && !a.IsBoolean())
        throw Napi::TypeError::New(info.Env(), std::string("tuning.") + name + " must be a boolean");
      if (a.IsBoolean()) *out = a.As<Napi::Boolean>().Value();
    };
    flag("attnMma", &tuning.attn_mma);
    Napi::Value dec = t.Get("attnDecode");
    if (!dec.IsUndefined()) {
      const std::string v = dec.IsString() ? dec.As<Napi::String>().Utf8Value() : std::string();
      if (v == "auto") tuning.attn_decode = DecodeAttn::Auto;
      else if (v == "tile") tuning.attn_decode = DecodeAttn::Tile;
      else if (v == "vec") tuning.attn_decode = DecodeAttn::Vec;
      else if (v == "flash") tuning.attn_decode = DecodeAttn::Flash;
      else throw Napi::TypeError::New(info.Env(), "tuning.attnDecode must be \"auto\", \"tile\", \"vec\" or \"flash\"");
    }
    flag("topkChunks", &tuning.topk_chunks);
    // An integer tuning that takes one of a few values.
    // (of object `obj`, named `where` in the error: tuning or one of its objects)
    auto one_of_in = [&](Napi::Object obj, const char* where, const char* name, std::initializer_list<int> allowed,
                         const char* values, int* out) {
      Napi::Value a = obj.Get(name);
      if (a.IsUndefined()) return;
      const double v = a.IsNumber() ? a.As<Napi::Number>().DoubleValue() : -1;
      for (int x : allowed)
        if (v == x) {
          *out = x;
          return;
        }
      throw Napi::TypeError::New(info.Env(), std::string(where) + "." + name + " must be " + values);
    };
    auto one_of = [&](const char* name, std::initializer_list<int> allowed, const char* values, int* out) {
      one_of_in(t, "tuning", name, allowed, values, out);
    };
    one_of("attnWarps", {1, 2, 4}, "1, 2 or 4", &tuning.attn_warps);
    one_of("mmqBlocks", {2, 3}, "2 or 3", &tuning.mmq_blocks);
    one_of("mmqRows", {0, 64, 128}, "0 (auto), 64 or 128", &tuning.mmq_rows);
    one_of("gemmStages", {2, 3}, "2 or 3", &tuning.gemm_stages);
    flag("fuse", &tuning.fuse);
    flag("pdl", &tuning.pdl);
    flag("attnPerQuery", &tuning.attn_per_query);
    flag("mvWideLoads", &tuning.mv_wide_loads);
    flag("stepTimes", &tuning.step_times);
    flag("ropeBlock", &tuning.rope_block);
    flag("qkvRope", &tuning.qkv_rope);
    flag("fusedCombine", &tuning.fused_combine);
    flag("invariantBatched", &tuning.invariant_batched);
    flag("perQueryFlash", &tuning.per_query_flash);
    // An integer tuning in [lo, hi].
    auto int_in = [&](const char* name, int lo, int hi, int* out) {
      Napi::Value a = t.Get(name);
      if (a.IsUndefined()) return;
      const double v = a.IsNumber() ? a.As<Napi::Number>().DoubleValue() : -1;
      if (!(v >= lo && v <= hi && v == static_cast<int>(v)))
        throw Napi::TypeError::New(info.Env(), std::string("tuning.") + name + " must be an integer in [" +
                                                   std::to_string(lo) + ", " + std::to_string(hi) + "]");
      *out = static_cast<int>(v);
    };
    int_in("mmqStreamk", 0, 512, &tuning.mmq_streamk);
    int_in("topkRadixRows", 0, 1 << 30, &tuning.topk_radix_rows);
    int_in("decodeRows", 1, 64, &tuning.decode_rows);
    int_in("perQueryBlocks", 0, 64, &tuning.per_query_blocks);
    int_in("perQuerySplits", 0, 16, &tuning.per_query_splits);  // (16: kDecMaxSplitsPerQuery)
    int_in("normSliceRows", 0, 263, &tuning.norm_slice_rows);
    int_in("fuseRows", 1, 64, &tuning.fuse_rows);
    int_in("attnQuantRows", 1, 64, &tuning.attn_quant_rows);
    int_in("mmqTargetBlocks", 1, 512, &tuning.mmq_target_blocks);
    Napi::Value mv = t.Get("mvShape");
    if (!mv.IsUndefined()) {
      if (!mv.IsObject()) throw Napi::TypeError::New(info.Env(), "tuning.mvShape must be an object");
      Napi::Object o = mv.As<Napi::Object>();
      one_of_in(o, "tuning.mvShape", "warps1", {1, 2}, "1 or 2", &tuning.mv.warps1);
      one_of_in(o, "tuning.mvShape", "rows1", {0, 1, 2}, "0, 1 or 2", &tuning.mv.rows1);
      one_of_in(o, "tuning.mvShape", "warps", {0, 1, 2}, "0, 1 or 2", &tuning.mv.warps);
      one_of_in(o, "tuning.mvShape", "rows", {0, 1, 2}, "0, 1 or 2", &tuning.mv.rows);
      one_of_in(o, "tuning.mvShape", "warpsLong", {0, 1, 2, 4}, "0, 1, 2 or 4", &tuning.mv.warps_long);
      one_of_in(o, "tuning.mvShape", "warpsFew", {0, 1, 2}, "0, 1 or 2", &tuning.mv.warps_few);
      one_of_in(o, "tuning.mvShape", "rowsFew", {0, 1, 2, 3}, "0, 1, 2 or 3", &tuning.mv.rows_few);
      one_of_in(o, "tuning.mvShape", "tightWarps", {0, 2, 4}, "0, 2 or 4", &tuning.mv.tight_warps);
      one_of_in(o, "tuning.mvShape", "tightRows", {0, 1, 2, 3}, "0, 1, 2 or 3", &tuning.mv.tight_rows);
      one_of_in(o, "tuning.mvShape", "tightRowsFirst", {0, 1, 2}, "0, 1 or 2", &tuning.mv.tight_rows_first);
      one_of_in(o, "tuning.mvShape", "split", {0, 1, 2}, "0, 1 or 2", &tuning.mv.split);
      one_of_in(o, "tuning.mvShape", "warps1Few", {0, 2, 4}, "0, 2 or 4", &tuning.mv.warps1_few);
      one_of_in(o, "tuning.mvShape", "rows1Few", {0, 1, 2}, "0, 1 or 2", &tuning.mv.rows1_few);
      Napi::Value fr = o.Get("fewRows");
      if (!fr.IsUndefined()) {
        const double v = fr.IsNumber() ? fr.As<Napi::Number>().DoubleValue() : -1;
        if (!(v >= 0 && v <= (1 << 30) && v == static_cast<int>(v)))
          throw Napi::TypeError::New(info.Env(), "tuning.mvShape.fewRows must be an integer in [0, 1073741824]");
        tuning.mv.few_rows = static_cast<long long>(v);
      }
    }
    Napi::Value mmq = t.Get("mmqCols");
    if (!mmq.IsUndefined()) {
      const char* bad = "tuning.mmqCols must be [min, max] with 2 <= min <= max <= 8192, or [0, 0] (off)";
      if (!mmq.IsArray() || mmq.As<Napi::Array>().Length() != 2) throw Napi::TypeError::New(info.Env(), bad);
      Napi::Array arr = mmq.As<Napi::Array>();
      Napi::Value lo = arr.Get(0u), hi = arr.Get(1u);
      if (!lo.IsNumber() || !hi.IsNumber()) throw Napi::TypeError::New(info.Env(), bad);
      const double a = lo.As<Napi::Number>().DoubleValue(), b = hi.As<Napi::Number>().DoubleValue();
      const bool off = a == 0 && b == 0;
      if (!off && !(a >= 2 && a <= b && b <= 8192 && a == static_cast<int>(a) && b == static_cast<int>(b)))
        throw Napi::TypeError::New(info.Env(), bad);
      tuning.mmq_min_cols = off ? 1 : static_cast<int>(a);
      tuning.mmq_max_cols = off ? 0 : static_cast<int>(b);
    }
  }
  return tuning;
}

Napi::Value CreateExecutor(const Napi::CallbackInfo& info) {
  const int device = device_arg(info, 0);
  const bool graphs = info.Length() > 1 && info[1].IsBoolean() ? info[1].As<Napi::Boolean>().Value() : true;
  const Tuning tuning = tuning_arg(info, 2);
  ExecStatus status;
  auto* h = new ExecutorHandle{std::make_unique<Executor>(device, graphs, tuning, &status), 0};
  if (!status.ok()) {
    delete h;
    throw_coded(info.Env(), exec_code_name(status.code), status.message);
  }
  return Napi::External<ExecutorHandle>::New(info.Env(), h, [](Napi::Env, ExecutorHandle* p) { delete p; });
}

Napi::Value DisposeExecutor(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsExternal()) throw Napi::TypeError::New(info.Env(), "expected a CUDA executor handle");
  ExecutorHandle* h = info[0].As<Napi::External<ExecutorHandle>>().Data();
  if (h->busy > 0) throw_coded(info.Env(), "BUSY", "the CUDA executor has an execute in flight");
  h->executor.reset();
  return info.Env().Undefined();
}

Napi::Value ExecutorStats(const Napi::CallbackInfo& info) {
  ExecutorHandle* h = executor_arg(info, 0);
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("graphsCached", static_cast<double>(h->executor->graphs_cached()));
  o.Set("graphReplays", static_cast<double>(h->executor->graph_replays()));
  o.Set("graphCaptures", static_cast<double>(h->executor->graph_captures()));
  o.Set("threadReplays", static_cast<double>(h->executor->launches()));
  o.Set("graphFailures", static_cast<double>(h->executor->graph_failures()));
  o.Set("fusedRuns", static_cast<double>(h->executor->fused_runs()));
  const std::string last = h->executor->last_graph_error();
  if (!last.empty()) o.Set("lastGraphError", last);
  const Executor::StepTimes t = h->executor->step_times();
  if (t.runs > 0) {
    Napi::Object st = Napi::Object::New(info.Env());
    st.Set("runs", static_cast<double>(t.runs));
    st.Set("gpuMicros", t.gpu_us);
    st.Set("executeMicros", t.execute_us);
    st.Set("launchMicros", t.launch_us);
    st.Set("replays", static_cast<double>(t.replays));
    st.Set("uploadMicros", t.upload_us);
    st.Set("downloadMicros", t.download_us);
    st.Set("uploadEnqueueMicros", t.upload_enqueue_us);
    st.Set("graphLaunchMicros", t.graph_launch_us);
    o.Set("stepTimes", st);
  }
  return o;
}

// Runs a program off the JavaScript thread; the buffers and executor are marked busy meanwhile.
class ExecuteWorker : public Napi::AsyncWorker {
 public:
  ExecuteWorker(Napi::Env env, ExecutorHandle* h, std::vector<uint8_t> program, std::vector<Buffer*> buffers,
                bool profile, uint64_t id)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), handle_(h),
        program_(std::move(program)), buffers_(std::move(buffers)), profile_(profile), id_(id) {
    handle_->busy++;
    for (Buffer* b : buffers_) b->busy++;
    for (Buffer* b : buffers_) bindings_.push_back({static_cast<uint8_t*>(b->ptr), b->size, false});
  }

  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    status_ = handle_->executor->execute(program_.data(), program_.size(), bindings_, profile_ ? &micros_ : nullptr,
                                         &stats_, id_);
  }

  void OnOK() override {
    release();
    Napi::Env env = Env();
    if (!status_.ok()) {
      Napi::Error e = Napi::Error::New(env, status_.message);
      e.Set("code", Napi::String::New(env, exec_code_name(status_.code)));
      deferred_.Reject(e.Value());
      return;
    }
    Napi::Object o = Napi::Object::New(env);
    if (profile_) {
      Napi::Float64Array m = Napi::Float64Array::New(env, micros_.size());
      for (size_t i = 0; i < micros_.size(); i++) m[i] = micros_[i];
      o.Set("nodeMicros", m);
    }
    o.Set("graph", stats_.graph_replayed   ? "replayed"
                   : stats_.graph_captured ? "captured"
                   : stats_.graph_failed   ? "failed"
                                           : "none");
    deferred_.Resolve(o);
  }

  void OnError(const Napi::Error& e) override {
    release();
    deferred_.Reject(e.Value());
  }

 private:
  void release() {
    handle_->busy--;
    for (Buffer* b : buffers_) b->busy--;
  }
  Napi::Promise::Deferred deferred_;
  ExecutorHandle* handle_;
  std::vector<uint8_t> program_;
  std::vector<Buffer*> buffers_;
  std::vector<minfer::program::BufferBinding> bindings_;
  bool profile_;
  uint64_t id_;
  ExecStatus status_;
  ExecStats stats_;
  std::vector<double> micros_;
};

// The program buffers argument: CUDA buffers on the executor's device.
std::vector<Buffer*> program_buffers(const Napi::CallbackInfo& info, size_t i, ExecutorHandle* h) {
  Napi::Env env = info.Env();
  if (info.Length() <= i || !info[i].IsArray()) throw Napi::TypeError::New(env, "buffers must be an array of CUDA buffers");
  Napi::Array a = info[i].As<Napi::Array>();
  std::vector<Buffer*> buffers;
  for (uint32_t k = 0; k < a.Length(); k++) {
    Napi::Value v = a.Get(k);
    if (!v.IsExternal()) throw Napi::TypeError::New(env, "buffers[" + std::to_string(k) + "] is not a CUDA buffer");
    Buffer* b = v.As<Napi::External<Buffer>>().Data();
    if (b == nullptr || b->ptr == nullptr) throw_coded(env, "DISPOSED", "buffers[" + std::to_string(k) + "] was freed");
    if (b->device != h->executor->device())
      throw_coded(env, "WRONG_DEVICE", "buffers[" + std::to_string(k) + "] is on device " + std::to_string(b->device) +
                                           ", the executor on " + std::to_string(h->executor->device()));
    buffers.push_back(b);
  }
  return buffers;
}

// A program id: a positive integer below 2^53 (0 or absent: none).
uint64_t id_arg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || info[i].IsUndefined()) return 0;
  return size_arg(info, i, "program id");
}

// execute(executor, program, buffers, profile, id?) → Promise<{ nodeMicros?, graph }>
Napi::Value Execute(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ExecutorHandle* h = executor_arg(info, 0);
  size_t length = 0;
  const uint8_t* bytes = bytes_arg(info, 1, &length);
  std::vector<Buffer*> buffers = program_buffers(info, 2, h);
  const bool profile = info.Length() > 3 && info[3].IsBoolean() && info[3].As<Napi::Boolean>().Value();
  const uint64_t id = id_arg(info, 4);
  auto* w = new ExecuteWorker(env, h, std::vector<uint8_t>(bytes, bytes + length), std::move(buffers), profile, id);
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

// launchReplay(executor, id, length, buffers, uploads, downloads) → boolean. uploads: [buffer,
// offset, typed array] each; downloads: [buffer, offset, length, page-locked Uint8Array] each.
// true: program `id` (of `length` bytes, executed before with that id) was captured over these
// buffers and now runs — the uploads first, the downloads after it — and pollReplay says when it
// has finished. false: nothing was done (see Executor::launch); the caller runs it the usual way.
Napi::Value LaunchReplay(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ExecutorHandle* h = executor_arg(info, 0);
  const uint64_t id = id_arg(info, 1);
  const size_t length = size_arg(info, 2, "program length");
  std::vector<Buffer*> buffers = program_buffers(info, 3, h);
  if (h->replaying) return Napi::Boolean::New(env, false);
  auto list = [&](size_t i, const char* what) {
    if (info.Length() <= i || !info[i].IsArray()) throw Napi::TypeError::New(env, std::string(what) + " must be an array");
    return info[i].As<Napi::Array>();
  };
  auto region = [&](Napi::Array item, const char* what, uint32_t k, size_t bytes, Buffer** out) -> size_t {
    Napi::Value hv = item.Get(0u), ov = item.Get(1u);
    if (!hv.IsExternal() || !ov.IsNumber()) throw Napi::TypeError::New(env, std::string(what) + "[" + std::to_string(k) + "] is malformed");
    Buffer* b = hv.As<Napi::External<Buffer>>().Data();
    if (b == nullptr || b->ptr == nullptr) throw_coded(env, "DISPOSED", std::string(what) + "[" + std::to_string(k) + "]: the buffer was freed");
    if (b->device != h->executor->device()) throw_coded(env, "WRONG_DEVICE", std::string(what) + "[" + std::to_string(k) + "]: the buffer is on another device");
    const double o = ov.As<Napi::Number>().DoubleValue();
    if (!(o >= 0 && o <= 9007199254740991.0) || o != static_cast<double>(static_cast<uint64_t>(o)))
      throw Napi::RangeError::New(env, std::string(what) + "[" + std::to_string(k) + "]: offset must be a non-negative integer");
    const size_t offset = static_cast<size_t>(o);
    if (offset > b->size || bytes > b->size - offset)
      throw Napi::RangeError::New(env, std::string(what) + "[" + std::to_string(k) + "]: offset + length is past the end of the buffer");
    *out = b;
    return offset;
  };
  std::vector<Executor::Upload> ups;
  Napi::Array ua = list(4, "uploads");
  for (uint32_t k = 0; k < ua.Length(); k++) {
    Napi::Value v = ua.Get(k);
    if (!v.IsArray() || v.As<Napi::Array>().Length() != 3 || !v.As<Napi::Array>().Get(2u).IsTypedArray())
      throw Napi::TypeError::New(env, "uploads[" + std::to_string(k) + "] must be [buffer, offset, typed array]");
    Napi::Array item = v.As<Napi::Array>();
    Napi::TypedArray t = item.Get(2u).As<Napi::TypedArray>();
    Buffer* b = nullptr;
    const size_t offset = region(item, "uploads", k, t.ByteLength(), &b);
    ups.push_back({static_cast<uint8_t*>(b->ptr) + offset,
                   static_cast<const uint8_t*>(t.ArrayBuffer().Data()) + t.ByteOffset(), t.ByteLength()});
  }
  std::vector<Executor::Download> downs;
  std::vector<Napi::Value> keep;
  Napi::Array da = list(5, "downloads");
  for (uint32_t k = 0; k < da.Length(); k++) {
    Napi::Value v = da.Get(k);
    if (!v.IsArray() || v.As<Napi::Array>().Length() != 4 || !v.As<Napi::Array>().Get(3u).IsTypedArray())
      throw Napi::TypeError::New(env, "downloads[" + std::to_string(k) + "] must be [buffer, offset, length, Uint8Array]");
    Napi::Array item = v.As<Napi::Array>();
    Napi::Value lv = item.Get(2u);
    const double ld = lv.IsNumber() ? lv.As<Napi::Number>().DoubleValue() : -1;
    if (!(ld >= 0 && ld <= 9007199254740991.0) || ld != static_cast<double>(static_cast<uint64_t>(ld)))
      throw Napi::RangeError::New(env, "downloads[" + std::to_string(k) + "]: length must be a non-negative integer");
    const size_t bytes = static_cast<size_t>(ld);
    Napi::TypedArray into = item.Get(3u).As<Napi::TypedArray>();
    if (into.ByteLength() < bytes)
      throw Napi::RangeError::New(env, "downloads[" + std::to_string(k) + "]: the host array is shorter than length");
    Buffer* b = nullptr;
    const size_t offset = region(item, "downloads", k, bytes, &b);
    uint8_t* dst = static_cast<uint8_t*>(into.ArrayBuffer().Data()) + into.ByteOffset();
    if (bytes > 0 && !is_pinned(dst)) return Napi::Boolean::New(env, false);  // a DMA needs page-locked memory
    downs.push_back({dst, static_cast<const uint8_t*>(b->ptr) + offset, bytes});
    keep.push_back(into.ArrayBuffer());
  }
  std::vector<minfer::program::BufferBinding> bindings;
  for (Buffer* b : buffers) bindings.push_back({static_cast<uint8_t*>(b->ptr), b->size, false});
  bool launched = false;
  const ExecStatus s = h->executor->launch(id, length, bindings, ups, downs, &launched);
  if (!s.ok()) throw_coded(env, exec_code_name(s.code), s.message);
  if (!launched) return Napi::Boolean::New(env, false);
  h->replaying = true;
  h->busy++;
  for (Buffer* b : buffers) b->busy++;
  h->replay_buffers = std::move(buffers);
  h->replay_keep.clear();
  for (Napi::Value& v : keep) h->replay_keep.push_back(Napi::Persistent(v));
  return Napi::Boolean::New(env, true);
}

// pollReplay(executor) → false while the launched run is on the GPU, true when it has finished;
// throws its error (code OUT_OF_RANGE, CUDA_ERROR, …) when it failed.
Napi::Value PollReplay(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ExecutorHandle* h = executor_arg(info, 0);
  if (!h->replaying) throw_coded(env, "INVALID_ARGUMENT", "pollReplay: no run was launched");
  ExecStatus s;
  if (!h->executor->poll(&s)) return Napi::Boolean::New(env, false);
  h->replaying = false;
  h->busy--;
  for (Buffer* b : h->replay_buffers) b->busy--;
  h->replay_buffers.clear();
  h->replay_keep.clear();
  if (!s.ok()) throw_coded(env, exec_code_name(s.code), s.message);
  return Napi::Boolean::New(env, true);
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("probe", Napi::Function::New(env, Probe));
  exports.Set("memInfo", Napi::Function::New(env, MemInfo));
  exports.Set("alloc", Napi::Function::New(env, Alloc));
  exports.Set("free", Napi::Function::New(env, Free));
  exports.Set("write", Napi::Function::New(env, Write));
  exports.Set("read", Napi::Function::New(env, Read));
  exports.Set("allocHost", Napi::Function::New(env, AllocHost));
  exports.Set("selfTest", Napi::Function::New(env, SelfTest));
  exports.Set("checkProgram", Napi::Function::New(env, CheckProgram));
  exports.Set("fusedRuns", Napi::Function::New(env, FusedRuns));
  exports.Set("registeredOps", Napi::Function::New(env, RegisteredOps));
  exports.Set("createExecutor", Napi::Function::New(env, CreateExecutor));
  exports.Set("disposeExecutor", Napi::Function::New(env, DisposeExecutor));
  exports.Set("executorStats", Napi::Function::New(env, ExecutorStats));
  exports.Set("execute", Napi::Function::New(env, Execute));
  exports.Set("launchReplay", Napi::Function::New(env, LaunchReplay));
  exports.Set("pollReplay", Napi::Function::New(env, PollReplay));
  return exports;
}

}  // namespace

NODE_API_MODULE(minfer_cuda, Init)
