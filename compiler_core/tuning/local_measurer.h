// Measuring on this machine: batches built here (build.h) and run in child processes of this
// process (measure.h). For `kiln tune --local` and tests; kilnd measures through its workers.
#ifndef KILN_COMPILER_CORE_TUNING_LOCAL_MEASURER_H_
#define KILN_COMPILER_CORE_TUNING_LOCAL_MEASURER_H_

#include <string>
#include <vector>

#include "compiler_core/tuning/search.h"

namespace kiln::tuning {

/// Builds and runs batches in child processes of this process (measure.h), for `target`.
class LocalMeasurer final : public Measurer {
 public:
  LocalMeasurer(Target target, std::string hardware_key, MeasureOptions options)
      : target_(std::move(target)), hardware_key_(std::move(hardware_key)),
        options_(options) {}
  absl::StatusOr<BatchMeasurement> Measure(
      const loop::Func& lowered, const std::vector<schedule::Schedule>& candidates) override;
  std::string hardware_key() const override { return hardware_key_; }
  std::string worker_name() const override { return "local"; }

 private:
  Target target_;
  std::string hardware_key_;
  MeasureOptions options_;
};

}  // namespace kiln::tuning

#endif  // KILN_COMPILER_CORE_TUNING_LOCAL_MEASURER_H_
