// AVX2 + FMA + F16C vec_dots of IQ4_NL, IQ4_XS and MXFP4 (code in quants_iq4_x86.h).
// Compiled with -mavx2 -mfma -mf16c; only called after run-time dispatch.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "../common/iq_grids.h"
#include "quants_internal.h"

#define MQ4_SUFFIX avx2
#define MQ4_AVX512 0

namespace minfer::cpu::q {
#include "quants_iq4_x86.h"
}  // namespace minfer::cpu::q
#endif
