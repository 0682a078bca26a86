// AVX2 vec_dots of IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S (code in quants_iq23_x86.h).
// Compiled with -mavx2 -mfma -mf16c; only called after run-time dispatch.
#if defined(__x86_64__) || defined(_M_X64)

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../common/iq_grids.h"
#include "quants_internal.h"

#define MQ_IQ23_SUFFIX avx2
#define MQ_IQ23_AVX512 0

namespace minfer::cpu::q {
#include "quants_iq23_x86.h"
}  // namespace minfer::cpu::q
#endif
