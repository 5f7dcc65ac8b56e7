// The job scheduler: a priority queue of compile jobs (INTERACTIVE before BATCH, FIFO within a
// class), single-flight dedup of identical live jobs (same artifact key), dispatch to connected
// workers with free slots, per-job deadlines, retry-once when a worker dies, cancellation, and
// persistence of every state change through cache::Storage so that a restart resumes live jobs.
//
// Threading: every method is thread-safe and returns quickly (it may do one SQLite write). No
// method calls back into its caller while holding the lock: completion callbacks and watch
// events run after it is released, on the calling thread or the scheduler's tick thread.
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
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kiln/v1/service.pb.h"
#include "server/cache/storage.h"
#include "server/metrics_hooks.h"

namespace kiln::server {

/// A validated compile request with its full cache key (see CompilePreparer).
struct CompileSpec {
  /// SHA-256 hex of the model blob (an inline model is stored as a blob first).
  std::string model_digest;
  int64_t model_size_bytes = 0;
  /// The target spec as the worker receives it: "host" or "cpu:<name>".
  std::string target;
  /// Canonical options (artifact_key.h).
  v1::CompileOptions options;
  cache::ArtifactKey key;
  /// INTERACTIVE or BATCH (never UNSPECIFIED).
  v1::Priority priority = v1::INTERACTIVE;
};

/// What a waiter of a job receives: OK with the response (artifact digest, key, compile_ms,
/// job_id, worker; cache_hit false), or the job's error.
struct JobOutcome {
  absl::Status status;
  v1::CompileResponse response;
};
using JobCallback = std::function<void(const JobOutcome&)>;
/// A watch event; `last` is true for the final one (terminal state, or kilnd shutting down).
using JobEventCallback = std::function<void(const v1::JobEvent& event, bool last)>;

/// The scheduler's handle on one connected worker. Implemented by the WorkerHub's stream (and by
/// fakes in tests). Methods must not block and must not call into the Scheduler synchronously.
class WorkerChannel {
 public:
  virtual ~WorkerChannel() = default;
  virtual void SendTask(const v1::CompileTask& task) = 0;
  virtual void SendCancel(const std::string& task_id) = 0;
  /// Ends the connection (e.g. after missed heartbeats).
  virtual void Close(const absl::Status& why) = 0;
};

struct SchedulerOptions {
  cache::Storage* storage = nullptr;  // required
  MetricsHooks* metrics = nullptr;    // optional
  /// Dispatches lost to a dying worker before the job fails (2: the job is retried once).
  int max_attempts = 2;
  /// A worker that sends nothing for this long is dropped and its tasks are retried.
  absl::Duration heartbeat_timeout = absl::Seconds(15);
  /// How often deadlines and heartbeats are checked.
  absl::Duration tick_interval = absl::Milliseconds(200);
  /// The LLVM CPU name of kilnd's host. "host" jobs go only to workers reporting this CPU (or
  /// none), because the cache key of "host" was resolved on kilnd's host. Empty: no check.
  std::string host_cpu;
};

class Scheduler {
 public:
  /// Starts the tick thread.
  explicit Scheduler(SchedulerOptions options);
  /// Stops the tick thread. Call Drain first to persist live jobs cleanly.
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  /// Identifies one waiter of one job.
  struct Ticket {
    std::string job_id;
    uint64_t waiter = 0;  // 0: no waiter registered (no callback given)
    bool joined = false;  // an identical live job existed; this request joined it
  };

  /// Queues a compile of `spec`, or joins the live job with the same artifact key
  /// (single-flight; an INTERACTIVE request promotes a queued BATCH job). `on_done` (optional)
  /// runs exactly once when the job ends, unless the ticket is abandoned first. `deadline`
  /// (absl::InfiniteFuture() for none) bounds the job; joining extends it. A `detached` job
  /// (SubmitJob) runs to its end even when no one waits. Errors: kUnavailable while draining or
  /// if the job cannot be persisted.
  absl::StatusOr<Ticket> Submit(const CompileSpec& spec, absl::Time deadline, bool detached,
                                JobCallback on_done);

  /// The waiter behind `ticket` went away (its RPC was cancelled). A job that is not detached
  /// and has no waiter left is cancelled.
  void Abandon(const Ticket& ticket);

