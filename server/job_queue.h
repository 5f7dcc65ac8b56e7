// The job queue, generic over job kinds: live jobs in run order (INTERACTIVE before BATCH, FIFO
// within a class), single-flight dedup by the kind's dedup key, deadlines, waiters and watch
// events, and persistence of every state change through cache::Storage so that a restart
// resumes live jobs. It does not know workers: its owner starts jobs on them and reports back.
//
// Threading: not thread-safe. Its owner (the Scheduler) serializes every call under one lock.
// Callbacks of waiters and watchers are never run inside a call: they are appended to the
// caller's Notifications, which the owner runs after releasing its lock.
#ifndef KILN_SERVER_JOB_QUEUE_H_
#define KILN_SERVER_JOB_QUEUE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kiln/v1/service.pb.h"
#include "server/cache/storage.h"
#include "server/job.h"
#include "server/metrics_hooks.h"

namespace kiln::server {

/// Callbacks collected under a lock and run after it is released.
struct Notifications {
  std::vector<std::function<void()>> calls;
  void Run();
};

/// A live (queued or running) job.
struct LiveJob {
  std::string id;
  JobSpec spec;
  absl::Time deadline = absl::InfiniteFuture();
  bool detached = false;  // runs to its end even with no waiter (SubmitJob, restored jobs)
  uint64_t seq = 0;       // FIFO order within a class
  absl::Time queued_at;   // when it last entered the queue (kiln_job_queue_wait_seconds)
  int klass = 0;          // 0: INTERACTIVE, 1: BATCH
  v1::JobState state = v1::QUEUED;
  int attempts = 0;     // starts so far (persisted)
  std::string worker;   // current or last worker
  std::string task_id;  // the current task while RUNNING; empty once it was given up
  std::map<uint64_t, JobCallback> waiters;
  std::map<uint64_t, JobEventCallback> watchers;
};

struct JobQueueOptions {
  cache::Storage* storage = nullptr;  // required
  MetricsHooks* metrics = nullptr;    // optional
  /// Runs (inside the call that ends it) when a live job leaves the queue: finished, cancelled,
  /// expired, or persisted by PersistAllForRestart. A non-empty `job.task_id` means its task
  /// still runs on `job.worker` and should be cancelled there. Optional.
  std::function<void(const LiveJob& job)> on_end;
  /// Fills the kind's result fields of `event` from a finished job's record (WatchJob of a
  /// finished job). Optional: without it such events carry no result.
  std::function<void(const cache::JobRecord& record, v1::JobEvent& event)> describe_result;
  /// Admission of client jobs (compile and tune; the steps of a tune are never refused), 0 for
  /// no limit: queued client jobs at most, and live (queued or running) jobs of one owner at
  /// most. A submission past either gets RESOURCE_EXHAUSTED naming the limit's flag.
  int64_t max_queued = 0;
  int64_t max_live_per_owner = 0;
};

class JobQueue {
 public:
  explicit JobQueue(JobQueueOptions options) : options_(std::move(options)) {}

  /// Queues a new job, or joins the live job of the same kind and dedup key (an INTERACTIVE
  /// request promotes a queued BATCH job; joining extends the deadline and may make it
  /// detached). `on_done` (optional) runs exactly once when the job ends, unless the ticket is
  /// abandoned first. Errors: kUnavailable if a new job cannot be persisted.
  absl::StatusOr<Ticket> Submit(const JobSpec& spec, absl::Time deadline, bool detached,
                                JobCallback on_done, Notifications& n);
  /// Re-queues a persisted live job (detached, with its stored priority and attempts). A second
  /// record with the same dedup key is cancelled in storage as a duplicate. Errors: storage's.
  absl::Status Restore(const cache::JobRecord& record, const JobSpec& spec);
  /// Persists a job that is already done (a cache hit): `make_result` gets its new id. Returns
  /// the id. Errors: storage's. Touches no queue state, so unlike the rest it needs no lock.
  absl::StatusOr<std::string> RecordFinished(
      const JobSpec& spec, const std::function<JobResult(const std::string& job_id)>& make_result);

