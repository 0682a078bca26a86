// The Node-API face of the CPU backend: features, Runtime (pool + executor), Buffer (allocate,
// mapFile, write, read, dispose), checkProgram and quantizeWeights. Every native Status becomes a
// JavaScript Error with a `code` in MakeError/Check below, the one choke point; nothing is
// swallowed.
#include <napi.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "buffers.h"
#include "cpu_features.h"
#include "executor.h"
#include "op_table.h"
#include "quantize_weights.h"
#include "status.h"

namespace minfer::cpu {
namespace {

// ---- the choke point ---------------------------------------------------------------------

Napi::Error MakeError(Napi::Env env, const Status& s) {
  Napi::Error e = Napi::Error::New(env, s.message);
  e.Set("code", Napi::String::New(env, code_name(s.code)));
  return e;
}

void Check(Napi::Env env, const Status& s) {
  if (!s.ok()) throw MakeError(env, s);
}

[[noreturn]] void Fail(Napi::Env env, Code code, const std::string& message) {
  throw MakeError(env, Status::Error(code, message));
}

// ---- argument conversion ---------------------------------------------------------------

uint64_t ToByteCount(Napi::Env env, const Napi::Value& v, const std::string& what) {
  if (!v.IsNumber()) Fail(env, Code::BadArgument, what + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || d < 0 || d != std::floor(d) || d > 9007199254740991.0) {
    Fail(env, Code::BadArgument, what + " must be a non-negative safe integer, got " + std::to_string(d));
  }
  return static_cast<uint64_t>(d);
}

struct Bytes {
  const uint8_t* data = nullptr;
  size_t length = 0;
};

Bytes ToBytes(Napi::Env env, const Napi::Value& v, const std::string& what) {
  if (v.IsTypedArray()) {
    Napi::TypedArray t = v.As<Napi::TypedArray>();
    Napi::ArrayBuffer ab = t.ArrayBuffer();
    return {static_cast<const uint8_t*>(ab.Data()) + t.ByteOffset(), t.ByteLength()};
  }
  if (v.IsDataView()) {
    Napi::DataView t = v.As<Napi::DataView>();
    Napi::ArrayBuffer ab = t.ArrayBuffer();
    return {static_cast<const uint8_t*>(ab.Data()) + t.ByteOffset(), t.ByteLength()};
  }
  if (v.IsArrayBuffer()) {
    Napi::ArrayBuffer ab = v.As<Napi::ArrayBuffer>();
    return {static_cast<const uint8_t*>(ab.Data()), ab.ByteLength()};
  }
  Fail(env, Code::BadArgument, what + " must be a TypedArray, DataView or ArrayBuffer");
}

// ---- Buffer ------------------------------------------------------------------------------

struct AddonData {
  Napi::FunctionReference buffer_ctor;
};

class BufferObject : public Napi::ObjectWrap<BufferObject> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "NativeBuffer",
                       {
                           InstanceAccessor<&BufferObject::Size>("size"),
                           InstanceAccessor<&BufferObject::ReadOnly>("readOnly"),
                           InstanceAccessor<&BufferObject::Disposed>("disposed"),
                           InstanceMethod<&BufferObject::Write>("write"),
                           InstanceMethod<&BufferObject::Read>("read"),
                           InstanceMethod<&BufferObject::Dispose>("dispose"),
                       });
  }

  explicit BufferObject(const Napi::CallbackInfo& info) : Napi::ObjectWrap<BufferObject>(info) {}

  static Napi::Object Wrap(Napi::Env env, std::shared_ptr<Buffer> buffer) {
    Napi::Object o = env.GetInstanceData<AddonData>()->buffer_ctor.New({});
    BufferObject::Unwrap(o)->buffer_ = std::move(buffer);
    return o;
  }

  // The buffer behind a JavaScript value, or a INVALID_ARGUMENT error.
  static std::shared_ptr<Buffer> From(Napi::Env env, const Napi::Value& v, const std::string& what) {
    Napi::FunctionReference& ctor = env.GetInstanceData<AddonData>()->buffer_ctor;
    if (!v.IsObject() || !v.As<Napi::Object>().InstanceOf(ctor.Value())) {
      Fail(env, Code::BadArgument, what + " is not a CPU backend buffer");
    }
    std::shared_ptr<Buffer> b = BufferObject::Unwrap(v.As<Napi::Object>())->buffer_;
    if (!b) Fail(env, Code::BadArgument, what + " is not a CPU backend buffer");
    return b;
  }

 private:
  Buffer& Get(Napi::Env env) {
    if (!buffer_) Fail(env, Code::BadArgument, "not a CPU backend buffer");
    return *buffer_;
  }
  Napi::Value Size(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(Get(info.Env()).size()));
  }
  Napi::Value ReadOnly(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), Get(info.Env()).read_only());
  }
  Napi::Value Disposed(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), Get(info.Env()).disposed());
  }
  // write(offset, data)
  Napi::Value Write(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const uint64_t offset = ToByteCount(env, info[0], "offset");
    const Bytes src = ToBytes(env, info[1], "data");
    Check(env, Get(env).write(offset, src.data, src.length));
    return env.Undefined();
  }
  // read(offset, length[, into]) -> Uint8Array (a copy; with into, its first length bytes)
  Napi::Value Read(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const uint64_t offset = ToByteCount(env, info[0], "offset");
    const uint64_t length = ToByteCount(env, info[1], "length");
    Buffer& b = Get(env);
    if (b.disposed()) Fail(env, Code::Disposed, "read from a disposed buffer");
    if (offset > b.size() || length > b.size() - offset) {
      Check(env, b.read(offset, nullptr, length));  // the range error, with its message
    }
    if (info.Length() > 2 && !info[2].IsUndefined()) {
      if (!info[2].IsTypedArray() || info[2].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
        Fail(env, Code::BadArgument, "read: into must be a Uint8Array");
      Napi::Uint8Array into = info[2].As<Napi::Uint8Array>();
      if (into.ByteLength() < length)
        Fail(env, Code::BadArgument, "read: into holds " + std::to_string(into.ByteLength()) + " bytes, " +
                                            std::to_string(length) + " were asked for");
      Check(env, b.read(offset, into.Data(), length));
      return Napi::Uint8Array::New(env, static_cast<size_t>(length), into.ArrayBuffer(), into.ByteOffset());
    }
    Napi::Uint8Array out = Napi::Uint8Array::New(env, static_cast<size_t>(length));
    Check(env, b.read(offset, out.Data(), length));
    return out;
  }
  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    Check(info.Env(), Get(info.Env()).dispose());
    return info.Env().Undefined();
  }

  std::shared_ptr<Buffer> buffer_;
};

