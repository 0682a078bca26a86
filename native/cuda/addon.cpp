// The CUDA backend's addon: device discovery, memory accounting, device buffers and copies,
// and a kernel self-test, exposed to JavaScript (packages/backend-cuda/src/native.ts). Every
// index and length from JavaScript is checked before it reaches CUDA; every CUDA status is checked
// (device.cu) and a failure throws an Error naming the call.
#include <napi.h>

#include <cstring>
#include <limits>

#include "device.h"

namespace {

using namespace minfer::cuda;

struct Buffer {
  int device = 0;
  void* ptr = nullptr;
  size_t size = 0;
};

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

// read(buffer, offset, length) → Uint8Array
Napi::Value Read(const Napi::CallbackInfo& info) {
  Buffer* b = buffer_arg(info, 0);
  const size_t offset = size_arg(info, 1, "offset");
  const size_t bytes = size_arg(info, 2, "length");
  if (offset > b->size || bytes > b->size - offset)
    throw Napi::RangeError::New(info.Env(), "read: offset + length is past the end of the buffer");
  Napi::Uint8Array out = Napi::Uint8Array::New(info.Env(), bytes);
  if (bytes > 0) check(info.Env(), copy_to_host(b->device, out.Data(), static_cast<uint8_t*>(b->ptr) + offset, bytes));
  return out;
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

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("probe", Napi::Function::New(env, Probe));
  exports.Set("memInfo", Napi::Function::New(env, MemInfo));
  exports.Set("alloc", Napi::Function::New(env, Alloc));
  exports.Set("free", Napi::Function::New(env, Free));
  exports.Set("write", Napi::Function::New(env, Write));
  exports.Set("read", Napi::Function::New(env, Read));
  exports.Set("selfTest", Napi::Function::New(env, SelfTest));
  return exports;
}

}  // namespace

NODE_API_MODULE(minfer_cuda, Init)
