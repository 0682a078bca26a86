// CUDA runtime calls for the addon (see device.h). Every status is checked and reported with the
// call that failed.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>

#include "device.h"

namespace minfer::cuda {
namespace {

std::string fail(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

#define MINFER_CUDA_TRY(call)                   \
  do {                                          \
    const cudaError_t e_ = (call);              \
    if (e_ != cudaSuccess) return fail(#call, e_); \
  } while (0)

// Host <-> device copies of at least kStagedMin bytes go through two pinned staging buffers of
// kStageBytes per device, in chunks: chunk i uses buffer i % 2, so the host memcpy of one chunk
// overlaps the transfer of the other, and the transfers run at pinned-memory speed (a pageable
// cudaMemcpy is staged by the driver through its own smaller buffer, one piece at a time). The
// transfers go on the legacy default stream, as cudaMemcpy's do, so their ordering against other
// streams is unchanged; each call returns when its copy is complete. Calls on one device are
// serialized by its mutex (the buffers are shared). The buffers are allocated on first use and
// kept for the life of the process.
constexpr size_t kStageBytes = size_t{8} << 20;
constexpr size_t kStagedMin = size_t{64} << 10;
constexpr int kMaxStages = 64;  // devices with staging buffers (a device index beyond: plain copies)

struct Stage {
  std::mutex mu;
  uint8_t* buf[2] = {nullptr, nullptr};
  cudaEvent_t done[2] = {nullptr, nullptr};  // the last transfer through buf[i]
  bool ready = false;
};

Stage* stage_of(int device) {
  static Stage stages[kMaxStages];
  return device >= 0 && device < kMaxStages ? &stages[device] : nullptr;
}

// Allocates a stage's buffers and events (under its mutex, device current).
std::string stage_init(Stage* st) {
  if (st->ready) return "";
  for (int i = 0; i < 2; i++) {
    if (!st->buf[i]) MINFER_CUDA_TRY(cudaHostAlloc(reinterpret_cast<void**>(&st->buf[i]), kStageBytes, cudaHostAllocDefault));
    if (!st->done[i]) MINFER_CUDA_TRY(cudaEventCreateWithFlags(&st->done[i], cudaEventDisableTiming));
  }
  st->ready = true;
  return "";
}

std::string staged_to_device(Stage* st, uint8_t* dst, const uint8_t* src, size_t bytes) {
  for (size_t off = 0, i = 0; off < bytes; i++) {
    const size_t n = std::min(kStageBytes, bytes - off);
    const int b = static_cast<int>(i % 2);
    MINFER_CUDA_TRY(cudaEventSynchronize(st->done[b]));  // the transfer that last read buf[b] is over
    std::memcpy(st->buf[b], src + off, n);
    MINFER_CUDA_TRY(cudaMemcpyAsync(dst + off, st->buf[b], n, cudaMemcpyHostToDevice, 0));
    MINFER_CUDA_TRY(cudaEventRecord(st->done[b], 0));
    off += n;
  }
  MINFER_CUDA_TRY(cudaEventSynchronize(st->done[0]));
  MINFER_CUDA_TRY(cudaEventSynchronize(st->done[1]));
  return "";
}

std::string staged_to_host(Stage* st, uint8_t* dst, const uint8_t* src, size_t bytes) {
  const size_t chunks = (bytes + kStageBytes - 1) / kStageBytes;
  auto issue = [&](size_t i) -> std::string {
    const size_t off = i * kStageBytes, n = std::min(kStageBytes, bytes - off);
    const int b = static_cast<int>(i % 2);
    MINFER_CUDA_TRY(cudaMemcpyAsync(st->buf[b], src + off, n, cudaMemcpyDeviceToHost, 0));
    MINFER_CUDA_TRY(cudaEventRecord(st->done[b], 0));
    return "";
  };
  if (std::string e = issue(0); !e.empty()) return e;
  for (size_t i = 0; i < chunks; i++) {
    // The next chunk goes into the other buffer, whose contents were copied out in step i - 1.
    if (i + 1 < chunks)
      if (std::string e = issue(i + 1); !e.empty()) return e;
    const int b = static_cast<int>(i % 2);
    MINFER_CUDA_TRY(cudaEventSynchronize(st->done[b]));
    const size_t off = i * kStageBytes;
    std::memcpy(dst + off, st->buf[b], std::min(kStageBytes, bytes - off));
  }
  return "";
}

// A copy under kStagedMin is one cudaMemcpy from pageable memory, which returns once the driver
// has staged the source, before the transfer has necessarily reached the device (CUDA's "API
// synchronization behavior"). Kernels on the legacy stream would wait for it, but executors run on
// non-blocking streams: each such copy records its device's upload event on the legacy stream
// after itself, and an executor's stream waits for that event (wait_for_uploads). (Seen on the
// H200 while another process used the GPU: op-conformance cases read inputs of 20-64 KB before
// their transfer landed.)
struct Uploads {
  std::mutex mu;
  cudaEvent_t done = nullptr;  // recorded after the device's last small copy
};

Uploads* uploads_of(int device) {
  static Uploads uploads[kMaxStages];
  return device >= 0 && device < kMaxStages ? &uploads[device] : nullptr;
}

__global__ void self_test_kernel(int32_t* out, int n, int seed) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = seed + 2 * i;
}

}  // namespace

std::string probe(Versions* v, std::vector<DeviceInfo>* out) {
  MINFER_CUDA_TRY(cudaRuntimeGetVersion(&v->runtime));
  // The driver version is 0 when no driver is installed; cudaGetDeviceCount then says why.
  MINFER_CUDA_TRY(cudaDriverGetVersion(&v->driver));
  int count = 0;
  MINFER_CUDA_TRY(cudaGetDeviceCount(&count));
  for (int i = 0; i < count; i++) {
    cudaDeviceProp p{};
    MINFER_CUDA_TRY(cudaGetDeviceProperties(&p, i));
    DeviceInfo d;
    d.index = i;
    d.name = p.name;
    d.major = p.major;
    d.minor = p.minor;
    d.sm_count = p.multiProcessorCount;
    char bus[32] = {0};
    MINFER_CUDA_TRY(cudaDeviceGetPCIBusId(bus, sizeof bus, i));
    d.pci_bus = bus;
    MINFER_CUDA_TRY(cudaSetDevice(i));
    MINFER_CUDA_TRY(cudaMemGetInfo(&d.free, &d.total));
    out->push_back(d);
  }
  return "";
}

std::string mem_info(int device, size_t* free, size_t* total) {
  MINFER_CUDA_TRY(cudaSetDevice(device));
  MINFER_CUDA_TRY(cudaMemGetInfo(free, total));
  return "";
}

// Slack past every buffer's last byte: the kernels read quantized blocks that are only 2-byte
// aligned with 8-byte aligned loads (loads.cuh), which may reach into the 8-byte word after a
// buffer's last block; the slack keeps those reads inside the allocation (zeroed, never used).
constexpr size_t kAllocSlack = 16;

std::string alloc(int device, size_t bytes, void** ptr) {
  MINFER_CUDA_TRY(cudaSetDevice(device));
  if (bytes > SIZE_MAX - kAllocSlack) return "cudaMalloc: " + std::to_string(bytes) + " bytes is too large";
  const size_t padded = bytes + kAllocSlack;
  MINFER_CUDA_TRY(cudaMalloc(ptr, padded));
  const cudaError_t e = cudaMemset(*ptr, 0, padded);
  if (e != cudaSuccess) {
    cudaFree(*ptr);
    *ptr = nullptr;
    return fail("cudaMemset", e);
  }
  return "";
}

std::string release(int device, void* ptr) {
  MINFER_CUDA_TRY(cudaSetDevice(device));
  MINFER_CUDA_TRY(cudaFree(ptr));
  return "";
}

std::string copy_to_device(int device, void* dst, const void* src, size_t bytes) {
  MINFER_CUDA_TRY(cudaSetDevice(device));
  Stage* st = bytes >= kStagedMin ? stage_of(device) : nullptr;
  if (!st) {
    MINFER_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    Uploads* u = uploads_of(device);
    if (!u) {  // a device index beyond the table: wait for the transfer here
      MINFER_CUDA_TRY(cudaStreamSynchronize(0));
      return "";
    }
    std::lock_guard<std::mutex> lock(u->mu);
    if (!u->done) MINFER_CUDA_TRY(cudaEventCreateWithFlags(&u->done, cudaEventDisableTiming));
    MINFER_CUDA_TRY(cudaEventRecord(u->done, 0));
    return "";
  }
  std::lock_guard<std::mutex> lock(st->mu);
  if (std::string e = stage_init(st); !e.empty()) return e;
  return staged_to_device(st, static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), bytes);
}

std::string wait_for_uploads(int device, void* stream) {
  Uploads* u = uploads_of(device);
  if (!u) return "";
  std::lock_guard<std::mutex> lock(u->mu);
  if (u->done) MINFER_CUDA_TRY(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), u->done, 0));
  return "";
}

