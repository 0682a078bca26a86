// The native weight quantizers (native/cpu/quantize_weights*.cpp) against vectors written by
// @minfer/gguf's TypeScript ones (quantize_weights_vectors.mjs): the same bytes for every type,
// with and without an importance. Run on x86-64 and, cross-compiled, on AArch64 (where g++ would
// fuse multiply-adds unless told not to).
#include <cstdio>
#include <cstring>
#include <vector>

#include "../quantize_weights.h"

using namespace minfer;

namespace {

template <class T>
bool read(FILE* f, T* out, size_t n = 1) {
  return std::fread(out, sizeof(T), n, f) == n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: quantize_weights_test VECTORS\n");
    return 2;
  }
  FILE* f = std::fopen(argv[1], "rb");
  if (!f) {
    std::perror(argv[1]);
    return 2;
  }
  int cases = 0, failures = 0;
  int32_t h[5];
  while (read(f, h, 5)) {
    const auto type = static_cast<program::DType>(h[0]);
    const int32_t row = h[1], n = h[2], has_imp = h[3], nbytes = h[4];
    std::vector<float> x(n), imp(has_imp ? row : 0);
    std::vector<uint8_t> want(nbytes), got(nbytes, 0xee);
    if (!read(f, x.data(), n) || (has_imp && !read(f, imp.data(), row)) || !read(f, want.data(), nbytes)) {
      std::fprintf(stderr, "truncated vectors\n");
      return 2;
    }
    cpu::qw::quantize_rows(type, program::DType::F32, x.data(), n, row, has_imp ? imp.data() : nullptr,
                           got.data());
    cases++;
    for (int32_t i = 0; i < nbytes; i++) {
      if (got[i] != want[i]) {
        std::printf("FAIL %s%s: byte %d is %02x, the TypeScript wrote %02x\n", program::dtype_name(type),
                    has_imp ? " with importance" : "", i, got[i], want[i]);
        failures++;
        break;
      }
    }
  }
  std::printf("quantize_weights_test: %d cases, %d failures\n", cases, failures);
  return failures == 0 && cases > 0 ? 0 : 1;
}
