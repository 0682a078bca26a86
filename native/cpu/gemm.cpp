// Dispatch of the panel GEMM kernels (gemm.h); baseline file.
#include "gemm.h"

#include "kernel.h"

namespace minfer::cpu::q {

using program::DType;

GemmFn gemm_for(DType t, SimdLevel level) {
#if defined(__x86_64__) || defined(_M_X64)
  if (level == SimdLevel::AVX512) {
    switch (t) {
      case DType::Q4_0: return gemm_q4_0_avx512;
      case DType::Q5_0: return gemm_q5_0_avx512;
      case DType::Q8_0: return gemm_q8_0_avx512;
      case DType::IQ4_NL: return gemm_iq4_nl_avx512;
      case DType::MXFP4: return gemm_mxfp4_avx512;
      case DType::Q4_K: return gemm_q4_k_avx512;
      case DType::F32: return gemm_f32_avx512;
      case DType::F16: return gemm_f16_avx512;
      case DType::BF16: return gemm_bf16_avx512;
      default: break;
    }
  }
#else
  (void)t;
  (void)level;
#endif
  return nullptr;
}

}  // namespace minfer::cpu::q
