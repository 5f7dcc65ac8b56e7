// LocalMeasurer.
#include "compiler_core/tuning/local_measurer.h"

#include "compiler_core/tuning/build.h"

namespace kiln::tuning {

absl::StatusOr<BatchMeasurement> LocalMeasurer::Measure(
    const loop::Func& lowered, const std::vector<schedule::Schedule>& candidates) {
  absl::StatusOr<CandidateBatch> batch = BuildCandidates(lowered, candidates, target_);
  if (!batch.ok()) return batch.status();
  return RunCandidates(lowered, *batch, options_);
}

}  // namespace kiln::tuning
