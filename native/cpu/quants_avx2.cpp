// AVX2 + FMA + F16C vec_dots and activation quantizers (code in quants_x86_impl.h).
// Compiled with -mavx2 -mfma -mf16c; only called after run-time dispatch.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "quants_internal.h"

#define MQ_SUFFIX avx2
#define MQ_AVX512 0

namespace minfer::cpu::q {
#include "quants_x86_impl.h"
}  // namespace minfer::cpu::q
#endif
