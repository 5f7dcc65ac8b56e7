// The one seam where a compile gets each kernel's schedule: the default schedule, or one a
// tuning record supplies (tuning/record_schedule_source.h). The pipeline asks once per kernel.
#ifndef KILN_COMPILER_CORE_SCHEDULE_SCHEDULE_SOURCE_H_
#define KILN_COMPILER_CORE_SCHEDULE_SCHEDULE_SOURCE_H_

#include <string>

#include "compiler_core/ir/loop/loop_ir.h"
#include "compiler_core/schedule/schedule.h"
#include "compiler_core/support/target.h"

namespace kiln::schedule {

/// The schedule chosen for one kernel and where it came from.
struct ScheduleChoice {
  Schedule schedule;
  bool tuned = false;           // a tuning record's schedule other than the default
  double tuned_median_ms = 0;   // the record's measured median, ms (with a record)
  /// Identifies the record the choice follows; also set, with tuned false, when the record is
  /// the default schedule's own (the default measured fastest). Empty: no record.
  std::string record_digest;
};

/// Chooses kernel schedules. Implementations must be deterministic: the same inputs give the
/// same choice, since the artifact cache key covers the applied records, not the source.
class ScheduleSource {
 public:
  virtual ~ScheduleSource() = default;
  /// The schedule of `lowered` (a kernel as the lowering produced it, unscheduled; its workload
  /// key is `workload_key`) on `target`. A tuned choice that fails to apply to `lowered` is
  /// replaced by the default schedule by the caller.
  virtual ScheduleChoice Choose(const loop::Func& lowered, const std::string& workload_key,
                                const Target& target) const = 0;
};

/// Always the default schedule (DefaultSchedule).
class DefaultScheduleSource final : public ScheduleSource {
 public:
  ScheduleChoice Choose(const loop::Func& lowered, const std::string& workload_key,
                        const Target& target) const override {
    return ScheduleChoice{DefaultSchedule(lowered, target), false, 0, ""};
  }
};

}  // namespace kiln::schedule

#endif  // KILN_COMPILER_CORE_SCHEDULE_SCHEDULE_SOURCE_H_
