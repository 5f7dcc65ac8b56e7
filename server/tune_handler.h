// Tune jobs: SubmitJob's TuneRequest validated into a TuneSpec, and the handler that runs each
// tune inside kilnd (JobHandler::RunsInProcess): it lists the model's workloads on a compile
// worker, picks the measure worker's hardware key, starts the search (tuning/search.h) warm from
// the stored cost model of that key and seeded with records of similar hardware, measures
// through step jobs (remote_measurer.h), files every round's records at once and streams
// TuneProgress to watchers. A stopped (cancelled) or failed tune keeps every record filed.
#ifndef KILN_SERVER_TUNE_HANDLER_H_
#define KILN_SERVER_TUNE_HANDLER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/tuning/measure.h"
#include "kiln/v1/service.pb.h"
#include "server/cache/storage.h"
#include "server/compile_handler.h"
#include "server/compile_prep.h"
#include "server/job.h"
#include "server/job_handler.h"
#include "server/model_index.h"
#include "server/remote_measurer.h"

namespace kiln::server {

class Scheduler;

/// A validated tune request.
struct TuneSpec {
  /// The model, target and options as a compile of them (options untuned: tuning starts from
  /// the default schedules); its key names the model's graph and the resolved target.
  CompileSpec compile;
  int64_t trials = 64;
  double time_budget_s = 0;
  uint64_t seed = 1;
  std::string hardware_key;  // empty: any measure worker of the target
  bool random = false;
};

/// Validates `request` (as CompilePreparer::Prepare does its model and target) and applies the
/// defaults. Errors: Prepare's; kInvalidArgument for a negative trial or time budget, more than
/// 100000 trials, or a hardware key that does not parse or names another target.
absl::StatusOr<TuneSpec> PrepareTune(CompilePreparer& preparer, const v1::TuneRequest& request);

/// The job of `spec`: BATCH priority, deduplicated on the model's key, the hardware key and the
/// budgets (the same tune submitted twice is one job); its persisted request is the
/// TuneRequest, so a restart resumes it.
JobSpec TuneJobSpec(const TuneSpec& spec);
const TuneSpec& TuneSpecOf(const JobSpec& job);

struct TuneHandlerOptions {
  cache::Storage* storage = nullptr;     // records and cost models; required
  TargetResolver* targets = nullptr;     // required
  std::string host_cpu;                  // kilnd's host CPU (compile_handler.h CompilesFor)
  /// How measure workers time candidates (num_threads is the measure worker's cores: it
  /// overrides it; a negative cache_flush_bytes is CacheFlushBytesFor the hardware).
  tuning::MeasureOptions measure = [] {
    tuning::MeasureOptions m;
    m.cache_flush_bytes = -1;
    return m;
  }();
  StepWaitOptions wait;
  /// How long a tune waits for a measure worker of its target to register.
  absl::Duration measure_worker_wait = absl::Seconds(30);
};

class TuneHandler final : public JobHandler {
 public:
  explicit TuneHandler(TuneHandlerOptions options) : options_(std::move(options)) {}
  /// Stops every running tune and waits for its thread.
  ~TuneHandler() override;
  /// The scheduler the tunes submit their steps to and report to; set before any job starts.
  void SetScheduler(Scheduler* scheduler) { scheduler_ = scheduler; }

  cache::JobKind kind() const override { return cache::JobKind::kTune; }
  bool RunsInProcess() const override { return true; }
  void Start(const std::string& job_id, const std::string& run_id, const JobSpec& job) override;
  void Stop(const std::string& job_id) override;
  void DescribeResult(const std::string& persisted, v1::JobEvent& event) const override;

  bool CanRun(const JobSpec&, const v1::WorkerCapabilities&) const override { return false; }
  void BuildTask(const JobSpec&, v1::WorkerTask&) const override {}
  absl::StatusOr<JobResult> TaskSucceeded(const JobSpec&, const std::string&, const std::string&,
                                          const v1::TaskResult&) override {
    return absl::InternalError("tune jobs have no worker tasks");
  }

  /// Stops every tune and joins its thread (the daemon calls it before the storage goes).
  void StopAll();

 private:
  struct Run {
    std::string job_id;
    std::atomic<bool> stop{false};
    std::atomic<bool> done{false};
    std::thread thread;
  };
  /// The tune itself, on its own thread; ends the job with FinishInProcess.
  void RunTune(const std::string& job_id, const std::string& run_id, const TuneSpec& spec,
               const std::atomic<bool>& stop);
  absl::StatusOr<v1::TuneResult> Tune(const std::string& job_id, const TuneSpec& spec,
                                      const std::atomic<bool>& stop, int* records_written);
  void ReapDone();  // mu_ held

  const TuneHandlerOptions options_;
  Scheduler* scheduler_ = nullptr;
  std::mutex mu_;
  std::vector<std::unique_ptr<Run>> runs_;  // not yet joined; guarded by mu_
};

}  // namespace kiln::server

#endif  // KILN_SERVER_TUNE_HANDLER_H_
