// The connected workers: their typed capabilities, slots and heartbeats, which task runs where,
// and what becomes of the tasks of a worker that is lost (each job is retried once on another
// worker, then fails). Knows nothing of job kinds: eligibility comes in as a predicate.
//
// Threading: not thread-safe. Its owner (the Scheduler) serializes every call under one lock;
// the registry never calls out except through WorkerChannel, whose methods do not block.
#ifndef KILN_SERVER_WORKER_REGISTRY_H_
#define KILN_SERVER_WORKER_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "kiln/v1/service.pb.h"
#include "server/job.h"

namespace kiln::server {

/// The scheduler's handle on one connected worker. Implemented by the WorkerHub's stream (and by
/// fakes in tests). Methods must not block and must not call into the Scheduler synchronously.
class WorkerChannel {
 public:
  virtual ~WorkerChannel() = default;
  virtual void SendTask(const v1::WorkerTask& task) = 0;
  virtual void SendCancel(const std::string& task_id) = 0;
  /// Ends the connection (e.g. after missed heartbeats).
  virtual void Close(const absl::Status& why) = 0;
};

/// A task handed to a worker and not yet reported back.
struct TaskEntry {
  std::string task_id;
  std::string job_id;
  std::string worker_id;
  /// The job's spec when the task was sent; kept so that a late result of a job that ended
  /// meanwhile can still be used (a compile still files its artifact).
  JobSpec spec;
};

/// A task whose worker was lost (it died, disconnected or reported UNAVAILABLE).
struct LostTask {
  TaskEntry task;
  /// True if the job may run again on another worker; false once it was lost `max_losses`
  /// times (or its job is no longer tracked).
  bool retry = false;
  /// How many of the job's tasks were lost so far.
  int losses = 0;
};

class WorkerRegistry {
 public:
  /// `max_losses`: tasks of one job lost to dying workers before the job gives up (2: the job
  /// is retried once).
  explicit WorkerRegistry(int max_losses = 2) : max_losses_(max_losses) {}

  /// Registers a worker seen `now`; returns its new id ("w1", "w2", ...). `info.id` is
  /// overwritten and slots below 1 become 1; the rest (capabilities, pid, local) is kept.
  std::string Add(v1::Worker info, std::shared_ptr<WorkerChannel> channel, absl::Time now);
  /// Unregisters a worker and returns its tasks as lost, each counted against its job. Unknown
  /// ids return nothing.
  std::vector<LostTask> Remove(const std::string& worker_id);
  /// The worker's registration (busy as last reported), or null for an unknown id.
  const v1::Worker* Find(const std::string& worker_id) const;
  size_t size() const { return workers_.size(); }

  /// The worker proved alive at `now`; `busy`, if given, is what it reports.
  void Touch(const std::string& worker_id, absl::Time now, std::optional<int32_t> busy = {});
  /// Workers not seen for longer than `timeout` before `now`.
  std::vector<std::string> Silent(absl::Time now, absl::Duration timeout) const;
  /// No task goes to the worker before `until` (it refused one for lack of slots).
  void CoolDown(const std::string& worker_id, absl::Time until);
  /// The worker's channel; null for an unknown id.
  WorkerChannel* Channel(const std::string& worker_id) const;

  /// The least-loaded worker with a free slot, not cooling down at `now`, on which `job_id` was
  /// never lost, and whose capabilities satisfy `can_run`; nullopt if none. Ties: lowest id
  /// order.
  std::optional<std::string> Pick(
      const std::string& job_id, absl::Time now,
      const std::function<bool(const v1::WorkerCapabilities&)>& can_run) const;

  /// Records that `task` now runs on `task.worker_id` (which must be registered).
  void StartTask(TaskEntry task);
  /// `worker_id` reported the task's end: frees its slot there and returns the task; nullopt if
  /// the task is unknown (e.g. reported twice).
  std::optional<TaskEntry> EndTask(const std::string& worker_id, const std::string& task_id);
  /// Counts an ended task as lost (its result said UNAVAILABLE: like a worker that died) and
  /// says whether its job may be retried.
  LostTask RecordLoss(TaskEntry task);
  /// The job ended: forget its loss count and the workers it was lost on.
  void ForgetJob(const std::string& job_id) { history_.erase(job_id); }

  /// The registered workers (busy = tasks running there), in id order.
  std::vector<v1::Worker> List() const;

 private:
  struct WorkerState {
    v1::Worker info;
    std::shared_ptr<WorkerChannel> channel;
    std::set<std::string> tasks;
    absl::Time last_seen;
    absl::Time cooldown_until = absl::InfinitePast();
  };
  /// Where a job's tasks were lost; exists from its first task until ForgetJob.
  struct JobHistory {
    int losses = 0;
    std::set<std::string> lost_on;
  };

  const int max_losses_;
  uint64_t next_worker_ = 1;
  std::map<std::string, WorkerState> workers_;
  std::map<std::string, TaskEntry> tasks_;  // task id → entry, for tasks not yet reported
  std::map<std::string, JobHistory> history_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_WORKER_REGISTRY_H_
