// AVX2 vec_dots of IQ1_S, IQ1_M, TQ1_0 and TQ2_0 (code in quants_iq1t_x86.h).
// Compiled with -mavx2 -mfma -mf16c; only called after run-time dispatch.
#if defined(__x86_64__) || defined(_M_X64)

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../common/iq_grids.h"
#include "quants_internal.h"

#define MQ_IQ1T_SUFFIX avx2
#define MQ_IQ1T_AVX512 0

namespace minfer::cpu::q {
#include "quants_iq1t_x86.h"
}  // namespace minfer::cpu::q
#endif
