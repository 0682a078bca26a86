// The 2-lane instance of the weight quantizers' candidate searches (quantize_weights_lanes.h) and
// the choice of instance: the AVX2 one (quantize_weights_lanes_avx2.cpp) where the CPU allows.
#include "quantize_weights_lanes.h"

#include <cstdlib>
#include <cstring>

#include "cpu_features.h"

namespace minfer::cpu::qw {

#if defined(__x86_64__) || defined(_M_X64)
const LaneKernels& lane_kernels_avx2();
#endif

const LaneKernels& lane_kernels() {
  static const LaneKernels base = lanes_impl::kernels<f64x2>();
#if defined(__x86_64__) || defined(_M_X64)
  // MINFER_CPU_SIMD=scalar (the backend's switch, config.ts) keeps the 2-lane instance: same
  // bytes, slower; the tests run both.
  static const LaneKernels& chosen = [&]() -> const LaneKernels& {
    const char* forced = std::getenv("MINFER_CPU_SIMD");
    if ((forced && std::strcmp(forced, "scalar") == 0) || cpu_features().detected == SimdLevel::Scalar) return base;
    return lane_kernels_avx2();  // AVX2 or AVX-512 detected
  }();
  return chosen;
#else
  return base;
#endif
}

}  // namespace minfer::cpu::qw
