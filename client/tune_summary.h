// The per-workload summary table `kiln tune` prints at the end, locally or through kilnd.
#ifndef KILN_CLIENT_TUNE_SUMMARY_H_
#define KILN_CLIENT_TUNE_SUMMARY_H_

#include <string>
#include <vector>

namespace kiln::client {

/// One workload of a finished tune; default_ms <= 0 means it was never measured.
struct WorkloadSummary {
  std::string workload_key;
  std::string fused_ops;
  int weight = 1;         // kernels of the model with this workload
  double default_ms = 0;  // the default schedule's median
  double best_ms = 0;     // the best median found
  int trials = 0;
};

/// Prints the table (per workload: key, ops, kernels, default ms, tuned ms, speedup, trials)
/// and then "estimated latency of the M measured workloads (of N): D ms default, T ms tuned
/// (Sx)" followed by `tail` and a newline. Returns M.
int PrintWorkloadSummary(const std::vector<WorkloadSummary>& workloads,
                         double default_estimated_ms, double estimated_ms,
                         const std::string& tail = "");

}  // namespace kiln::client

#endif  // KILN_CLIENT_TUNE_SUMMARY_H_
