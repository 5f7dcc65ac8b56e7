// Live jobs: run order, single-flight, deadlines, waiters, watch events and persistence.
#include "server/job_queue.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "compiler_core/support/status_macros.h"
#include "server/job_state.h"
#include "server/log.h"

namespace kiln::server {
namespace {

int PriorityClass(v1::Priority p) { return p == v1::BATCH ? 1 : 0; }
int32_t StoredPriority(int klass) { return klass == 0 ? 2 : 1; }  // higher runs first
int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

std::string NewJobId() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  return absl::StrFormat("j%011x%06x", NowMs(), rng() & 0xffffff);
}

cache::JobRecord NewRecord(const std::string& id, const JobSpec& spec) {
  cache::JobRecord record;
  record.id = id;
  record.kind = spec.kind;
  record.state = cache::JobState::kQueued;
  record.priority = StoredPriority(PriorityClass(spec.priority));
  record.model_digest = spec.model_digest;
  record.request = spec.request;
  record.owner = spec.owner;
  return record;
}

absl::Status NotFound(const std::string& job_id) {
  return absl::NotFoundError(absl::StrCat("no job '", job_id, "'"));
}

}  // namespace

void Notifications::Run() {
  for (auto& call : calls) call();
  calls.clear();
}

std::string JobQueue::DedupKey(const JobSpec& spec) {
  return absl::StrCat(std::string(cache::JobKindName(spec.kind)), ":", spec.dedup_key);
}

