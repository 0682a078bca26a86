// AVX512 vec_dots of IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S (code in quants_iq23_x86.h).
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mfma -mf16c; only called after run-time dispatch.
#if defined(__x86_64__) || defined(_M_X64)
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 warns falsely inside its own AVX-512 intrinsic headers (_mm512_undefined_*).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../common/iq_grids.h"
#include "quants_internal.h"

#define MQ_IQ23_SUFFIX avx512
#define MQ_IQ23_AVX512 1

namespace minfer::cpu::q {
#include "quants_iq23_x86.h"
}  // namespace minfer::cpu::q
#endif
