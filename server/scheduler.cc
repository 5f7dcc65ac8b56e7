// Job scheduling: queue, single-flight, dispatch, retry, deadlines, persistence.
#include "server/scheduler.h"

#include <chrono>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "server/artifact_key.h"
#include "server/job_state.h"
#include "server/log.h"

namespace kiln::server {

struct Scheduler::Job {
  std::string id;
  CompileSpec spec;
  std::string key_string;
  absl::Time deadline = absl::InfiniteFuture();
  bool detached = false;
  uint64_t seq = 0;
  int klass = 0;  // 0: INTERACTIVE, 1: BATCH
  v1::JobState state = v1::QUEUED;
  int attempts = 0;       // dispatches so far (persisted)
  int worker_losses = 0;  // dispatches lost to a dying worker (this process)
  std::string worker;     // current or last worker
  std::string task_id;    // current task, while RUNNING
  absl::Time started = absl::InfinitePast();
  std::set<std::string> excluded_workers;
  std::map<uint64_t, JobCallback> waiters;
  std::map<uint64_t, JobEventCallback> watchers;
};

struct Scheduler::WorkerState {
  v1::Worker info;
  std::shared_ptr<WorkerChannel> channel;
  std::set<std::string> tasks;
  absl::Time last_seen;
  /// After a refusal (RESOURCE_EXHAUSTED: all its slots busy), no task before this time.
  absl::Time cooldown_until = absl::InfinitePast();
};

namespace {

int PriorityClass(v1::Priority p) { return p == v1::BATCH ? 1 : 0; }
int32_t StoredPriority(int klass) { return klass == 0 ? 2 : 1; }  // higher runs first
int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

/// The request a job record persists: enough to prepare the job again after a restart.
std::string SerializeRequest(const CompileSpec& spec) {
  v1::CompileRequest request;
  request.mutable_model_digest()->set_hash(spec.model_digest);
  request.mutable_model_digest()->set_size_bytes(spec.model_size_bytes);
  request.set_target(spec.target);
  *request.mutable_options() = spec.options;
  request.set_priority(spec.priority);
  return request.SerializeAsString();
}

}  // namespace

void Scheduler::Notifications::Run() {
  for (auto& call : calls) call();
  calls.clear();
}

Scheduler::Scheduler(SchedulerOptions options) : options_(std::move(options)) {
  tick_thread_ = std::thread([this] { TickLoop(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  tick_thread_.join();
}

std::string Scheduler::NewJobId() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  return absl::StrFormat("j%011x%06x", NowMs(), rng() & 0xffffff);
}

absl::StatusOr<Scheduler::Ticket> Scheduler::Submit(const CompileSpec& spec, absl::Time deadline,
                                                    bool detached, JobCallback on_done) {
  Notifications n;
  Ticket ticket;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (draining_) return absl::UnavailableError("kilnd is shutting down; not accepting jobs");
    std::string key = KeyString(spec.key);
    auto it = by_key_.find(key);
    Job* job = nullptr;
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
      auto owned = std::make_unique<Job>();
      job = owned.get();
      job->id = NewJobId();
      job->spec = spec;
      job->key_string = key;
      job->deadline = deadline;
      job->detached = detached;
      job->seq = next_seq_++;
      job->klass = PriorityClass(spec.priority);
      cache::JobRecord record;
      record.id = job->id;
      record.kind = cache::JobKind::kCompile;
      record.state = cache::JobState::kQueued;
      record.priority = StoredPriority(job->klass);
      record.model_digest = spec.model_digest;
      record.request = SerializeRequest(spec);
      absl::StatusOr<cache::JobRecord> created = options_.storage->CreateJob(record);
      if (!created.ok()) {
        return absl::UnavailableError(
            absl::StrCat("cannot persist the job: ", created.status().ToString()));
      }
      jobs_[job->id] = std::move(owned);
      by_key_[key] = job->id;
      queue_.insert({job->klass, job->seq, job->id});
      LogInfo("job.queued", {{"job", job->id},
                             {"model", spec.model_digest.substr(0, 12)},
                             {"target", spec.target},
                             {"priority", v1::Priority_Name(spec.priority)},
                             {"graph_hash", spec.key.graph_hash.substr(0, 12)}});
      Emit(*job, v1::QUEUED, "queued", n);
    }
    ticket.job_id = job->id;
    if (on_done) {
      ticket.waiter = next_waiter_++;
      job->waiters[ticket.waiter] = std::move(on_done);
    }
    Dispatch(n);
  }
  ReportState();
  n.Run();
  return ticket;
}

void Scheduler::Abandon(const Ticket& ticket) {
  Notifications n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(ticket.job_id);
    if (it == jobs_.end()) return;
    Job& job = *it->second;
    job.waiters.erase(ticket.waiter);
    if (job.waiters.empty() && !job.detached) {
      FinishCancelled(job, "every client waiting for it went away", n);
      Dispatch(n);
    }
  }
  ReportState();
  n.Run();
}

