// Checks the NEON dot products against their scalar twins (AArch64 only). Cross-built and run
// under qemu by check-arm64.sh on x86 machines:  bash native/cpu/tests/check-arm64.sh
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "../../common/fp16.h"
#include "../quants_internal.h"

namespace q = minfer::cpu::q;
namespace minfer::cpu::q {
void vec_dot_f32_neon(int64_t, const void*, const void*, size_t, int, float*);
void vec_dot_f16_neon(int64_t, const void*, const void*, size_t, int, float*);
void vec_dot_q4_0_neon(int64_t, const void*, const void*, size_t, int, float*);
void vec_dot_q8_0_neon(int64_t, const void*, const void*, size_t, int, float*);
void quantize_q8a_neon(const float*, void*, int64_t);
}  // namespace minfer::cpu::q

static int failures = 0;
#define CHECK(c, ...)                 \
  do {                                \
    if (!(c)) {                       \
      failures++;                     \
      std::printf("FAIL: " __VA_ARGS__); \
      std::printf("\n");              \
    }                                 \
  } while (0)

int main() {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t n : {32, 64, 256, 4096}) {
    std::vector<float> x(n), a(3 * n);
    for (auto& v : x) v = nd(rng);
    for (auto& v : a) v = nd(rng);
    // Activation quantizer: identical bytes.
    std::vector<uint8_t> qa(3 * q::act_row_bytes(q::ActFormat::Q8A, n)), qb(qa.size());
    const size_t arow = q::act_row_bytes(q::ActFormat::Q8A, n);
    for (int c = 0; c < 3; c++) {
      q::quantize_q8a_scalar(a.data() + c * n, qa.data() + c * arow, n);
      q::quantize_q8a_neon(a.data() + c * n, qb.data() + c * arow, n);
    }
    CHECK(std::memcmp(qa.data(), qb.data(), qa.size()) == 0, "q8a n=%lld differs", (long long)n);
    // Weights in each format (Q4_0 / Q8_0 blocks built directly).
    std::vector<uint8_t> w16(2 * n), w40(n / 32 * 18), w80(n / 32 * 34);
    for (int64_t i = 0; i < n; i++) {
      const uint16_t h = minfer::f32_to_fp16(x[i]);
      std::memcpy(&w16[2 * i], &h, 2);
    }
    for (int64_t b = 0; b < n / 32; b++) {
      const uint16_t d = minfer::f32_to_fp16(0.05f + 0.01f * static_cast<float>(b % 7));
      std::memcpy(&w40[b * 18], &d, 2);
      std::memcpy(&w80[b * 34], &d, 2);
      for (int j = 0; j < 16; j++) w40[b * 18 + 2 + j] = static_cast<uint8_t>(rng());
      for (int j = 0; j < 32; j++) w80[b * 34 + 2 + j] = static_cast<uint8_t>(rng());
    }
    struct Case {
      const char* name;
      q::VecDotFn scalar, neon;
      const void* w;
      const void* act;
      size_t stride;
    } cases[] = {
        {"f32", q::vec_dot_f32_scalar, q::vec_dot_f32_neon, x.data(), a.data(), static_cast<size_t>(4 * n)},
        {"f16", q::vec_dot_f16_scalar, q::vec_dot_f16_neon, w16.data(), a.data(), static_cast<size_t>(4 * n)},
        {"q4_0", q::vec_dot_q4_0_scalar, q::vec_dot_q4_0_neon, w40.data(), qa.data(), arow},
        {"q8_0", q::vec_dot_q8_0_scalar, q::vec_dot_q8_0_neon, w80.data(), qa.data(), arow},
    };
    for (const Case& c : cases) {
      float want[3], got[3];
      c.scalar(n, c.w, c.act, c.stride, 3, want);
      c.neon(n, c.w, c.act, c.stride, 3, got);
      for (int k = 0; k < 3; k++) {
        const float tol = 1e-4f * (1.0f + std::fabs(want[k])) * std::sqrt(static_cast<float>(n));
        CHECK(std::fabs(want[k] - got[k]) <= tol, "%s n=%lld col %d: neon %.7g vs scalar %.7g", c.name, (long long)n, k,
              got[k], want[k]);
      }
    }
  }
  std::printf("neon_test: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
