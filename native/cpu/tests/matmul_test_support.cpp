// Test stand-ins for what the executor provides at run time (registry.cpp, report_kernel_error),
// so the kernel files link into standalone tests.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "../kernel.h"

namespace minfer::cpu {

static std::map<int, KernelDef>& table() {
  static std::map<int, KernelDef> t;
  return t;
}

Registrar::Registrar(program::Op op, const KernelDef& def) {
  if (!table().emplace(static_cast<int>(op), def).second) {
    std::fprintf(stderr, "op %d registered twice\n", static_cast<int>(op));
    std::abort();
  }
}

const KernelDef* find_kernel(program::Op op) {
  auto it = table().find(static_cast<int>(op));
  return it == table().end() ? nullptr : &it->second;
}

static std::mutex g_err_mu;
static std::string g_first_error;
static std::atomic<int> g_errors{0};

void report_kernel_error(const char* message) {
  std::lock_guard<std::mutex> lock(g_err_mu);
  if (g_errors++ == 0) g_first_error = message;
}

// Test helpers (declared in the tests): errors reported since the last reset.
int test_kernel_errors() { return g_errors.load(); }
std::string test_first_error() {
  std::lock_guard<std::mutex> lock(g_err_mu);
  return g_first_error;
}
void test_reset_errors() {
  std::lock_guard<std::mutex> lock(g_err_mu);
  g_errors = 0;
  g_first_error.clear();
}

}  // namespace minfer::cpu