absl::StatusOr<std::string> Scheduler::RecordCacheHit(const CompileSpec& spec,
                                                      const v1::CompileResponse& response) {
  cache::JobRecord record;
  record.id = NewJobId();
  record.kind = cache::JobKind::kCompile;
  record.state = cache::JobState::kQueued;
  record.priority = StoredPriority(PriorityClass(spec.priority));
  record.model_digest = spec.model_digest;
  record.request = SerializeRequest(spec);
  absl::StatusOr<cache::JobRecord> created = options_.storage->CreateJob(record);
  if (!created.ok()) return created.status();
  v1::CompileResponse result = response;
  result.set_job_id(record.id);
  cache::JobUpdate update;
  update.state = cache::JobState::kSucceeded;
  update.result = result.SerializeAsString();
  absl::StatusOr<cache::JobRecord> updated = options_.storage->UpdateJob(record.id, update);
  if (!updated.ok()) return updated.status();
  return record.id;
}

absl::StatusOr<v1::JobState> Scheduler::Cancel(const std::string& job_id) {
  Notifications n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(job_id);
    if (it != jobs_.end()) {
      FinishCancelled(*it->second, "cancelled by CancelJob", n);
      Dispatch(n);
    } else {
      absl::StatusOr<cache::JobRecord> record = options_.storage->GetJob(job_id);
      if (!record.ok()) {
        if (absl::IsNotFound(record.status())) {
          return absl::NotFoundError(absl::StrCat("no job '", job_id, "'"));
        }
        return record.status();
      }
      switch (record->state) {
        case cache::JobState::kSucceeded:
          return v1::SUCCEEDED;
        case cache::JobState::kFailed:
          return v1::FAILED;
        case cache::JobState::kCancelled:
          return v1::CANCELLED;
        default: {
          // Live in storage but not here (only while shutting down): cancel the record.
          cache::JobUpdate update;
          update.state = cache::JobState::kCancelled;
          (void)options_.storage->UpdateJob(job_id, update);
          return v1::CANCELLED;
        }
      }
    }
  }
  ReportState();
  n.Run();
  return v1::CANCELLED;
}

absl::StatusOr<v1::JobEvent> Scheduler::Watch(const std::string& job_id, JobEventCallback fn,
                                              uint64_t* watch_id, bool* last) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(job_id);
    if (it != jobs_.end()) {
      Job& job = *it->second;
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
  }
  absl::StatusOr<cache::JobRecord> record = options_.storage->GetJob(job_id);
  if (!record.ok()) {
    if (absl::IsNotFound(record.status())) {
      return absl::NotFoundError(absl::StrCat("no job '", job_id, "'"));
    }
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
      event.mutable_result()->ParseFromString(record->result);
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

void Scheduler::Unwatch(const std::string& job_id, uint64_t watch_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job_id);
  if (it != jobs_.end()) it->second->watchers.erase(watch_id);
}

absl::Status Scheduler::Restore(const cache::JobRecord& record, const CompileSpec& spec) {
  Notifications n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::string key = KeyString(spec.key);
    auto dup = by_key_.find(key);
    if (dup != by_key_.end()) {
      // Two persisted jobs for one key: the second is redundant.
      cache::JobUpdate update;
      update.state = cache::JobState::kCancelled;
      update.error = absl::CancelledError(absl::StrCat("duplicate of job ", dup->second));
      (void)options_.storage->UpdateJob(record.id, update);
      return absl::OkStatus();
    }
    auto job = std::make_unique<Job>();
    job->id = record.id;
    job->spec = spec;
    job->key_string = key;
    job->detached = true;
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
    Dispatch(n);
  }
  ReportState();
  n.Run();
  return absl::OkStatus();
}

