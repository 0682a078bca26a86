// A persistent pool of worker threads. `run(task)` runs task(ith, nth) on every thread, the
// calling thread taking ith = 0, and returns when all are done; inside a task, `barrier()` waits
// until every thread of the pool has reached it. Barriers and idle waits spin briefly, then
// sleep (futex on Linux, a condition variable elsewhere), so idle workers cost nothing.
// One `run` at a time per pool: callers serialise (the runtime holds a mutex around execute).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace minfer::cpu {

class ThreadPool {
 public:
  using Task = void (*)(void* ctx, int ith, int nth);

  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  void run(Task task, void* ctx);
  void barrier();

 private:
  // A 32-bit generation counter threads wait on until it moves past a value they saw.
  struct Event {
    alignas(64) std::atomic<uint32_t> gen{0};
    std::atomic<int> sleepers{0};
    std::mutex mu;  // used where there is no futex
    std::condition_variable cv;
  };
  static void wait_past(Event& e, uint32_t seen, std::chrono::microseconds spin);
  static void advance(Event& e);

  void worker(int ith);

  const int n_threads_;
  std::vector<std::thread> workers_;
  Event work_;     // a new task (or stop) was published
  Event barrier_;  // the barrier opened
  alignas(64) std::atomic<int> arrived_{0};
  Task task_ = nullptr;
  void* ctx_ = nullptr;
  std::atomic<bool> stop_{false};
};

}  // namespace minfer::cpu
