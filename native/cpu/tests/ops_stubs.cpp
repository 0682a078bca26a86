// Test-only stand-in for the executor's report_kernel_error (kernel.h): records the reports so
// tests can assert on them.
#include <mutex>
#include <string>
#include <vector>

#include "../kernel.h"

namespace ops_test {
std::mutex g_mu;
std::vector<std::string> g_reports;
}  // namespace ops_test

namespace minfer::cpu {
void report_kernel_error(const char* message) {
  std::lock_guard<std::mutex> lock(ops_test::g_mu);
  ops_test::g_reports.push_back(message ? message : "(null)");
}
}  // namespace minfer::cpu