// ---- Workers ----------------------------------------------------------------------------------

std::string Scheduler::AddWorker(v1::Worker info, std::shared_ptr<WorkerChannel> channel) {
  Notifications n;
  std::string id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = absl::StrCat("w", next_worker_++);
    info.set_id(id);
    if (info.slots() < 1) info.set_slots(1);
    auto worker = std::make_unique<WorkerState>();
    worker->info = std::move(info);
    worker->channel = std::move(channel);
    worker->last_seen = absl::Now();
    LogInfo("worker.registered", {{"worker", id},
                                  {"pid", worker->info.pid()},
                                  {"cpu", worker->info.cpu()},
                                  {"slots", worker->info.slots()},
                                  {"local", worker->info.local()},
                                  {"address", worker->info.address()}});
    workers_[id] = std::move(worker);
    Dispatch(n);
  }
  ReportState();
  n.Run();
  return id;
}

void Scheduler::RemoveWorker(const std::string& worker_id, const absl::Status& why) {
  Notifications n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = workers_.find(worker_id);
    if (it == workers_.end()) return;
    std::unique_ptr<WorkerState> worker = std::move(it->second);
    workers_.erase(it);
    LogWarning("worker.lost", {{"worker", worker_id},
                               {"pid", worker->info.pid()},
                               {"tasks", static_cast<int>(worker->tasks.size())},
                               {"reason", why}});
    for (const std::string& task_id : worker->tasks) {
      auto task = tasks_.find(task_id);
      if (task == tasks_.end()) continue;
      std::string job_id = task->second.first;
      tasks_.erase(task);
      auto job = jobs_.find(job_id);
      if (job == jobs_.end() || job->second->task_id != task_id) continue;
      LoseTask(*job->second, worker_id, why, n);
    }
    Dispatch(n);
    cv_.notify_all();
  }
  ReportState();
  n.Run();
}

void Scheduler::Heartbeat(const std::string& worker_id, int32_t busy) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workers_.find(worker_id);
  if (it == workers_.end()) return;
  it->second->last_seen = absl::Now();
  it->second->info.set_busy(busy);
  it->second->info.set_last_heartbeat_ms(NowMs());
}

void Scheduler::TaskDone(const std::string& worker_id, const v1::TaskResult& result) {
  Notifications n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto worker = workers_.find(worker_id);
    if (worker != workers_.end()) {
      worker->second->tasks.erase(result.task_id());
      worker->second->last_seen = absl::Now();
    }
    auto task = tasks_.find(result.task_id());
    if (task == tasks_.end()) {
      LogWarning("task.unknown_result", {{"worker", worker_id}, {"task", result.task_id()}});
      Dispatch(n);
    } else {
      const auto [job_id, key] = task->second;
      tasks_.erase(task);
      absl::Status status = absl::OkStatus();
      if (result.error_code() != 0) {
        status = absl::Status(static_cast<absl::StatusCode>(result.error_code()),
                              result.error_message());
      } else if (result.has_key() && (result.key().graph_hash() != key.graph_hash ||
                                      result.key().target_key() != key.target_key)) {
        status = absl::InternalError(
            absl::StrCat("worker ", worker_id, " compiled for key (", result.key().graph_hash(),
                         ", ", result.key().target_key(), ") but kilnd expected (", key.graph_hash,
                         ", ", key.target_key, ")"));
      }
      v1::CompileResponse response;
      if (status.ok()) {
        absl::StatusOr<cache::ArtifactEntry> entry = options_.storage->LinkArtifact(
            key, result.artifact_digest().hash(), static_cast<int64_t>(result.compile_ms()));
        if (!entry.ok()) {
          status = absl::InternalError(absl::StrCat(
              "worker ", worker_id, " reported artifact ", result.artifact_digest().hash(),
              " but it cannot be filed: ", entry.status().ToString()));
        } else {
          response.mutable_artifact_digest()->set_hash(entry->artifact_digest);
          response.mutable_artifact_digest()->set_size_bytes(entry->size_bytes);
          *response.mutable_key() = KeyToProto(key);
          response.set_compile_ms(result.compile_ms());
          response.set_worker(worker_id);
        }
      }
      auto job = jobs_.find(job_id);
      if (job == jobs_.end() || job->second->task_id != result.task_id()) {
        // Stale (cancelled, timed out or retried): a good artifact is still filed above.
        LogInfo("task.stale_result", {{"task", result.task_id()}, {"status", status}});
      } else if (absl::IsUnavailable(status)) {
        LoseTask(*job->second, worker_id, status, n);
      } else if (absl::IsResourceExhausted(status)) {
        // The worker refused the task without trying it (it still counts a finishing task as
        // busy): requeue it in its place and give that worker a moment.
        if (worker != workers_.end()) {
          worker->second->cooldown_until = absl::Now() + absl::Milliseconds(100);
        }
        job->second->task_id.clear();
        Requeue(*job->second, absl::StrCat("worker ", worker_id, " refused: ", status.message()),
                n);
      } else {
        job->second->task_id.clear();
        response.set_job_id(job_id);
        Finish(*job->second, status, response, n);
      }
      Dispatch(n);
    }
    cv_.notify_all();
  }
  ReportState();
  n.Run();
}

