// What the CPU and the operating system allow: CPUID bits confirmed by XGETBV (the OS saves the
// register state), reduced to the best SimdLevel kernels may use. AMX is reported, never used.
#pragma once
#include <string>
#include <vector>

#include "kernel.h"
#include "status.h"

namespace minfer::cpu {

struct CpuFeatures {
  // The best level both the CPU and the OS support (AVX2 = AVX2+FMA+F16C with YMM state saved;
  // AVX512 = F+BW+VL+DQ+VNNI with opmask/ZMM state saved; NEON on arm64).
  SimdLevel detected = SimdLevel::Scalar;
  // Lower-case feature names found usable ("avx2", "fma", "avx512f", "os-avx", …).
  std::vector<std::string> features;
  bool amx_in_cpuid = false;  // AMX-TILE reported by CPUID
  bool amx_usable = false;    // and the OS grants tile state (XCR0 17/18 + ARCH_REQ_XCOMP_PERM)
  std::string amx_note;       // why AMX is or is not usable ("" when absent)
  int logical_cpus = 1;       // CPUs this process may run on
  int physical_cores = 1;     // distinct cores among them (topology), the default thread count
};

// Detected once, on first use; thread-safe.
const CpuFeatures& cpu_features();

// "scalar", "avx2", "avx512", "neon".
const char* simd_level_name(SimdLevel level);

// Whether kernels may run at `level` on this machine (scalar always; x86 levels up to detected).
bool simd_level_usable(SimdLevel level);

// The level to run at: `forced` ("" = the detected one) or an error (INVALID_ARGUMENT for an unknown
// name, SIMD_UNAVAILABLE naming both levels for one this machine lacks).
Status choose_simd_level(const std::string& forced, SimdLevel* out);

}  // namespace minfer::cpu
