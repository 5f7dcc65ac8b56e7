// The Scheduler ties the job queue, the worker registry and the job handlers together: it
// places queued jobs on eligible workers with free slots (the kind's handler decides what
// "eligible" means and what the task says), routes task results back to the handler and the
// queue, retries a job once when its worker is lost, and runs deadline and heartbeat checks on a
// tick thread. Generic over job kinds: a kind is one JobHandler in SchedulerOptions.
//
// Threading: every method is thread-safe and returns quickly (it may do one SQLite write). One
// lock guards the queue and the registry. No method calls back into its caller while holding
// it: completion callbacks and watch events run after it is released, on the calling thread or
// the scheduler's tick thread.
#ifndef KILN_SERVER_SCHEDULER_H_
#define KILN_SERVER_SCHEDULER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kiln/v1/service.pb.h"
#include "server/cache/storage.h"
#include "server/job.h"
#include "server/job_handler.h"
#include "server/job_queue.h"
#include "server/metrics_hooks.h"
#include "server/worker_registry.h"

namespace kiln::server {

struct SchedulerOptions {
  cache::Storage* storage = nullptr;  // required
  MetricsHooks* metrics = nullptr;    // optional
  /// One handler per job kind (not owned; must outlive the Scheduler). Jobs of other kinds are
  /// refused.
  std::vector<JobHandler*> handlers;
  /// Tasks lost to a dying worker before the job fails (2: the job is retried once).
  int max_attempts = 2;
  /// A worker that sends nothing for this long is dropped and its tasks are retried.
  absl::Duration heartbeat_timeout = absl::Seconds(15);
  /// How often deadlines and heartbeats are checked.
  absl::Duration tick_interval = absl::Milliseconds(200);
  /// In-process jobs (tune) that run at once; later ones wait in the queue.
  int max_in_process = 1;
  /// Admission limits of client jobs (JobQueueOptions::max_queued, max_live_per_owner).
  int64_t max_queued_jobs = 0;
  int64_t max_jobs_per_token = 0;
};

class Scheduler {
 public:
  /// Starts the tick thread.
  explicit Scheduler(SchedulerOptions options);
  /// Stops the tick thread. Call Drain first to persist live jobs cleanly.
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  /// Queues `spec`, or joins the live job of its kind with the same dedup key (single-flight; an
  /// INTERACTIVE request promotes a queued BATCH job). `on_done` (optional) runs exactly once
  /// when the job ends, unless the ticket is abandoned first. `deadline`
  /// (absl::InfiniteFuture() for none) bounds the job; joining extends it. A `detached` job
  /// (SubmitJob) runs to its end even when no one waits. Errors: kUnavailable while draining or
  /// if the job cannot be persisted; kUnimplemented for a kind without a handler.
  absl::StatusOr<Ticket> Submit(const JobSpec& spec, absl::Time deadline, bool detached,
                                JobCallback on_done);

  /// The waiter behind `ticket` went away (its RPC was cancelled). A job that is not detached
  /// and has no waiter left is cancelled.
  void Abandon(const Ticket& ticket);

  /// Persists a job that is already done (a cache hit of SubmitJob), so WatchJob and ListJobs
  /// know it; `make_result` gets the new job's id. Returns the id. Errors: storage's.
  absl::StatusOr<std::string> RecordCacheHit(
      const JobSpec& spec, const std::function<JobResult(const std::string& job_id)>& make_result);

  /// Cancels a live job (a running one's task is cancelled on its worker). Returns the job's
  /// state afterwards; a finished job is left as it is. kNotFound for an unknown id.
  absl::StatusOr<v1::JobState> Cancel(const std::string& job_id);

  /// Starts watching a job: returns its current state as an event and, unless that event is the
  /// last (`*last`), registers `fn` for the following ones; `*watch_id` then identifies it for
  /// Unwatch. kNotFound for an unknown id.
  absl::StatusOr<v1::JobEvent> Watch(const std::string& job_id, JobEventCallback fn,
                                     uint64_t* watch_id, bool* last);
  void Unwatch(const std::string& job_id, uint64_t watch_id);
  /// Tells the watchers of a live job how it is getting on (its state is unchanged). `fields`
  /// (optional) carries the kind's progress fields of the event (a tune's tune_progress).
  void Progress(const std::string& job_id, const std::string& message,
                const v1::JobEvent* fields = nullptr);
  /// Ends attempt `run_id` of an in-process job (JobHandler::Start): SUCCEEDED with `result` if
  /// `status` is OK, else FAILED with it. Ignored when the job already ended or was restarted
  /// (a stale run).
  void FinishInProcess(const std::string& job_id, const std::string& run_id,
                       const absl::Status& status, const JobResult& result);
  /// Whether a worker with a capability that `fits` is connected (e.g. a measure worker of one
  /// hardware key).
  bool HasWorker(const std::function<bool(const v1::WorkerCapabilities&)>& fits);

  /// Re-queues a persisted live job at startup (its record says QUEUED or RUNNING) as detached.
  absl::Status Restore(const cache::JobRecord& record, const JobSpec& spec);

  // ---- Workers --------------------------------------------------------------------------------

  /// Registers a connected worker and returns its id. `info.local` and `info.pid` are kept.
  std::string AddWorker(v1::Worker info, std::shared_ptr<WorkerChannel> channel);
  /// The worker's connection ended: its running tasks are retried elsewhere (once) or failed.
  void RemoveWorker(const std::string& worker_id, const absl::Status& why);
  /// Any message from the worker proves it alive; `busy` is what it reports.
  void Heartbeat(const std::string& worker_id, int32_t busy);
  /// A task ended on `worker_id`; its kind's handler interprets a success (a compile's
  /// artifact blob must already be stored with UploadArtifact).
  void TaskDone(const std::string& worker_id, const v1::TaskResult& result);
  std::vector<v1::Worker> ListWorkers();

  struct Counts {
    int queued = 0;
    int running = 0;
    int workers = 0;
    /// Live jobs by kind; every kind appears (0 when it has none).
    std::map<cache::JobKind, int> queued_by_kind;
    std::map<cache::JobKind, int> running_by_kind;
    /// Connected workers by capability: {"compile", "cpu,cuda"} (the target kinds it compiles
    /// for) or {"measure", "cuda:0"} (the device it measures on). A worker with both
    /// capabilities counts under each.
    std::map<std::pair<std::string, std::string>, int> workers_by_kind_device;
  };
  Counts GetCounts();

  /// Graceful shutdown: stops dispatching and accepting jobs, waits up to `grace` for running
  /// jobs to end, then persists every live job as QUEUED (a restart resumes it), cancels the
  /// tasks still running and fails their waiters with kUnavailable.
  void Drain(absl::Duration grace);

  /// Runs deadline and heartbeat checks and dispatch now (tests; the tick thread does this).
  void TickForTesting() { Tick(); }

 private:
  void TickLoop();
  void Tick();
  void Dispatch(Notifications& n);
  void LoseTask(const LostTask& lost, const absl::Status& why, Notifications& n);
  void OnJobEnd(const LiveJob& job);
  JobHandler* HandlerFor(cache::JobKind kind) const;

  const SchedulerOptions options_;
  std::map<cache::JobKind, JobHandler*> handlers_;
  std::mutex mu_;
  std::condition_variable cv_;  // tick thread wake-up; Drain waits on it for running jobs
  bool stopping_ = false;
  bool draining_ = false;
  JobQueue queue_;          // guarded by mu_
  WorkerRegistry workers_;  // guarded by mu_
  std::set<std::string> in_process_;  // running in-process jobs; guarded by mu_
  std::thread tick_thread_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_SCHEDULER_H_