std::vector<v1::Worker> Scheduler::ListWorkers() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<v1::Worker> out;
  for (const auto& [id, worker] : workers_) {
    v1::Worker w = worker->info;
    w.set_busy(static_cast<int32_t>(worker->tasks.size()));
    out.push_back(std::move(w));
  }
  return out;
}

Scheduler::Counts Scheduler::GetCounts() {
  std::lock_guard<std::mutex> lock(mu_);
  Counts c;
  c.queued = static_cast<int>(queue_.size());
  c.running = static_cast<int>(jobs_.size() - queue_.size());
  c.workers = static_cast<int>(workers_.size());
  return c;
}

void Scheduler::Drain(absl::Duration grace) {
  Notifications n;
  {
    std::unique_lock<std::mutex> lock(mu_);
    draining_ = true;
    auto running = [this] { return jobs_.size() - queue_.size(); };
    LogInfo("scheduler.draining", {{"running", static_cast<int>(running())},
                                   {"queued", static_cast<int>(queue_.size())},
                                   {"grace_ms", absl::ToInt64Milliseconds(grace)}});
    cv_.wait_for(lock, absl::ToChronoMilliseconds(grace), [&] { return running() == 0; });
    for (auto& [id, job] : jobs_) {
      if (job->state == v1::RUNNING) {
        auto worker = workers_.find(job->worker);
        if (worker != workers_.end()) worker->second->channel->SendCancel(job->task_id);
        tasks_.erase(job->task_id);
        job->task_id.clear();
      }
      cache::JobUpdate update;
      update.state = cache::JobState::kQueued;
      update.worker = "";
      Persist(*job, update);
      absl::Status status = absl::UnavailableError(absl::StrCat(
          "kilnd is shutting down; job ", id, " is saved as queued and resumes on restart"));
      for (auto& [wid, fn] : job->waiters) {
        n.calls.push_back([fn = std::move(fn), status] { fn(JobOutcome{status, {}}); });
      }
      job->waiters.clear();
      Emit(*job, v1::QUEUED, std::string(status.message()), n, /*last=*/true);
      LogInfo("job.persisted", {{"job", id}});
    }
    jobs_.clear();
    by_key_.clear();
    queue_.clear();
  }
  ReportState();
  n.Run();
}

// ---- Internals (mu_ held) ---------------------------------------------------------------------

void Scheduler::TickLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, absl::ToChronoMilliseconds(options_.tick_interval));
    if (stopping_) break;
    lock.unlock();
    Tick();
    lock.lock();
  }
}

void Scheduler::Tick() {
  Notifications n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    absl::Time now = absl::Now();
    // Workers that went silent: drop them (their tasks are retried).
    std::vector<std::string> silent;
    for (const auto& [id, worker] : workers_) {
      if (now - worker->last_seen > options_.heartbeat_timeout) silent.push_back(id);
    }
    for (const std::string& id : silent) {
      absl::Status why = absl::UnavailableError(
          absl::StrCat("no heartbeat for ", absl::FormatDuration(options_.heartbeat_timeout)));
      workers_.at(id)->channel->Close(why);
      // RemoveWorker takes the lock itself; defer it.
      n.calls.push_back([this, id, why] { RemoveWorker(id, why); });
    }
    // Deadlines.
    std::vector<Job*> expired;
    for (auto& [id, job] : jobs_) {
      if (job->deadline <= now) expired.push_back(job.get());
    }
    for (Job* job : expired) {
      if (job->state == v1::RUNNING) {
        auto worker = workers_.find(job->worker);
        if (worker != workers_.end()) worker->second->channel->SendCancel(job->task_id);
      }
      std::string where = job->state == v1::RUNNING ? "running" : "queued";
      job->task_id.clear();
      Finish(*job,
             absl::DeadlineExceededError(
                 absl::StrCat("job ", job->id, " passed its deadline while ", where)),
             {}, n);
    }
    if (!draining_) Dispatch(n);
  }
  ReportState();
  n.Run();
}

