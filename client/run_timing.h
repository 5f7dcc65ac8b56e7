// `kiln run --repeat N --warmup W` and `--profile trace.json`: timing repeated runs of a loaded
// artifact (median and p90 latency, as trtexec and onnxruntime_perf_test report them) and
// profiling every kernel call into a Chrome trace (runtime/chrome_trace.h).
#ifndef KILN_CLIENT_RUN_TIMING_H_
#define KILN_CLIENT_RUN_TIMING_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/tensor.h"
#include "compiler_core/runtime/chrome_trace.h"
#include "compiler_core/runtime/runner.h"

namespace kiln::client {

/// Latency of timed runs, ms (wall time of ModelRunner::Run, inputs bound and outputs returned).
struct LatencyStats {
  int runs = 0;
  double min_ms = 0, median_ms = 0, p90_ms = 0, max_ms = 0, mean_ms = 0;
};

/// Statistics of `ms` (at least one value). Percentiles by the nearest-rank method: the
/// smallest value with at least p% of the values at or below it (the median of an even count
/// is the lower middle value).
LatencyStats Summarize(std::vector<double> ms);

/// "median 1.234 ms, p90 1.300 ms (min ..., max ..., mean ...; N runs after W warm-up)".
std::string FormatLatency(const LatencyStats& stats, int warmup);

/// Runs `runner` on `inputs` `warmup` times untimed, then `repeat` times timed. Errors:
/// kInvalidArgument for repeat < 1 or warmup < 0; the first run's error.
absl::StatusOr<LatencyStats> TimeRuns(runtime::ModelRunner& runner,
                                      const std::vector<const Tensor*>& inputs, int repeat,
                                      int warmup);

/// One kernel's share of profiled runs: its index, name, calls' median and total time (ms).
struct KernelProfile {
  int index = 0;
  std::string name;
  double median_ms = 0;
  double total_ms = 0;
};

/// Profiled runs of a CPU artifact: `warmup` untimed runs, then `repeat` runs recording every
/// kernel call (Executable::RunProfiled). `runs` gets the timeline (for ChromeTraceJson) and
/// the result lists each kernel's median time, slowest first. Errors: kInvalidArgument for a
/// runner that is not a CPU Executable (the CUDA runtime has no per-kernel profile), bad
/// counts; the runs' errors.
absl::StatusOr<std::vector<KernelProfile>> ProfileRuns(runtime::ModelRunner& runner,
                                                       const std::vector<const Tensor*>& inputs,
                                                       int repeat, int warmup,
                                                       std::vector<runtime::ProfiledRun>* runs);

}  // namespace kiln::client

#endif  // KILN_CLIENT_RUN_TIMING_H_
