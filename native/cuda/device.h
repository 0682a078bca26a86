// The CUDA runtime calls the addon makes, behind plain C++ (no CUDA types), each returning a
// status: an empty string when it succeeded, else the failing call and CUDA's message.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace minfer::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;
  int sm_count = 0;
  size_t total = 0, free = 0;
  std::string pci_bus;
};

struct Versions {
  int runtime = 0, driver = 0;
};

// Devices the runtime sees (an error when there is no driver or no device: the reason).
std::string probe(Versions* v, std::vector<DeviceInfo>* out);
std::string mem_info(int device, size_t* free, size_t* total);
std::string alloc(int device, size_t bytes, void** ptr);
std::string release(int device, void* ptr);
std::string copy_to_device(int device, void* dst, const void* src, size_t bytes);
// Makes `stream` (a cudaStream_t) wait, on the device, for every copy_to_device of `device` made
// before this call. Executors call it before their first launch: their non-blocking streams do not
// wait for the legacy stream the copies use.
std::string wait_for_uploads(int device, void* stream);
std::string copy_to_host(int device, void* dst, const void* src, size_t bytes);
// Whether p is page-locked host memory (alloc_host, cudaHostRegister): a DMA can land there.
bool is_pinned(const void* p);
// Page-locked host memory (zero-filled) for reads that are one DMA transfer; release_host frees it.
std::string alloc_host(int device, size_t bytes, void** ptr);
std::string release_host(void* ptr);
// Launches a kernel that writes out[i] = seed + 2·i (n elements) and reads it back: proves the
// addon's machine code (or PTX) runs on this device.
std::string self_test(int device, int n, int seed, std::vector<int32_t>* out);

}  // namespace minfer::cuda