bool Scheduler::Eligible(const Job& job, const WorkerState& worker) const {
  if (static_cast<int>(worker.tasks.size()) >= worker.info.slots()) return false;
  if (worker.cooldown_until > absl::Now()) return false;
  if (worker.info.kind() != "" && worker.info.kind() != "compile") return false;
  if (job.excluded_workers.count(worker.info.id())) return false;
  if (job.spec.target == "host" && !options_.host_cpu.empty() && !worker.info.cpu().empty() &&
      worker.info.cpu() != options_.host_cpu) {
    return false;
  }
  return true;
}

void Scheduler::Dispatch(Notifications& n) {
  if (draining_ || workers_.empty()) return;
  for (auto it = queue_.begin(); it != queue_.end();) {
    Job& job = *jobs_.at(std::get<2>(*it));
    WorkerState* chosen = nullptr;
    for (auto& [id, worker] : workers_) {
      if (!Eligible(job, *worker)) continue;
      // Least loaded first, so work spreads over workers.
      if (chosen == nullptr || worker->tasks.size() < chosen->tasks.size()) chosen = worker.get();
    }
    if (chosen == nullptr) {
      ++it;
      continue;
    }
    it = queue_.erase(it);
    ++job.attempts;
    job.state = v1::RUNNING;
    job.worker = chosen->info.id();
    job.task_id = absl::StrCat(job.id, ".", job.attempts);
    job.started = absl::Now();
    chosen->tasks.insert(job.task_id);
    tasks_[job.task_id] = {job.id, job.spec.key};
    cache::JobUpdate update;
    update.state = cache::JobState::kRunning;
    update.attempts = job.attempts;
    update.worker = job.worker;
    Persist(job, update);

    v1::CompileTask task;
    task.set_task_id(job.task_id);
    task.set_job_id(job.id);
    task.mutable_model_digest()->set_hash(job.spec.model_digest);
    task.mutable_model_digest()->set_size_bytes(job.spec.model_size_bytes);
    task.set_target(job.spec.target);
    *task.mutable_options() = job.spec.options;
    if (job.deadline != absl::InfiniteFuture()) {
      task.set_deadline_unix_ms(absl::ToUnixMillis(job.deadline));
    }
    *task.mutable_key() = KeyToProto(job.spec.key);
    chosen->channel->SendTask(task);
    LogInfo("job.dispatched", {{"job", job.id},
                               {"task", job.task_id},
                               {"worker", job.worker},
                               {"attempt", job.attempts}});
    Emit(job, v1::RUNNING, absl::StrCat("running on ", job.worker, " (attempt ", job.attempts, ")"),
         n);
  }
}

void Scheduler::LoseTask(Job& job, const std::string& worker_id, const absl::Status& why,
                         Notifications& n) {
  job.task_id.clear();
  job.excluded_workers.insert(worker_id);
  ++job.worker_losses;
  if (draining_) return;  // Drain persists it as queued
  if (job.worker_losses < options_.max_attempts) {
    Requeue(job,
            absl::StrCat("worker ", worker_id, " was lost (", why.message(),
                         "); retrying on another worker"),
            n);
    return;
  }
  Finish(job,
         absl::InternalError(
             absl::StrCat("job ", job.id, " failed: its worker died or disconnected on each of ",
                          job.worker_losses, " attempts (last: worker ", worker_id, ": ",
                          why.message(), "); the model may crash the compiler")),
         {}, n);
}