// allocate(bytes) -> NativeBuffer
Napi::Value Allocate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Buffer> b;
  Check(env, Buffer::allocate(ToByteCount(env, info[0], "bytes"), &b));
  return BufferObject::Wrap(env, std::move(b));
}

// mapFile(path, offset, length) -> NativeBuffer
Napi::Value MapFile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) Fail(env, Code::BadArgument, "path must be a string");
  const std::string path = info[0].As<Napi::String>().Utf8Value();
  std::shared_ptr<Buffer> b;
  Check(env, Buffer::map_file(path, ToByteCount(env, info[1], "offset"), ToByteCount(env, info[2], "length"), &b));
  return BufferObject::Wrap(env, std::move(b));
}

// ---- Runtime -----------------------------------------------------------------------------

struct RuntimeState {
  std::unique_ptr<Executor> executor;
  int in_flight = 0;  // executes started and not yet settled (touched on the JS thread only)
};

// Runs one execute on a libuv worker thread (which joins the pool as thread 0), so the
// JavaScript thread stays free. Holds the runtime and every buffer until it settles.
class ExecuteWorker : public Napi::AsyncWorker {
 public:
  ExecuteWorker(Napi::Env env, std::shared_ptr<RuntimeState> rt, std::vector<uint8_t> program,
                std::vector<std::shared_ptr<Buffer>> held, std::vector<BufferBinding> bindings, bool profile)
      : Napi::AsyncWorker(env, "minfer.cpu.execute"),
        deferred_(Napi::Promise::Deferred::New(env)),
        rt_(std::move(rt)),
        program_(std::move(program)),
        held_(std::move(held)),
        bindings_(std::move(bindings)),
        profile_(profile) {
    rt_->in_flight++;
  }
  ~ExecuteWorker() override { Settle(); }

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override {
    try {
      status_ = rt_->executor->execute(program_.data(), program_.size(), bindings_, profile_ ? &micros_ : nullptr);
    } catch (const std::exception& e) {
      status_ = Status::Error(Code::Internal, std::string("execute threw: ") + e.what());
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    Settle();
    if (!status_.ok()) {
      deferred_.Reject(MakeError(env, status_).Value());
      return;
    }
    Napi::Object result = Napi::Object::New(env);
    if (profile_) {
      Napi::Float64Array t = Napi::Float64Array::New(env, micros_.size());
      for (size_t i = 0; i < micros_.size(); i++) t[i] = micros_[i];
      result.Set("nodeMicros", t);
    }
    deferred_.Resolve(result);
  }
  void OnError(const Napi::Error& e) override {
    Settle();
    deferred_.Reject(e.Value());
  }

 private:
  void Settle() {
    if (settled_) return;
    settled_ = true;
    for (auto& b : held_) b->release();
    rt_->in_flight--;
  }

  Napi::Promise::Deferred deferred_;
  std::shared_ptr<RuntimeState> rt_;
  std::vector<uint8_t> program_;
  std::vector<std::shared_ptr<Buffer>> held_;
  std::vector<BufferBinding> bindings_;
  bool profile_;
  bool settled_ = false;
  Status status_;
  std::vector<double> micros_;
};

class RuntimeObject : public Napi::ObjectWrap<RuntimeObject> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Runtime",
                       {
                           InstanceAccessor<&RuntimeObject::Threads>("threads"),
                           InstanceAccessor<&RuntimeObject::Simd>("simd"),
                           InstanceAccessor<&RuntimeObject::PanelGemm>("panelGemm"),
                           InstanceAccessor<&RuntimeObject::Disposed>("disposed"),
                           InstanceMethod<&RuntimeObject::Execute>("execute"),
                           InstanceMethod<&RuntimeObject::Dispose>("dispose"),
                       });
  }

  // new Runtime({ threads?: number, simd?: string, panelGemm?: boolean })
  explicit RuntimeObject(const Napi::CallbackInfo& info) : Napi::ObjectWrap<RuntimeObject>(info) {
    Napi::Env env = info.Env();
    int threads = cpu_features().physical_cores;
    std::string simd;
    bool panel_gemm = true;
    if (info.Length() > 0 && info[0].IsObject()) {
      Napi::Object o = info[0].As<Napi::Object>();
      Napi::Value t = o.Get("threads");
      if (!t.IsUndefined()) {
        const uint64_t n = ToByteCount(env, t, "threads");
        if (n < 1 || n > 1024) Fail(env, Code::BadArgument, "threads must be 1..1024, got " + std::to_string(n));
        threads = static_cast<int>(n);
      }
      Napi::Value s = o.Get("simd");
      if (!s.IsUndefined()) {
        if (!s.IsString()) Fail(env, Code::BadArgument, "simd must be a string");
        simd = s.As<Napi::String>().Utf8Value();
      }
      Napi::Value pg = o.Get("panelGemm");
      if (!pg.IsUndefined()) {
        if (!pg.IsBoolean()) Fail(env, Code::BadArgument, "panelGemm must be a boolean");
        panel_gemm = pg.As<Napi::Boolean>().Value();
      }
    }
    SimdLevel level;
    Check(env, choose_simd_level(simd, &level));
    state_ = std::make_shared<RuntimeState>();
    state_->executor = std::make_unique<Executor>(threads, level, panel_gemm);
  }

 private:
  RuntimeState& Get(Napi::Env env) {
    if (!state_->executor) Fail(env, Code::Disposed, "the runtime was disposed");
    return *state_;
  }
  Napi::Value PanelGemm(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), Get(info.Env()).executor->panel_gemm());
  }
  Napi::Value Threads(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), Get(info.Env()).executor->threads());
  }
  Napi::Value Simd(const Napi::CallbackInfo& info) {
    return Napi::String::New(info.Env(), simd_level_name(Get(info.Env()).executor->simd()));
  }
  Napi::Value Disposed(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), !state_->executor);
  }

  // execute(program: Uint8Array, buffers: NativeBuffer[], profile: boolean) -> Promise<{ nodeMicros? }>
  Napi::Value Execute(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Get(env);
    const Bytes program = ToBytes(env, info[0], "program");
    if (!info[1].IsArray()) Fail(env, Code::BadArgument, "buffers must be an array");
    Napi::Array list = info[1].As<Napi::Array>();
    const bool profile = info[2].ToBoolean().Value();

    std::vector<std::shared_ptr<Buffer>> buffers;
    for (uint32_t i = 0; i < list.Length(); i++) {
      buffers.push_back(BufferObject::From(env, list.Get(i), "buffers[" + std::to_string(i) + "]"));
    }
    // Acquire every buffer (refusing disposed ones) before anything runs; undo on failure.
    std::vector<std::shared_ptr<Buffer>> held;
    std::vector<BufferBinding> bindings;
    for (size_t i = 0; i < buffers.size(); i++) {
      uint8_t* data = nullptr;
      Status s = buffers[i]->acquire(&data);
      if (!s.ok()) {
        for (auto& b : held) b->release();
        s.message = "buffers[" + std::to_string(i) + "]: " + s.message;
        throw MakeError(env, s);
      }
      held.push_back(buffers[i]);
      bindings.push_back(BufferBinding{data, buffers[i]->size(), buffers[i]->read_only()});
    }
    auto* worker = new ExecuteWorker(env, state_, std::vector<uint8_t>(program.data, program.data + program.length),
                                     std::move(held), std::move(bindings), profile);
    Napi::Promise promise = worker->Promise();
    worker->Queue();
    return promise;
  }

  // Refused (BUSY) while an execute is in flight; a second dispose does nothing.
  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!state_->executor) return env.Undefined();
    if (state_->in_flight > 0) {
      Fail(env, Code::Busy, "cannot dispose the runtime while an execute is running; await it first");
    }
    state_->executor.reset();
    return env.Undefined();
  }

  std::shared_ptr<RuntimeState> state_;
};

