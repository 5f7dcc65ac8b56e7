// The worker steps of a tune job as job kinds of their own: list a model's workloads and build a
// batch of candidates (on compile workers), measure a built batch (on the measure worker of one
// hardware key). A tune job submits them through the Scheduler like any client and waits for
// their results, so queue order (INTERACTIVE compiles first), slots, deadlines, retry-once on a
// lost worker and cancellation are the Scheduler's as for compiles.
#ifndef KILN_SERVER_STEP_HANDLER_H_
#define KILN_SERVER_STEP_HANDLER_H_

#include <string>

#include "absl/status/statusor.h"
#include "kiln/v1/service.pb.h"
#include "server/cache/storage.h"
#include "server/job.h"
#include "server/job_handler.h"

namespace kiln::server {

/// A job of kind kWorkloads, kBuild or kMeasure whose task is `task` (its kind member set; ids
/// and deadline are the Scheduler's), deduplicated on `dedup_key`, at BATCH priority.
/// `model_digest` (may be empty) is pinned while the job is live; `log_summary` is also what
/// the job record persists as its request.
JobSpec StepJobSpec(cache::JobKind kind, const v1::WorkerTask& task, std::string dedup_key,
                    std::string model_digest, std::string log_summary);

/// Whether a worker with `capabilities` measures on the hardware `hardware_key`.
bool MeasuresOn(const v1::WorkerCapabilities& capabilities, const std::string& hardware_key);

/// Runs one kind of step job: sends the job's task as built and hands the worker's result to
/// the job's waiter (JobResult::task_result). Neither the task (built code) nor the result is persisted, only a line
/// saying what ran: a step is worth nothing without the tune job that waits for it, which
/// starts afresh after a restart.
class StepHandler final : public JobHandler {
 public:
  /// `kind` is kWorkloads, kBuild or kMeasure; `host_cpu` as for CompilesFor.
  StepHandler(cache::JobKind kind, std::string host_cpu)
      : kind_(kind), host_cpu_(std::move(host_cpu)) {}

  cache::JobKind kind() const override { return kind_; }
  /// Workloads and build steps: CompilesFor the task's target; measure: MeasuresOn its
  /// hardware key.
  bool CanRun(const JobSpec& job, const v1::WorkerCapabilities& capabilities) const override;
  void BuildTask(const JobSpec& job, v1::WorkerTask& task) const override;
  /// Errors: kInternal when the result is not of the task's kind.
  absl::StatusOr<JobResult> TaskSucceeded(const JobSpec& job, const std::string& job_id,
                                          const std::string& worker_id,
                                          const v1::TaskResult& result) override;
  void DescribeResult(const std::string& persisted, v1::JobEvent& event) const override {
    (void)persisted, (void)event;  // a step's result is for its tune job only
  }

 private:
  const cache::JobKind kind_;
  const std::string host_cpu_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_STEP_HANDLER_H_
