// A Chrome trace (the Trace Event Format's JSON object form, which chrome://tracing and
// Perfetto's UI open) of profiled runs of an artifact: one complete ("X") event per kernel call,
// nested in one event per run, with the kernel's fused ops, schedule and tuning in its args.
#ifndef KILN_COMPILER_CORE_RUNTIME_CHROME_TRACE_H_
#define KILN_COMPILER_CORE_RUNTIME_CHROME_TRACE_H_

#include <string>
#include <vector>

#include "kiln/v1/artifact.pb.h"

namespace kiln::runtime {

/// One profiled run: when it began (ms from the first run's start), how long it took (ms), and
/// each kernel call's start (ms after the run began) and duration (ms), in the order of the
/// manifest's kernels (Executable::RunProfiled).
struct ProfiledRun {
  double start_ms = 0;
  double total_ms = 0;
  std::vector<double> kernel_start_ms;
  std::vector<double> kernel_ms;
};

/// The trace of `runs` of the artifact whose (profile's) manifest is `manifest`, as JSON:
/// {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {model, target, ...}}.
/// Times are in µs as the format requires (Trace Event Format, "Duration Events" and
/// "Complete Events"); events are named "<fused ops> (<symbol>)". Kernels past the manifest's
/// count are named by index.
std::string ChromeTraceJson(const kiln::v1::Manifest& manifest,
                            const std::vector<ProfiledRun>& runs);

}  // namespace kiln::runtime

#endif  // KILN_COMPILER_CORE_RUNTIME_CHROME_TRACE_H_
