// What one job kind contributes to scheduling: which workers can run its tasks (from their typed
// capabilities), what the task for one attempt says, and what a successful task result means
// for the job. The Scheduler owns everything kind-independent (queue order, single-flight,
// deadlines, slots, heartbeats, retry-once, the RESOURCE_EXHAUSTED / UNAVAILABLE protocol of
// TaskResult), so a new kind is one new handler registered with it. Kinds today: compile
// (compile_handler.h); the worker steps of a tune job, workloads / build / measure
// (step_handler.h); and tune (tune_handler.h), which runs inside kilnd rather than as a worker
// task (RunsInProcess) and submits step jobs itself, as any client does.
#ifndef KILN_SERVER_JOB_HANDLER_H_
#define KILN_SERVER_JOB_HANDLER_H_

#include <string>

#include "absl/status/statusor.h"
#include "kiln/v1/service.pb.h"
#include "server/cache/storage.h"
#include "server/job.h"

namespace kiln::server {

/// The kind-specific part of running jobs of one kind.
///
/// Threading: the Scheduler calls every method under its lock, so implementations must return
/// quickly (at most one storage write) and must not call back into the Scheduler.
class JobHandler {
 public:
  virtual ~JobHandler() = default;

  /// The kind of the jobs this handler runs; one handler per kind.
  virtual cache::JobKind kind() const = 0;

  /// Whether a worker with `capabilities` can run a task of `job`. Free slots, cooldowns and
  /// workers the job was lost on are the Scheduler's business, not the handler's.
  virtual bool CanRun(const JobSpec& job, const v1::WorkerCapabilities& capabilities) const = 0;

  /// Fills the kind's member of `task.kind` for one attempt of `job`; task_id, job_id and
  /// deadline_unix_ms are already set.
  virtual void BuildTask(const JobSpec& job, v1::WorkerTask& task) const = 0;

  /// Turns the result of a task that `worker_id` reported as OK into the job's result, doing
  /// whatever the kind keeps (a compile files its artifact). Also called for a stale task (its
  /// job was cancelled, expired or retried meanwhile), whose result is then dropped. Errors fail
  /// the job with their code (kUnavailable counts like a lost worker: retried once).
  virtual absl::StatusOr<JobResult> TaskSucceeded(const JobSpec& job, const std::string& job_id,
                                                  const std::string& worker_id,
                                                  const v1::TaskResult& result) = 0;

  /// Fills the kind's result fields of `event` from a finished job's persisted result
  /// (JobResult::persisted of an earlier run).
  virtual void DescribeResult(const std::string& persisted, v1::JobEvent& event) const = 0;

  // ---- In-process kinds ------------------------------------------------------------------------
  // A kind that RunsInProcess is never sent to a worker: the Scheduler starts a queued job of it
  // (at most SchedulerOptions::max_in_process at once) by calling Start after releasing its lock,
  // the handler runs it on a thread of its own and ends it with Scheduler::FinishInProcess.
  // CanRun, BuildTask and TaskSucceeded are not called for such a kind.

  virtual bool RunsInProcess() const { return false; }
  /// Starts attempt `run_id` of `job` (returns at once). Called without the Scheduler's lock.
  virtual void Start(const std::string& job_id, const std::string& run_id, const JobSpec& job) {
    (void)job_id, (void)run_id, (void)job;
  }
  /// The running job ended without the handler (cancelled, expired, kilnd draining): stop its
  /// run soon; a later FinishInProcess for it is ignored. Called under the Scheduler's lock:
  /// must not block or call the Scheduler.
  virtual void Stop(const std::string& job_id) { (void)job_id; }
};

}  // namespace kiln::server

#endif  // KILN_SERVER_JOB_HANDLER_H_