absl::Status JobQueue::Admit(const JobSpec& spec) const {
  if (spec.kind != cache::JobKind::kCompile && spec.kind != cache::JobKind::kTune) {
    return absl::OkStatus();
  }
  if (options_.max_queued <= 0 && (options_.max_live_per_owner <= 0 || spec.owner.empty())) {
    return absl::OkStatus();
  }
  int64_t queued = 0, owned = 0;
  for (const auto& [id, job] : jobs_) {
    const cache::JobKind kind = job->spec.kind;
    if (kind != cache::JobKind::kCompile && kind != cache::JobKind::kTune) continue;
    if (job->state == v1::QUEUED) ++queued;
    if (!spec.owner.empty() && job->spec.owner == spec.owner) ++owned;
  }
  if (options_.max_queued > 0 && queued >= options_.max_queued) {
    return absl::ResourceExhaustedError(absl::StrCat("the job queue is full: ", queued,
                                                     " jobs queued (--max-queued-jobs ",
                                                     options_.max_queued, "); retry later"));
  }
  if (options_.max_live_per_owner > 0 && !spec.owner.empty() &&
      owned >= options_.max_live_per_owner) {
    return absl::ResourceExhaustedError(
        absl::StrCat(spec.owner, " has ", owned, " jobs queued or running (--max-jobs-per-token ",
                     options_.max_live_per_owner, "); wait for one to end"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Ticket> JobQueue::Submit(const JobSpec& spec, absl::Time deadline, bool detached,
                                        JobCallback on_done, Notifications& n) {
  Ticket ticket;
  std::string key = DedupKey(spec);
  auto it = by_key_.find(key);
  LiveJob* job = nullptr;
  if (it != by_key_.end()) {
    job = jobs_.at(it->second).get();
    ticket.joined = true;
    job->deadline = std::max(job->deadline, deadline);
    job->detached = job->detached || detached;
    if (PriorityClass(spec.priority) < job->klass) {
      // An interactive request waits on a batch job: promote it.
      if (job->state == v1::QUEUED) queue_.erase({job->klass, job->seq, job->id});
      job->klass = PriorityClass(spec.priority);
      if (job->state == v1::QUEUED) queue_.insert({job->klass, job->seq, job->id});
    }
    LogInfo("job.join", {{"job", job->id}, {"state", v1::JobState_Name(job->state)}});
  } else {
    KILN_RETURN_IF_ERROR(Admit(spec));
    auto owned = std::make_unique<LiveJob>();
    job = owned.get();
    job->id = NewJobId();
    job->spec = spec;
    job->deadline = deadline;
    job->detached = detached;
    job->seq = next_seq_++;
    job->queued_at = absl::Now();
    job->klass = PriorityClass(spec.priority);
    absl::StatusOr<cache::JobRecord> created =
        options_.storage->CreateJob(NewRecord(job->id, spec));
    if (!created.ok()) {
      return absl::UnavailableError(
          absl::StrCat("cannot persist the job: ", created.status().ToString()));
    }
    jobs_[job->id] = std::move(owned);
    by_key_[key] = job->id;
    queue_.insert({job->klass, job->seq, job->id});
    LogInfo("job.queued", {{"job", job->id},
                           {"kind", cache::JobKindName(spec.kind)},
                           {"model", spec.model_digest.substr(0, 12)},
                           {"priority", v1::Priority_Name(spec.priority)},
                           {"request", spec.log_summary}});
    Emit(*job, v1::QUEUED, "queued", n);
  }
  ticket.job_id = job->id;
  if (on_done) {
    ticket.waiter = next_waiter_++;
    job->waiters[ticket.waiter] = std::move(on_done);
  }
  return ticket;
}

absl::Status JobQueue::Restore(const cache::JobRecord& record, const JobSpec& spec) {
  std::string key = DedupKey(spec);
  auto dup = by_key_.find(key);
  if (dup != by_key_.end()) {
    // Two persisted jobs for one key: the second is redundant.
    cache::JobUpdate update;
    update.state = cache::JobState::kCancelled;
    update.error = absl::CancelledError(absl::StrCat("duplicate of job ", dup->second));
    (void)options_.storage->UpdateJob(record.id, update);
    return absl::OkStatus();
  }
  auto job = std::make_unique<LiveJob>();
  job->id = record.id;
  job->spec = spec;
  job->detached = true;
  job->queued_at = absl::Now();
  job->seq = next_seq_++;
  job->klass = record.priority >= 2 ? 0 : 1;
  job->attempts = record.attempts;
  if (record.state != cache::JobState::kQueued) {
    cache::JobUpdate update;
    update.state = cache::JobState::kQueued;
    update.worker = "";
    absl::StatusOr<cache::JobRecord> updated = options_.storage->UpdateJob(record.id, update);
    if (!updated.ok()) return updated.status();
  }
  LogInfo("job.restored", {{"job", job->id}, {"was", cache::JobStateName(record.state)}});
  queue_.insert({job->klass, job->seq, job->id});
  by_key_[key] = job->id;
  jobs_[job->id] = std::move(job);
  return absl::OkStatus();
}

absl::StatusOr<std::string> JobQueue::RecordFinished(
    const JobSpec& spec, const std::function<JobResult(const std::string& job_id)>& make_result) {
  cache::JobRecord record = NewRecord(NewJobId(), spec);
  absl::StatusOr<cache::JobRecord> created = options_.storage->CreateJob(record);
  if (!created.ok()) return created.status();
  cache::JobUpdate update;
  update.state = cache::JobState::kSucceeded;
  update.result = make_result(record.id).persisted;
  absl::StatusOr<cache::JobRecord> updated = options_.storage->UpdateJob(record.id, update);
  if (!updated.ok()) return updated.status();
  return record.id;
}

void JobQueue::Abandon(const Ticket& ticket, Notifications& n) {
  auto it = jobs_.find(ticket.job_id);
  if (it == jobs_.end()) return;
  LiveJob& job = *it->second;
  job.waiters.erase(ticket.waiter);
  if (job.waiters.empty() && !job.detached) {
    FinishCancelled(job, "every client waiting for it went away", n);
  }
}

absl::StatusOr<v1::JobState> JobQueue::Cancel(const std::string& job_id, Notifications& n) {
  auto it = jobs_.find(job_id);
  if (it != jobs_.end()) {
    FinishCancelled(*it->second, "cancelled by CancelJob", n);
    return v1::CANCELLED;
  }
  absl::StatusOr<cache::JobRecord> record = options_.storage->GetJob(job_id);
  if (!record.ok()) {
    if (absl::IsNotFound(record.status())) return NotFound(job_id);
    return record.status();
  }
  switch (record->state) {
    case cache::JobState::kSucceeded:
    case cache::JobState::kFailed:
    case cache::JobState::kCancelled:
      return ToProtoState(record->state);
    default: {
      // Live in storage but not here (only while shutting down): cancel the record.
      cache::JobUpdate update;
      update.state = cache::JobState::kCancelled;
      (void)options_.storage->UpdateJob(job_id, update);
      return v1::CANCELLED;
    }
  }
}

absl::StatusOr<v1::JobEvent> JobQueue::Watch(const std::string& job_id, JobEventCallback fn,
                                             uint64_t* watch_id, bool* last) {
  auto it = jobs_.find(job_id);
  if (it != jobs_.end()) {
    LiveJob& job = *it->second;
    v1::JobEvent event;
    event.set_job_id(job.id);
    event.set_state(job.state);
    event.set_time_ms(NowMs());
    event.set_message(job.state == v1::RUNNING ? absl::StrCat("running on ", job.worker)
                                               : "queued");
    *watch_id = next_waiter_++;
    *last = false;
    job.watchers[*watch_id] = std::move(fn);
    return event;
  }
  absl::StatusOr<cache::JobRecord> record = options_.storage->GetJob(job_id);
  if (!record.ok()) {
    if (absl::IsNotFound(record.status())) return NotFound(job_id);
    return record.status();
  }
  v1::JobEvent event;
  event.set_job_id(record->id);
  event.set_time_ms(record->updated_ms);
  *last = true;
  *watch_id = 0;
  switch (record->state) {
    case cache::JobState::kSucceeded:
      event.set_state(v1::SUCCEEDED);
      event.set_message("succeeded");
      if (options_.describe_result) options_.describe_result(*record, event);
      break;
    case cache::JobState::kFailed:
      event.set_state(v1::FAILED);
      event.set_message("failed");
      event.set_error_code(static_cast<int32_t>(record->error.code()));
      event.set_error_message(std::string(record->error.message()));
      break;
    case cache::JobState::kCancelled:
      event.set_state(v1::CANCELLED);
      event.set_message("cancelled");
      break;
    default:
      event.set_state(v1::QUEUED);
      event.set_message("kilnd is shutting down; the job resumes when kilnd restarts");
      break;
  }
  return event;
}

void JobQueue::Unwatch(const std::string& job_id, uint64_t watch_id) {
  auto it = jobs_.find(job_id);
  if (it != jobs_.end()) it->second->watchers.erase(watch_id);
}

void JobQueue::Progress(const std::string& job_id, const std::string& message, Notifications& n,
                        const v1::JobEvent* fields) {
  auto it = jobs_.find(job_id);
  if (it != jobs_.end()) Emit(*it->second, it->second->state, message, n, false, absl::OkStatus(),
                              fields);
}

std::vector<std::string> JobQueue::QueuedInOrder() const {
  std::vector<std::string> ids;
  ids.reserve(queue_.size());
  for (const auto& entry : queue_) ids.push_back(std::get<2>(entry));
  return ids;
}

const LiveJob* JobQueue::Find(const std::string& job_id) const {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : it->second.get();
}

const LiveJob* JobQueue::FindByTask(const std::string& job_id, const std::string& task_id) const {
  const LiveJob* job = Find(job_id);
  return job != nullptr && !task_id.empty() && job->task_id == task_id ? job : nullptr;
}

std::string JobQueue::Start(const std::string& job_id, const std::string& worker_id,
                            Notifications& n) {
  LiveJob& job = *jobs_.at(job_id);
  queue_.erase({job.klass, job.seq, job.id});
  if (options_.metrics != nullptr) {
    options_.metrics->JobStarted(job.spec.kind, absl::ToDoubleSeconds(absl::Now() - job.queued_at));
  }
  ++job.attempts;
  job.state = v1::RUNNING;
  job.worker = worker_id;
  job.task_id = absl::StrCat(job.id, ".", job.attempts);
  cache::JobUpdate update;
  update.state = cache::JobState::kRunning;
  update.attempts = job.attempts;
  update.worker = job.worker;
  Persist(job, update);
  LogInfo(
      "job.dispatched",
      {{"job", job.id}, {"task", job.task_id}, {"worker", job.worker}, {"attempt", job.attempts}});
  Emit(job, v1::RUNNING, absl::StrCat("running on ", job.worker, " (attempt ", job.attempts, ")"),
       n);
  return job.task_id;
}

void JobQueue::ClearTask(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  if (it != jobs_.end()) it->second->task_id.clear();
}

void JobQueue::Requeue(const std::string& job_id, const std::string& message, Notifications& n) {
  LiveJob& job = *jobs_.at(job_id);
  job.task_id.clear();
  job.state = v1::QUEUED;
  job.queued_at = absl::Now();
  queue_.insert({job.klass, job.seq, job.id});  // keeps its place: it was first in line
  cache::JobUpdate update;
  update.state = cache::JobState::kQueued;
  update.worker = "";
  Persist(job, update);
  LogWarning("job.retry", {{"job", job.id}, {"reason", message}});
  Emit(job, v1::QUEUED, message, n);
}

void JobQueue::Finish(const std::string& job_id, const absl::Status& status,
                      const JobResult& result, Notifications& n) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  LiveJob& job = *it->second;
  v1::JobState state = status.ok() ? v1::SUCCEEDED : v1::FAILED;
  job.state = state;
  cache::JobUpdate update;
  update.state = status.ok() ? cache::JobState::kSucceeded : cache::JobState::kFailed;
  if (status.ok()) {
    update.result = result.persisted;
  } else {
    update.error = status;
  }
  Persist(job, update);
  if (options_.metrics) {
    options_.metrics->JobFinished(job.spec.kind, update.state,
                                  status.ok() ? result.work_seconds : 0);
  }
  if (status.ok()) {
    LogInfo("job.succeeded",
            {{"job", job.id}, {"worker", job.worker}, {"work_ms", result.work_seconds * 1000}});
  } else {
    LogWarning("job.failed", {{"job", job.id}, {"status", status}});
  }
  NotifyWaiters(job, status, status.ok() ? result : JobResult{}, n);
  Emit(job, state, status.ok() ? "succeeded" : std::string(status.message()), n, /*last=*/true,
       status, status.ok() ? &result.event : nullptr);
  Erase(job);
}

void JobQueue::ExpireDeadlines(absl::Time now, Notifications& n) {
  std::vector<std::string> expired;
  for (const auto& [id, job] : jobs_) {
    if (job->deadline <= now) expired.push_back(id);
  }
  for (const std::string& id : expired) {
    std::string where = jobs_.at(id)->state == v1::RUNNING ? "running" : "queued";
    Finish(
        id,
        absl::DeadlineExceededError(absl::StrCat("job ", id, " passed its deadline while ", where)),
        {}, n);
  }
}

void JobQueue::CountByKind(std::map<cache::JobKind, int>& queued,
                           std::map<cache::JobKind, int>& running) const {
  for (const auto& [id, job] : jobs_) {
    ++(job->state == v1::QUEUED ? queued : running)[job->spec.kind];
  }
}

void JobQueue::PersistAllForRestart(Notifications& n) {
  for (auto& [id, job] : jobs_) {
    cache::JobUpdate update;
    update.state = cache::JobState::kQueued;
    update.worker = "";
    Persist(*job, update);
    absl::Status status = absl::UnavailableError(absl::StrCat(
        "kilnd is shutting down; job ", id, " is saved as queued and resumes on restart"));
    NotifyWaiters(*job, status, {}, n);
    Emit(*job, v1::QUEUED, std::string(status.message()), n, /*last=*/true);
    LogInfo("job.persisted", {{"job", id}});
    if (options_.on_end) options_.on_end(*job);
  }
  jobs_.clear();
  by_key_.clear();
  queue_.clear();
}

void JobQueue::FinishCancelled(LiveJob& job, const std::string& why, Notifications& n) {
  job.state = v1::CANCELLED;
  absl::Status status = absl::CancelledError(absl::StrCat("job ", job.id, " cancelled: ", why));
  cache::JobUpdate update;
  update.state = cache::JobState::kCancelled;
  update.error = status;
  Persist(job, update);
  if (options_.metrics)
    options_.metrics->JobFinished(job.spec.kind, cache::JobState::kCancelled, 0);
  LogInfo("job.cancelled", {{"job", job.id}, {"reason", why}});
  NotifyWaiters(job, status, {}, n);
  Emit(job, v1::CANCELLED, why, n, /*last=*/true, status);
  Erase(job);
}

void JobQueue::NotifyWaiters(LiveJob& job, const absl::Status& status, const JobResult& result,
                             Notifications& n) {
  for (auto& [id, fn] : job.waiters) {
    n.calls.push_back([fn = std::move(fn), status, result] { fn(JobOutcome{status, result}); });
  }
  job.waiters.clear();
}

void JobQueue::Emit(LiveJob& job, v1::JobState state, const std::string& message, Notifications& n,
                    bool last, const absl::Status& error, const v1::JobEvent* fields) {
  if (job.watchers.empty()) return;
  v1::JobEvent event;
  if (fields) event = *fields;
  event.set_job_id(job.id);
  event.set_state(state);
  event.set_message(message);
  event.set_time_ms(NowMs());
  if (!error.ok()) {
    event.set_error_code(static_cast<int32_t>(error.code()));
    event.set_error_message(std::string(error.message()));
  }
  for (const auto& [id, fn] : job.watchers) {
    n.calls.push_back([fn, event, last] { fn(event, last); });
  }
  if (last) job.watchers.clear();
}

void JobQueue::Persist(const LiveJob& job, const cache::JobUpdate& update) {
  absl::StatusOr<cache::JobRecord> updated = options_.storage->UpdateJob(job.id, update);
  if (!updated.ok()) {
    LogError("job.persist_failed", {{"job", job.id}, {"status", updated.status()}});
  }
}

void JobQueue::Erase(LiveJob& job) {
  if (options_.on_end) options_.on_end(job);
  queue_.erase({job.klass, job.seq, job.id});
  auto key = by_key_.find(DedupKey(job.spec));
  if (key != by_key_.end() && key->second == job.id) by_key_.erase(key);
  jobs_.erase(job.id);  // `job` is gone after this
}

}  // namespace kiln::server
