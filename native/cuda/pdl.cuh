// Programmatic dependent launch (Hopper and later): a kernel launched with launch_k while PDL is
// on may be scheduled before the kernel ahead of it in the stream has finished, so its launch
// latency overlaps that kernel's tail. Every kernel launched this way calls pdl_begin() first:
// it waits there until the previous kernel has completed and its memory is visible (nothing is
// read or written before), then lets the next kernel begin launching. A kernel launched without
// the attribute (PDL off, or a <<<>>> launch) passes pdl_begin() at once.
//
// Whether launches use it is set per enqueue by the executor (PdlScope, from Tuning::pdl and the
// device's compute capability), so the launch helpers need no extra argument.
#pragma once
#include <cuda_runtime.h>

#include <utility>

namespace minfer::cuda {

__device__ __forceinline__ void pdl_begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Whether launch_k adds the programmatic-serialization attribute on this thread now.
bool& pdl_on();

struct PdlScope {
  bool saved;
  explicit PdlScope(bool on) : saved(pdl_on()) { pdl_on() = on; }
  ~PdlScope() { pdl_on() = saved; }
};

// kernel<<<grid, block, smem, stream>>>(args...), with PDL when pdl_on(). The kernel must call
// pdl_begin() before touching memory.
template <typename... Params, typename... Args>
cudaError_t launch_k(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                     Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl_on() ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

}  // namespace minfer::cuda