  /// The waiter went away; a job that is not detached and has no waiter left is cancelled.
  void Abandon(const Ticket& ticket, Notifications& n);
  /// Cancels a live job; a finished one is left as it is. Returns the state afterwards.
  /// kNotFound for an unknown id.
  absl::StatusOr<v1::JobState> Cancel(const std::string& job_id, Notifications& n);
  /// Starts watching: returns the current state as an event and, unless it is the last
  /// (`*last`: a finished job, answered from storage), registers `fn` for the following ones
  /// under `*watch_id`. kNotFound for an unknown id.
  absl::StatusOr<v1::JobEvent> Watch(const std::string& job_id, JobEventCallback fn,
                                     uint64_t* watch_id, bool* last);
  void Unwatch(const std::string& job_id, uint64_t watch_id);
  /// Sends a progress event (state unchanged) to the watchers of a live job; unknown ids are
  /// ignored.
  void Progress(const std::string& job_id, const std::string& message, Notifications& n,
                const v1::JobEvent* fields = nullptr);

  // ---- Running jobs (the owner's side) ----------------------------------------------------------

  /// Ids of the queued jobs, in run order.
  std::vector<std::string> QueuedInOrder() const;
  /// The live job, or null.
  const LiveJob* Find(const std::string& job_id) const;
  /// The live job if `task_id` is its current task, else null (the task is stale).
  const LiveJob* FindByTask(const std::string& job_id, const std::string& task_id) const;
  /// Marks a queued job RUNNING on `worker_id` as its next attempt; returns the new task id.
  std::string Start(const std::string& job_id, const std::string& worker_id, Notifications& n);
  /// The running job's task is given up (lost while shutting down): it stays RUNNING, taskless.
  void ClearTask(const std::string& job_id);
  /// Puts a running job back in its old place in line (refused or lost task); `message` goes
  /// to the log and the watchers.
  void Requeue(const std::string& job_id, const std::string& message, Notifications& n);
  /// Ends a live job: SUCCEEDED with `result` if `status` is OK, else FAILED with it.
  void Finish(const std::string& job_id, const absl::Status& status, const JobResult& result,
              Notifications& n);
  /// Fails every live job whose deadline is at or before `now` with kDeadlineExceeded.
  void ExpireDeadlines(absl::Time now, Notifications& n);
  /// Shutdown: persists every live job as QUEUED (a restart resumes it), fails its waiters
  /// with kUnavailable, sends watchers a last QUEUED event, and empties the queue.
  void PersistAllForRestart(Notifications& n);

  /// Adds the live jobs of each kind to `queued` and `running`.
  void CountByKind(std::map<cache::JobKind, int>& queued,
                   std::map<cache::JobKind, int>& running) const;
  int queued() const { return static_cast<int>(queue_.size()); }
  int running() const { return static_cast<int>(jobs_.size() - queue_.size()); }

 private:
  /// RESOURCE_EXHAUSTED when a new client job would pass max_queued or max_live_per_owner.
  absl::Status Admit(const JobSpec& spec) const;

  void FinishCancelled(LiveJob& job, const std::string& why, Notifications& n);
  void Emit(LiveJob& job, v1::JobState state, const std::string& message, Notifications& n,
            bool last = false, const absl::Status& error = absl::OkStatus(),
            const v1::JobEvent* fields = nullptr);
  void Persist(const LiveJob& job, const cache::JobUpdate& update);
  void NotifyWaiters(LiveJob& job, const absl::Status& status, const JobResult& result,
                     Notifications& n);
  /// Removes a job that ended; `job` is gone afterwards.
  void Erase(LiveJob& job);
  static std::string DedupKey(const JobSpec& spec);

  const JobQueueOptions options_;
  uint64_t next_seq_ = 1;
  uint64_t next_waiter_ = 1;
  std::map<std::string, std::unique_ptr<LiveJob>> jobs_;    // live jobs by id
  std::map<std::string, std::string> by_key_;               // DedupKey → live job id
  std::set<std::tuple<int, uint64_t, std::string>> queue_;  // (class, seq, job id)
};

}  // namespace kiln::server

#endif  // KILN_SERVER_JOB_QUEUE_H_
