// The 4-lane (AVX2) instance of the weight quantizers' candidate searches
// (quantize_weights_lanes.h); the same bits as the 2-lane one.
#include "quantize_weights_lanes.h"

namespace minfer::cpu::qw {

const LaneKernels& lane_kernels_avx2() {
  static const LaneKernels k = lanes_impl::kernels<f64x4>();
  return k;
}

}  // namespace minfer::cpu::qw
