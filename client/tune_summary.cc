// The tune summary table.
#include "client/tune_summary.h"

#include <iostream>

#include "absl/strings/str_format.h"

namespace kiln::client {

int PrintWorkloadSummary(const std::vector<WorkloadSummary>& workloads,
                         double default_estimated_ms, double estimated_ms,
                         const std::string& tail) {
  std::cout << absl::StrFormat("%-3s %-12s %-28s %4s %11s %11s %8s %6s\n", "#", "workload",
                               "ops", "x", "default ms", "tuned ms", "speedup", "trials");
  int measured = 0;
  for (size_t i = 0; i < workloads.size(); ++i) {
    const WorkloadSummary& w = workloads[i];
    const std::string head =
        absl::StrFormat("%-3d %-12s %-28s %4d ", i + 1, w.workload_key.substr(0, 12),
                        w.fused_ops.substr(0, 28), w.weight);
    if (w.default_ms <= 0) {
      std::cout << head << absl::StrFormat("%11s %11s %8s %6d\n", "-", "-", "-", w.trials);
      continue;
    }
    ++measured;
    std::cout << head
              << absl::StrFormat("%11.4f %11.4f %7.2fx %6d\n", w.default_ms, w.best_ms,
                                 w.best_ms > 0 ? w.default_ms / w.best_ms : 0, w.trials);
  }
  std::cout << absl::StrFormat(
                   "estimated latency of the %d measured workloads (of %d): %.4f ms default, "
                   "%.4f ms tuned (%.2fx)",
                   measured, workloads.size(), default_estimated_ms, estimated_ms,
                   estimated_ms > 0 ? default_estimated_ms / estimated_ms : 0)
            << tail << "\n";
  return measured;
}

}  // namespace kiln::client
