// Running a tune job's steps on workers from inside kilnd: RunStep submits one step job
// (step_handler.h) to the Scheduler and waits for its result, giving up when the tune is
// stopped or when no worker that can run the step stays connected; RemoteMeasurer is the
// search's Measurer over a build step (any compile worker) and a measure step (the measure
// worker of one hardware key).
#ifndef KILN_SERVER_REMOTE_MEASURER_H_
#define KILN_SERVER_REMOTE_MEASURER_H_

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "compiler_core/tuning/search.h"
#include "kiln/v1/service.pb.h"
#include "server/scheduler.h"

namespace kiln::server {

/// How a tune job waits for its steps.
struct StepWaitOptions {
  /// Bounds each step job (Scheduler deadline).
  absl::Duration deadline = absl::Minutes(15);
  /// A step whose kind of worker is not connected for this long fails with kUnavailable.
  absl::Duration worker_grace = absl::Seconds(30);
  /// How often the stop flag and the workers are checked while waiting.
  absl::Duration poll = absl::Milliseconds(100);
};

/// What RunStep returns: the worker's result and who ran it.
struct StepOutcome {
  v1::TaskResult result;
  std::string worker;
};

/// Submits `step` (a StepJobSpec) and waits for it. `can_run` says which workers can run it
/// (checked while waiting, for worker_grace). Errors: kCancelled once `*stop` is set (the step
/// job is cancelled); kUnavailable when no fitting worker stayed connected; the step job's own
/// error otherwise (e.g. a worker's INVALID_ARGUMENT, kDeadlineExceeded).
absl::StatusOr<StepOutcome> RunStep(Scheduler& scheduler, const JobSpec& step,
                                    const std::function<bool(const v1::WorkerCapabilities&)>& can_run,
                                    const std::atomic<bool>* stop, const StepWaitOptions& wait);

/// Measures candidates of a workload through kilnd's workers: builds the batch on a compile
/// worker for `target` (checked against `target_key`) and runs it on the measure worker of
/// `hardware_key`. Step jobs are named after `job_id` and a counter, so they never join
/// another tune's.
class RemoteMeasurer final : public tuning::Measurer {
 public:
  struct Config {
    Scheduler* scheduler = nullptr;
    std::string job_id;
    std::string target;       // spec, e.g. "host"
    std::string target_key;   // its resolved key
    std::string host_cpu;     // kilnd's host CPU (compile_handler.h CompilesFor)
    std::string hardware_key;
    tuning::MeasureOptions measure;
    StepWaitOptions wait;
    const std::atomic<bool>* stop = nullptr;
  };
  explicit RemoteMeasurer(Config config) : config_(std::move(config)) {}

  /// Errors: those of RunStep, and kInternal for results of the wrong shape.
  absl::StatusOr<tuning::BatchMeasurement> Measure(
      const loop::Func& lowered, const std::vector<schedule::Schedule>& candidates) override;
  std::string hardware_key() const override { return config_.hardware_key; }
  /// The measure worker of the last batch.
  std::string worker_name() const override { return worker_; }

 private:
  Config config_;
  int steps_ = 0;
  std::string worker_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_REMOTE_MEASURER_H_