// ---- module functions --------------------------------------------------------------------

// features() -> { detected, usableLevels, features, amx: { present, usable, note }, logicalCpus, physicalCores }
Napi::Value Features(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const CpuFeatures& f = cpu_features();
  Napi::Object o = Napi::Object::New(env);
  o.Set("detected", simd_level_name(f.detected));
  Napi::Array levels = Napi::Array::New(env);
  uint32_t n = 0;
  for (SimdLevel l : {SimdLevel::Scalar, SimdLevel::AVX2, SimdLevel::AVX512, SimdLevel::NEON}) {
    if (simd_level_usable(l)) levels.Set(n++, simd_level_name(l));
  }
  o.Set("usableLevels", levels);
  Napi::Array names = Napi::Array::New(env, f.features.size());
  for (size_t i = 0; i < f.features.size(); i++) names.Set(static_cast<uint32_t>(i), f.features[i]);
  o.Set("features", names);
  Napi::Object amx = Napi::Object::New(env);
  amx.Set("present", f.amx_in_cpuid);
  amx.Set("usable", f.amx_usable);
  amx.Set("note", f.amx_note);
  o.Set("amx", amx);
  o.Set("logicalCpus", f.logical_cpus);
  o.Set("physicalCores", f.physical_cores);
  return o;
}

