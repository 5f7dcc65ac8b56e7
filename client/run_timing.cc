#include "client/run_timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compiler_core/runtime/executable.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::client {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Nearest rank: the value at 1-based rank ceil(p * n) of sorted `v`.
double Percentile(const std::vector<double>& sorted, double p) {
  const size_t n = sorted.size();
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(n)));
  rank = std::clamp<size_t>(rank, 1, n);
  return sorted[rank - 1];
}

absl::Status CheckCounts(int repeat, int warmup) {
  if (repeat < 1)
    return absl::InvalidArgumentError(absl::StrCat("--repeat ", repeat, ": want >= 1"));
  if (warmup < 0)
    return absl::InvalidArgumentError(absl::StrCat("--warmup ", warmup, ": want >= 0"));
  return absl::OkStatus();
}

}  // namespace

LatencyStats Summarize(std::vector<double> ms) {
  LatencyStats s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  s.runs = static_cast<int>(ms.size());
  s.min_ms = ms.front();
  s.max_ms = ms.back();
  s.median_ms = Percentile(ms, 0.5);
  s.p90_ms = Percentile(ms, 0.9);
  s.mean_ms = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  return s;
}

std::string FormatLatency(const LatencyStats& s, int warmup) {
  return absl::StrFormat(
      "median %.3f ms, p90 %.3f ms (min %.3f, max %.3f, mean %.3f; %d runs after %d warm-up)",
      s.median_ms, s.p90_ms, s.min_ms, s.max_ms, s.mean_ms, s.runs, warmup);
}

absl::StatusOr<LatencyStats> TimeRuns(runtime::ModelRunner& runner,
                                      const std::vector<const Tensor*>& inputs, int repeat,
                                      int warmup) {
  KILN_RETURN_IF_ERROR(CheckCounts(repeat, warmup));
  for (int i = 0; i < warmup; ++i) KILN_RETURN_IF_ERROR(runner.Run(inputs).status());
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    const Clock::time_point start = Clock::now();
    KILN_RETURN_IF_ERROR(runner.Run(inputs).status());
    ms.push_back(MsSince(start));
  }
  return Summarize(std::move(ms));
}

absl::StatusOr<std::vector<KernelProfile>> ProfileRuns(runtime::ModelRunner& runner,
                                                       const std::vector<const Tensor*>& inputs,
                                                       int repeat, int warmup,
                                                       std::vector<runtime::ProfiledRun>* runs) {
  KILN_RETURN_IF_ERROR(CheckCounts(repeat, warmup));
  auto* exe = dynamic_cast<runtime::Executable*>(&runner);
  if (exe == nullptr) {
    return absl::InvalidArgumentError(
        "--profile: per-kernel profiles are for CPU artifacts (the CUDA runtime has none yet)");
  }
  for (int i = 0; i < warmup; ++i) KILN_RETURN_IF_ERROR(exe->Run(inputs).status());
  runs->clear();
  const Clock::time_point first = Clock::now();
  for (int i = 0; i < repeat; ++i) {
    runtime::ProfiledRun run;
    const Clock::time_point start = Clock::now();
    run.start_ms = std::chrono::duration<double, std::milli>(start - first).count();
    KILN_RETURN_IF_ERROR(exe->RunProfiled(inputs, &run.kernel_ms, &run.kernel_start_ms).status());
    run.total_ms = MsSince(start);
    runs->push_back(std::move(run));
  }
  // Every run of one artifact and input shapes runs the same kernels.
  const kiln::v1::Manifest& m = exe->manifest();
  const size_t kernels = runs->front().kernel_ms.size();
  std::vector<KernelProfile> profile;
  for (size_t k = 0; k < kernels; ++k) {
    KernelProfile p;
    p.index = static_cast<int>(k);
    if (m.profiles_size() == 0 && k < static_cast<size_t>(m.kernels_size())) {
      const kiln::v1::KernelCall& call = m.kernels(static_cast<int>(k));
      p.name = call.fused_ops().empty() ? "Loop" : call.fused_ops();
    } else {
      p.name = absl::StrCat("kernel ", k);
    }
    std::vector<double> ms;
    for (const runtime::ProfiledRun& run : *runs) {
      if (k < run.kernel_ms.size()) ms.push_back(run.kernel_ms[k]);
    }
    p.median_ms = Summarize(ms).median_ms;
    p.total_ms = std::accumulate(ms.begin(), ms.end(), 0.0);
    profile.push_back(std::move(p));
  }
  std::stable_sort(
      profile.begin(), profile.end(),
      [](const KernelProfile& a, const KernelProfile& b) { return a.median_ms > b.median_ms; });
  return profile;
}

}  // namespace kiln::client
