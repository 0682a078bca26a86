#include "cpu_features.h"

#include <fstream>
#include <set>
#include <thread>

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#define MINFER_X86 1
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace minfer::cpu {
namespace {

#ifdef MINFER_X86
struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(unsigned leaf, unsigned sub) {
  Regs r;
  __cpuid_count(leaf, sub, r.a, r.b, r.c, r.d);
  return r;
}

// XCR0: which register states the OS saves on a context switch. Only valid when OSXSAVE is set.
unsigned long long xgetbv0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

bool bit(unsigned v, int i) { return (v >> i) & 1u; }

void detect_x86(CpuFeatures& f) {
  const unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf < 1) return;
  const Regs l1 = cpuid(1, 0);
  const Regs l7 = max_leaf >= 7 ? cpuid(7, 0) : Regs{};
  auto add = [&](bool present, const char* name) {
    if (present) f.features.emplace_back(name);
  };
  add(bit(l1.d, 26), "sse2");
  add(bit(l1.c, 19), "sse4.1");
  add(bit(l1.c, 20), "sse4.2");

  const bool osxsave = bit(l1.c, 27);
  const unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
  const bool os_avx = osxsave && (xcr0 & 0x6) == 0x6;              // XMM | YMM
  const bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;          // opmask | ZMM_Hi256 | Hi16_ZMM
  const bool os_amx = osxsave && ((xcr0 >> 17) & 3) == 3;          // XTILECFG | XTILEDATA
  add(osxsave, "osxsave");
  add(os_avx, "os-avx");
  add(os_avx512, "os-avx512");

  const bool avx = os_avx && bit(l1.c, 28);
  const bool fma = avx && bit(l1.c, 12);
  const bool f16c = avx && bit(l1.c, 29);
  const bool avx2 = avx && bit(l7.b, 5);
  add(avx, "avx");
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");

  const bool a512f = os_avx512 && bit(l7.b, 16);
  const bool a512dq = a512f && bit(l7.b, 17);
  const bool a512bw = a512f && bit(l7.b, 30);
  const bool a512vl = a512f && bit(l7.b, 31);
  const bool a512vnni = a512f && bit(l7.c, 11);
  add(a512f, "avx512f");
  add(a512dq, "avx512dq");
  add(a512bw, "avx512bw");
  add(a512vl, "avx512vl");
  add(a512vnni, "avx512vnni");
  add(a512f && bit(l7.c, 1), "avx512vbmi");
  if (max_leaf >= 7 && l7.a >= 1) {
    const Regs l71 = cpuid(7, 1);
    add(a512f && bit(l71.a, 5), "avx512bf16");
    add(avx && bit(l71.a, 4), "avxvnni");
  }

  if (avx2 && fma && f16c) f.detected = SimdLevel::AVX2;
  if (f.detected == SimdLevel::AVX2 && a512f && a512bw && a512vl && a512dq && a512vnni)
    f.detected = SimdLevel::AVX512;

  f.amx_in_cpuid = bit(l7.d, 24);
  if (!f.amx_in_cpuid) return;
  if (!os_amx) {
    f.amx_note = "AMX present in CPUID but unusable: the OS does not enable tile state (XCR0 bits 17/18)";
    return;
  }
#if defined(__linux__)
  constexpr int kArchReqXcompPerm = 0x1023;
  constexpr int kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0) {
    f.amx_usable = true;
    f.amx_note = "AMX usable (tile state granted); kernels do not use it";
  } else {
    f.amx_note = "AMX present in CPUID but unusable: arch_prctl(ARCH_REQ_XCOMP_PERM) refused tile data";
  }
#else
  f.amx_note = "AMX present in CPUID but unusable: no way to request tile state on this OS";
#endif
}
#endif

void count_cpus(CpuFeatures& f) {
  const unsigned hc = std::thread::hardware_concurrency();
  f.logical_cpus = hc > 0 ? static_cast<int>(hc) : 1;
  f.physical_cores = f.logical_cpus;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return;
  std::set<std::string> cores;
  int logical = 0;
  bool topology = true;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
    if (!CPU_ISSET(cpu, &set)) continue;
    logical++;
    const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::string siblings;
    std::ifstream in(base + "core_cpus_list");
    if (!(in && std::getline(in, siblings))) {
      std::ifstream old(base + "thread_siblings_list");
      if (!(old && std::getline(old, siblings))) topology = false;
    }
    cores.insert(siblings);
  }
  if (logical > 0) f.logical_cpus = logical;
  f.physical_cores = topology && !cores.empty() ? static_cast<int>(cores.size()) : f.logical_cpus;
#endif
}

CpuFeatures detect() {
  CpuFeatures f;
#ifdef MINFER_X86
  detect_x86(f);
#elif defined(__aarch64__)
  f.detected = SimdLevel::NEON;  // Advanced SIMD is mandatory on AArch64.
  f.features.emplace_back("neon");
#endif
  count_cpus(f);
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::Scalar: return "scalar";
    case SimdLevel::AVX2: return "avx2";
    case SimdLevel::AVX512: return "avx512";
    case SimdLevel::NEON: return "neon";
  }
  return "scalar";
}

bool simd_level_usable(SimdLevel level) {
  const SimdLevel best = cpu_features().detected;
  switch (level) {
    case SimdLevel::Scalar: return true;
    case SimdLevel::AVX2: return best == SimdLevel::AVX2 || best == SimdLevel::AVX512;
    case SimdLevel::AVX512: return best == SimdLevel::AVX512;
    case SimdLevel::NEON: return best == SimdLevel::NEON;
  }
  return false;
}

Status choose_simd_level(const std::string& forced, SimdLevel* out) {
  const SimdLevel best = cpu_features().detected;
  if (forced.empty()) {
    *out = best;
    return Status::Ok();
  }
  for (SimdLevel l : {SimdLevel::Scalar, SimdLevel::AVX2, SimdLevel::AVX512, SimdLevel::NEON}) {
    if (forced != simd_level_name(l)) continue;
    if (!simd_level_usable(l)) {
      return Status::Error(Code::SimdUnavailable, std::string("SIMD level \"") + forced +
                                                      "\" is above what this machine allows (detected \"" +
                                                      simd_level_name(best) + "\")");
    }
    *out = l;
    return Status::Ok();
  }
  return Status::Error(Code::BadArgument, "unknown SIMD level \"" + forced +
                                              "\"; expected one of: scalar, avx2, avx512, neon");
}

}  // namespace minfer::cpu