void Scheduler::Requeue(Job& job, const std::string& message, Notifications& n) {
  job.state = v1::QUEUED;
  queue_.insert({job.klass, job.seq, job.id});  // keeps its place: it was first in line
  cache::JobUpdate update;
  update.state = cache::JobState::kQueued;
  update.worker = "";
  Persist(job, update);
  LogWarning("job.retry", {{"job", job.id}, {"reason", message}});
  Emit(job, v1::QUEUED, message, n);
}

void Scheduler::Finish(Job& job, const absl::Status& status, const v1::CompileResponse& response,
                       Notifications& n) {
  v1::JobState state = status.ok() ? v1::SUCCEEDED : v1::FAILED;
  job.state = state;
  cache::JobUpdate update;
  update.state = FromProtoState(state).value_or(cache::JobState::kQueued);
  if (status.ok()) {
    update.result = response.SerializeAsString();
  } else {
    update.error = status;
  }
  Persist(job, update);
  double compile_s = response.compile_ms() / 1000.0;
  if (options_.metrics) options_.metrics->JobFinished(update.state, compile_s);
  if (status.ok()) {
    LogInfo("job.succeeded", {{"job", job.id},
                              {"worker", job.worker},
                              {"artifact", response.artifact_digest().hash().substr(0, 12)},
                              {"compile_ms", response.compile_ms()}});
  } else {
    LogWarning("job.failed", {{"job", job.id}, {"status", status}});
  }
  for (auto& [id, fn] : job.waiters) {
    n.calls.push_back([fn = std::move(fn), status, response] { fn(JobOutcome{status, response}); });
  }
  job.waiters.clear();
  Emit(job, state, status.ok() ? "succeeded" : std::string(status.message()), n, /*last=*/true,
       status, status.ok() ? &response : nullptr);
  EraseLive(job.id);  // `job` is gone after this
}

void Scheduler::FinishCancelled(Job& job, const std::string& why, Notifications& n) {
  if (job.state == v1::RUNNING) {
    auto worker = workers_.find(job.worker);
    if (worker != workers_.end()) worker->second->channel->SendCancel(job.task_id);
    // The task keeps its slot until the worker reports it.
    job.task_id.clear();
  }
  job.state = v1::CANCELLED;
  absl::Status status = absl::CancelledError(absl::StrCat("job ", job.id, " cancelled: ", why));
  cache::JobUpdate update;
  update.state = cache::JobState::kCancelled;
  update.error = status;
  Persist(job, update);
  if (options_.metrics) options_.metrics->JobFinished(cache::JobState::kCancelled, 0);
  LogInfo("job.cancelled", {{"job", job.id}, {"reason", why}});
  for (auto& [id, fn] : job.waiters) {
    n.calls.push_back([fn = std::move(fn), status] { fn(JobOutcome{status, {}}); });
  }
  job.waiters.clear();
  Emit(job, v1::CANCELLED, why, n, /*last=*/true, status);
  EraseLive(job.id);
}

void Scheduler::Emit(Job& job, v1::JobState state, const std::string& message, Notifications& n,
                     bool last, const absl::Status& error, const v1::CompileResponse* result) {
  if (job.watchers.empty()) return;
  v1::JobEvent event;
  event.set_job_id(job.id);
  event.set_state(state);
  event.set_message(message);
  event.set_time_ms(NowMs());
  if (result) *event.mutable_result() = *result;
  if (!error.ok()) {
    event.set_error_code(static_cast<int32_t>(error.code()));
    event.set_error_message(std::string(error.message()));
  }
  for (const auto& [id, fn] : job.watchers) {
    n.calls.push_back([fn, event, last] { fn(event, last); });
  }
  if (last) job.watchers.clear();
}

void Scheduler::Persist(const Job& job, cache::JobUpdate update) {
  absl::StatusOr<cache::JobRecord> updated = options_.storage->UpdateJob(job.id, update);
  if (!updated.ok()) {
    LogError("job.persist_failed", {{"job", job.id}, {"status", updated.status()}});
  }
}

void Scheduler::EraseLive(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  Job& job = *it->second;
  queue_.erase({job.klass, job.seq, job.id});
  auto key = by_key_.find(job.key_string);
  if (key != by_key_.end() && key->second == job_id) by_key_.erase(key);
  jobs_.erase(it);
}

void Scheduler::ReportState() {
  if (options_.metrics == nullptr) return;
  Counts c = GetCounts();
  options_.metrics->SchedulerState(c.queued, c.running, c.workers);
}

}  // namespace kiln::server