// Whether p is page-locked host memory (cudaHostAlloc / cudaHostRegister): a copy into it needs
// no staging. Pageable memory is cudaMemoryTypeUnregistered (not an error).
bool is_pinned(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();  // clear it: the answer is only "not pinned"
    return false;
  }
  return a.type == cudaMemoryTypeHost;
}

std::string copy_to_host(int device, void* dst, const void* src, size_t bytes) {
  MINFER_CUDA_TRY(cudaSetDevice(device));
  Stage* st = bytes >= kStagedMin && !is_pinned(dst) ? stage_of(device) : nullptr;
  if (!st) {
    MINFER_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
    return "";
  }
  std::lock_guard<std::mutex> lock(st->mu);
  if (std::string e = stage_init(st); !e.empty()) return e;
  return staged_to_host(st, static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), bytes);
}

std::string alloc_host(int device, size_t bytes, void** ptr) {
  MINFER_CUDA_TRY(cudaSetDevice(device));
  MINFER_CUDA_TRY(cudaHostAlloc(ptr, bytes == 0 ? 1 : bytes, cudaHostAllocPortable));
  std::memset(*ptr, 0, bytes);
  return "";
}

std::string release_host(void* ptr) {
  MINFER_CUDA_TRY(cudaFreeHost(ptr));
  return "";
}

std::string self_test(int device, int n, int seed, std::vector<int32_t>* out) {
  if (n <= 0 || n > (1 << 24)) return "self_test: n must be in [1, 2^24]";
  MINFER_CUDA_TRY(cudaSetDevice(device));
  int32_t* d = nullptr;
  MINFER_CUDA_TRY(cudaMalloc(&d, sizeof(int32_t) * n));
  self_test_kernel<<<(n + 255) / 256, 256>>>(d, n, seed);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e == cudaSuccess) {
    out->resize(n);
    e = cudaMemcpy(out->data(), d, sizeof(int32_t) * n, cudaMemcpyDeviceToHost);
  }
  cudaFree(d);
  if (e != cudaSuccess) return fail("self_test kernel", e);
  return "";
}

}  // namespace minfer::cuda
