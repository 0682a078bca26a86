// CUDA runtime calls for the addon (see device.h). Every status is checked and reported with the
// call that failed.
#include <cuda_runtime.h>

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

std::string alloc(int device, size_t bytes, void** ptr) {
  MINFER_CUDA_TRY(cudaSetDevice(device));
  MINFER_CUDA_TRY(cudaMalloc(ptr, bytes == 0 ? 1 : bytes));
  const cudaError_t e = cudaMemset(*ptr, 0, bytes);
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
  MINFER_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  return "";
}

std::string copy_to_host(int device, void* dst, const void* src, size_t bytes) {
  MINFER_CUDA_TRY(cudaSetDevice(device));
  MINFER_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
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