  /// Persists a job that is already done (a cache hit of SubmitJob), so WatchJob and ListJobs
  /// know it. Returns its id.
  absl::StatusOr<std::string> RecordCacheHit(const CompileSpec& spec,
                                             const v1::CompileResponse& response);

  /// Cancels a live job (a running one's task is cancelled on its worker). Returns the job's
  /// state afterwards; a finished job is left as it is. kNotFound for an unknown id.
  absl::StatusOr<v1::JobState> Cancel(const std::string& job_id);

  /// Starts watching a job: returns its current state as an event and, unless that event is the
  /// last (`*last`), registers `fn` for the following ones; `*watch_id` then identifies it for
  /// Unwatch. kNotFound for an unknown id.
  absl::StatusOr<v1::JobEvent> Watch(const std::string& job_id, JobEventCallback fn,
                                     uint64_t* watch_id, bool* last);
  void Unwatch(const std::string& job_id, uint64_t watch_id);

  /// Re-queues a persisted live job at startup (its record says QUEUED or RUNNING) as detached.
  absl::Status Restore(const cache::JobRecord& record, const CompileSpec& spec);

  // ---- Workers --------------------------------------------------------------------------------

  /// Registers a connected worker and returns its id. `info.local` and `info.pid` are kept.
  std::string AddWorker(v1::Worker info, std::shared_ptr<WorkerChannel> channel);
  /// The worker's connection ended: its running tasks are retried elsewhere (once) or failed.
  void RemoveWorker(const std::string& worker_id, const absl::Status& why);
  /// Any message from the worker proves it alive; `busy` is what it reports.
  void Heartbeat(const std::string& worker_id, int32_t busy);
  /// A task ended on `worker_id`. On success the artifact blob must already be stored
  /// (UploadArtifact); it is linked into the cache under the job's key.
  void TaskDone(const std::string& worker_id, const v1::TaskResult& result);
  std::vector<v1::Worker> ListWorkers();

  struct Counts {
    int queued = 0;
    int running = 0;
    int workers = 0;
  };
  Counts GetCounts();

  /// Graceful shutdown: stops dispatching and accepting jobs, waits up to `grace` for running
  /// jobs to end, then persists every live job as QUEUED (a restart resumes it), cancels the
  /// tasks still running and fails their waiters with kUnavailable.
  void Drain(absl::Duration grace);

  /// Runs deadline and heartbeat checks and dispatch now (tests; the tick thread does this).
  void TickForTesting() { Tick(); }

 private:
  struct Job;
  struct WorkerState;
  /// Callbacks collected under the lock and run after it is released.
  struct Notifications {
    std::vector<std::function<void()>> calls;
    void Run();
  };

  void TickLoop();
  void Tick();
  void Dispatch(Notifications& n);
  void Requeue(Job& job, const std::string& message, Notifications& n);
  void LoseTask(Job& job, const std::string& worker_id, const absl::Status& why, Notifications& n);
  void Finish(Job& job, const absl::Status& status, const v1::CompileResponse& response,
              Notifications& n);
  void FinishCancelled(Job& job, const std::string& why, Notifications& n);
  void Emit(Job& job, v1::JobState state, const std::string& message, Notifications& n,
            bool last = false, const absl::Status& error = absl::OkStatus(),
            const v1::CompileResponse* result = nullptr);
  void Persist(const Job& job, cache::JobUpdate update);
  void EraseLive(const std::string& job_id);
  bool Eligible(const Job& job, const WorkerState& worker) const;
  void ReportState();
  std::string NewJobId();

  const SchedulerOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;  // tick thread wake-up; Drain waits on it for running jobs
  bool stopping_ = false;
  bool draining_ = false;
  uint64_t next_seq_ = 1;
  uint64_t next_waiter_ = 1;
  uint64_t next_worker_ = 1;
  std::map<std::string, std::unique_ptr<Job>> jobs_;        // live jobs by id
  std::map<std::string, std::string> by_key_;               // KeyString → live job id
  std::set<std::tuple<int, uint64_t, std::string>> queue_;  // (class, seq, job id)
  std::map<std::string, std::unique_ptr<WorkerState>> workers_;
  /// Task id → (job id, artifact key) for every task handed to a worker and not yet reported.
  std::map<std::string, std::pair<std::string, cache::ArtifactKey>> tasks_;
  std::thread tick_thread_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_SCHEDULER_H_
