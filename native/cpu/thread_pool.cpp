#include "thread_pool.h"

#include <chrono>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace minfer::cpu {
namespace {

// How long a thread spins before it sleeps, measured in time rather than iterations (the cost of
// `pause` differs tenfold between CPUs: a count tuned on one machine slept on every barrier on
// another, costing ~12 µs per node). Between nodes the other threads are microseconds away;
// between executes (a decode step's JavaScript work) they linger a little longer.
constexpr auto kBarrierSpin = std::chrono::microseconds(200);
constexpr auto kIdleSpin = std::chrono::microseconds(300);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

}  // namespace

void ThreadPool::wait_past(Event& e, uint32_t seen, std::chrono::microseconds spin) {
  const auto until = std::chrono::steady_clock::now() + spin;
  for (int i = 1;; i++) {
    if (e.gen.load(std::memory_order_acquire) != seen) return;
    cpu_relax();
    if ((i & 255) == 0 && std::chrono::steady_clock::now() >= until) break;
  }
  e.sleepers.fetch_add(1, std::memory_order_seq_cst);
#if defined(__linux__)
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "futex word");
  while (e.gen.load(std::memory_order_seq_cst) == seen) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&e.gen), FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
  }
#else
  {
    std::unique_lock<std::mutex> lock(e.mu);
    e.cv.wait(lock, [&] { return e.gen.load(std::memory_order_seq_cst) != seen; });
  }
#endif
  e.sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

void ThreadPool::advance(Event& e) {
#if defined(__linux__)
  e.gen.fetch_add(1, std::memory_order_seq_cst);
  if (e.sleepers.load(std::memory_order_seq_cst) > 0) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&e.gen), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
  }
#else
  {
    std::lock_guard<std::mutex> lock(e.mu);
    e.gen.fetch_add(1, std::memory_order_seq_cst);
  }
  e.cv.notify_all();
#endif
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; i++) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  advance(work_);
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker(int ith) {
  uint32_t seen = 0;
  for (;;) {
    wait_past(work_, seen, kIdleSpin);
    seen = work_.gen.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    task_(ctx_, ith, n_threads_);
    barrier();  // the closing barrier: run() returns once every worker is past its task
  }
}

void ThreadPool::run(Task task, void* ctx) {
  task_ = task;
  ctx_ = ctx;
  if (n_threads_ > 1) advance(work_);  // publishes task_/ctx_ (seq_cst increment)
  task(ctx, 0, n_threads_);
  barrier();
}

void ThreadPool::barrier() {
  if (n_threads_ == 1) return;
  const uint32_t gen = barrier_.gen.load(std::memory_order_acquire);
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) == n_threads_ - 1) {
    arrived_.store(0, std::memory_order_relaxed);
    advance(barrier_);
    return;
  }
  wait_past(barrier_, gen, kBarrierSpin);
}

}  // namespace minfer::cpu