// registeredOps() -> names of the ops that have a kernel in this build
Napi::Value RegisteredOps(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array out = Napi::Array::New(env);
  uint32_t n = 0;
  for (int32_t code = 0; code < 256; code++) {
    const OpInfo* op = op_info(code);
    if (op && find_kernel(op->op)) out.Set(n++, op->name);
  }
  return out;
}

// checkProgram(program, bufferSizes, simd?) -> null | { code, message }
Napi::Value CheckProgram(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Bytes program = ToBytes(env, info[0], "program");
  if (!info[1].IsArray()) Fail(env, Code::BadArgument, "bufferSizes must be an array of byte counts");
  Napi::Array list = info[1].As<Napi::Array>();
  std::vector<uint64_t> sizes;
  for (uint32_t i = 0; i < list.Length(); i++) {
    sizes.push_back(ToByteCount(env, list.Get(i), "bufferSizes[" + std::to_string(i) + "]"));
  }
  std::string simd;
  if (info.Length() > 2 && info[2].IsString()) simd = info[2].As<Napi::String>().Utf8Value();
  SimdLevel level;
  Check(env, choose_simd_level(simd, &level));
  const Status s = check_program(program.data, program.length, sizes, level);
  if (s.ok()) return env.Null();
  Napi::Object o = Napi::Object::New(env);
  o.Set("code", code_name(s.code));
  o.Set("message", s.message);
  return o;
}

// ---- weight quantization -----------------------------------------------------------------

uint64_t ToCount(Napi::Env env, const Napi::Value& v, const std::string& what) {
  const uint64_t n = ToByteCount(env, v, what);
  if (n == 0) Fail(env, Code::BadArgument, what + " must be positive");
  return n;
}

program::DType ToWeightDtype(Napi::Env env, const Napi::Value& v, const std::string& what, bool source) {
  if (!v.IsNumber()) Fail(env, Code::BadArgument, what + " must be a dtype id (a number)");
  const double d = v.As<Napi::Number>().DoubleValue();
  const bool id = d == std::floor(d) && d >= 0 && d < 256;  // false for NaN and ±Infinity
  const auto t = static_cast<program::DType>(id ? static_cast<int32_t>(d) : -1);
  int32_t bs = 0, ts = 0;
  const bool ok = id && (source ? qw::quantize_source(t) : qw::quantize_layout(t, &bs, &ts));
  if (!ok) {
    std::string list;
    for (int32_t k = 0; k < 256; k++) {
      const auto u = static_cast<program::DType>(k);
      if (source ? qw::quantize_source(u) : qw::quantize_layout(u, &bs, &ts)) {
        list += (list.empty() ? "" : ", ") + std::string(program::dtype_name(u)) + " (" + std::to_string(k) + ")";
      }
    }
    Fail(env, Code::BadArgument, what + " " + std::to_string(d) + " is not supported; supported: " + list);
  }
  return t;
}

