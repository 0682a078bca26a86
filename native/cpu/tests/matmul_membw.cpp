// STREAM-like memory bandwidth of this machine: read (sum), copy and write over arrays far larger
// than the caches, with 1 and 2 threads. Built with -mavx2 (measurement only; no -march=native).
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main() {
  const size_t bytes = size_t(512) << 20;  // 512 MiB per array
  const size_t n = bytes / sizeof(float);
  float* a = static_cast<float*>(std::aligned_alloc(64, bytes));
  float* b = static_cast<float*>(std::aligned_alloc(64, bytes));
  for (size_t i = 0; i < n; i++) a[i] = 1.0f, b[i] = 2.0f;
  volatile float sink = 0;
  for (int nth : {1, 2}) {
    auto par = [&](auto fn) {
      double best = 1e9;
      for (int rep = 0; rep < 5; rep++) {
        const double t0 = now();
        std::vector<std::thread> th;
        for (int t = 0; t < nth; t++) th.emplace_back([&, t] { fn(n * t / nth, n * (t + 1) / nth); });
        for (auto& x : th) x.join();
        best = std::min(best, now() - t0);
      }
      return best;
    };
    const double tr = par([&](size_t s, size_t e) {
      __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
      for (size_t i = s; i < e; i += 16) {
        acc0 = _mm256_add_ps(acc0, _mm256_load_ps(a + i));
        acc1 = _mm256_add_ps(acc1, _mm256_load_ps(a + i + 8));
      }
      float o[8];
      _mm256_storeu_ps(o, _mm256_add_ps(acc0, acc1));
      sink = sink + o[0];
    });
    const double tc = par([&](size_t s, size_t e) { std::memcpy(b + s, a + s, (e - s) * 4); });
    const double tw = par([&](size_t s, size_t e) {
      const __m256 v = _mm256_set1_ps(3.0f);
      for (size_t i = s; i < e; i += 8) _mm256_stream_ps(b + i, v);
    });
    std::printf("threads %d: read %.1f GB/s   copy %.1f GB/s (read+write)   write(nt) %.1f GB/s\n", nth,
                bytes / tr / 1e9, 2.0 * bytes / tc / 1e9, bytes / tw / 1e9);
  }
  std::free(a);
  std::free(b);
  return 0;
}