// quantizeWeights(dtype, src, srcDtype, rowLength, importance?) -> Uint8Array: the values of src
// (F32, F16 or BF16, whole rows of rowLength) quantized as @minfer/gguf's quantize would.
// The result is written to native memory and copied into the returned array at the end.
Napi::Value QuantizeWeights(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const program::DType type = ToWeightDtype(env, info[0], "dtype", false);
  const Bytes src = ToBytes(env, info[1], "src");
  const program::DType src_type = ToWeightDtype(env, info[2], "srcDtype", true);
  const uint64_t row_len = ToCount(env, info[3], "rowLength");
  int32_t bs = 0, ts = 0;
  qw::quantize_layout(type, &bs, &ts);
  const std::string name = program::dtype_name(type);
  const uint64_t esize = src_type == program::DType::F32 ? 4 : 2;
  if (src.length % esize != 0) {
    Fail(env, Code::BadArgument, "src holds " + std::to_string(src.length) + " bytes, not a whole number of " +
                                     program::dtype_name(src_type) + " values");
  }
  const uint64_t n = src.length / esize;
  if (row_len % static_cast<uint64_t>(bs) != 0) {
    Fail(env, Code::BadArgument, "rowLength " + std::to_string(row_len) + " is not a whole number of " + name +
                                     " blocks of " + std::to_string(bs));
  }
  if (n % row_len != 0) {
    Fail(env, Code::BadArgument, std::to_string(n) + " values are not whole rows of rowLength " + std::to_string(row_len));
  }
  std::vector<float> imp;
  if (info.Length() > 4 && !info[4].IsUndefined() && !info[4].IsNull()) {
    if (!info[4].IsTypedArray() || info[4].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
      Fail(env, Code::BadArgument, "importance must be a Float32Array");
    }
    Napi::Float32Array a = info[4].As<Napi::Float32Array>();
    if (a.ElementLength() != row_len) {
      Fail(env, Code::BadArgument, "importance holds " + std::to_string(a.ElementLength()) +
                                       " values; it needs one per column (rowLength " + std::to_string(row_len) + ")");
    }
    imp.assign(a.Data(), a.Data() + row_len);
    for (uint64_t j = 0; j < row_len; j++) {
      if (!(imp[j] >= 0 && std::isfinite(imp[j]))) {
        Fail(env, Code::BadArgument, "importance[" + std::to_string(j) + "] is " + std::to_string(imp[j]) +
                                         ": it must be finite and >= 0");
      }
    }
  }
  std::vector<uint8_t> bytes(n / static_cast<uint64_t>(bs) * static_cast<uint64_t>(ts));
  qw::quantize_rows(type, src_type, src.data, static_cast<int64_t>(n), static_cast<int64_t>(row_len),
                    imp.empty() ? nullptr : imp.data(), bytes.data());
  Napi::Uint8Array out = Napi::Uint8Array::New(env, bytes.size());
  if (!bytes.empty()) std::memcpy(out.Data(), bytes.data(), bytes.size());
  return out;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto* data = new AddonData();
  Napi::Function buffer = BufferObject::Define(env);
  data->buffer_ctor = Napi::Persistent(buffer);
  env.SetInstanceData<AddonData>(data);
  exports.Set("NativeBuffer", buffer);
  exports.Set("Runtime", RuntimeObject::Define(env));
  exports.Set("allocate", Napi::Function::New<Allocate>(env, "allocate"));
  exports.Set("mapFile", Napi::Function::New<MapFile>(env, "mapFile"));
  exports.Set("features", Napi::Function::New<Features>(env, "features"));
  exports.Set("registeredOps", Napi::Function::New<RegisteredOps>(env, "registeredOps"));
  exports.Set("checkProgram", Napi::Function::New<CheckProgram>(env, "checkProgram"));
  exports.Set("quantizeWeights", Napi::Function::New<QuantizeWeights>(env, "quantizeWeights"));
  return exports;
}

}  // namespace
}  // namespace minfer::cpu

static Napi::Object InitAddon(Napi::Env env, Napi::Object exports) { return minfer::cpu::Init(env, exports); }

NODE_API_MODULE(minfer_cpu, InitAddon)
