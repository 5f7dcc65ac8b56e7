// Dispatch of queued jobs to workers, task results, lost workers, deadlines and shutdown.
#include "server/scheduler.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "server/log.h"
#include "wire/status.h"
#include "workers/protocol.h"

namespace kiln::server {

Scheduler::Scheduler(SchedulerOptions options)
    : options_(std::move(options)),
      queue_(JobQueueOptions{options_.storage, options_.metrics,
                             [this](const LiveJob& job) { OnJobEnd(job); },
                             [this](const cache::JobRecord& record, v1::JobEvent& event) {
                               if (JobHandler* handler = HandlerFor(record.kind)) {
                                 handler->DescribeResult(record.result, event);
                               }
                             },
                             options_.max_queued_jobs, options_.max_jobs_per_token}),
      workers_(options_.max_attempts) {
  for (JobHandler* handler : options_.handlers) handlers_[handler->kind()] = handler;
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

JobHandler* Scheduler::HandlerFor(cache::JobKind kind) const {
  auto it = handlers_.find(kind);
  return it == handlers_.end() ? nullptr : it->second;
}

absl::StatusOr<Ticket> Scheduler::Submit(const JobSpec& spec, absl::Time deadline, bool detached,
                                         JobCallback on_done) {
  if (HandlerFor(spec.kind) == nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        "kilnd has no handler for ", std::string(cache::JobKindName(spec.kind)), " jobs"));
  }
  Notifications n;
  absl::StatusOr<Ticket> ticket;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (draining_) return absl::UnavailableError("kilnd is shutting down; not accepting jobs");
    ticket = queue_.Submit(spec, deadline, detached, std::move(on_done), n);
    if (!ticket.ok()) return ticket.status();
    Dispatch(n);
  }
  n.Run();
  return ticket;
}

void Scheduler::Abandon(const Ticket& ticket) {
  Notifications n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.Abandon(ticket, n);
    Dispatch(n);
  }
  n.Run();
}

absl::StatusOr<std::string> Scheduler::RecordCacheHit(
    const JobSpec& spec, const std::function<JobResult(const std::string& job_id)>& make_result) {
  return queue_.RecordFinished(spec, make_result);  // storage only: no lock
}

absl::StatusOr<v1::JobState> Scheduler::Cancel(const std::string& job_id) {
  Notifications n;
  absl::StatusOr<v1::JobState> state;
  {
    std::lock_guard<std::mutex> lock(mu_);
    state = queue_.Cancel(job_id, n);
    Dispatch(n);
  }
  n.Run();
  return state;
}

absl::StatusOr<v1::JobEvent> Scheduler::Watch(const std::string& job_id, JobEventCallback fn,
                                              uint64_t* watch_id, bool* last) {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.Watch(job_id, std::move(fn), watch_id, last);
}

void Scheduler::Unwatch(const std::string& job_id, uint64_t watch_id) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.Unwatch(job_id, watch_id);
}

void Scheduler::Progress(const std::string& job_id, const std::string& message,
                         const v1::JobEvent* fields) {
  Notifications n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.Progress(job_id, message, n, fields);
  }
  n.Run();
}

void Scheduler::FinishInProcess(const std::string& job_id, const std::string& run_id,
                                const absl::Status& status, const JobResult& result) {
  Notifications n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.FindByTask(job_id, run_id) == nullptr) {
      LogInfo("job.stale_run", {{"job", job_id}, {"run", run_id}, {"status", status}});
    } else if (draining_) {
      // Its steps were refused because kilnd is shutting down: Drain persists it as queued,
      // and a restart runs it again.
      LogInfo("job.run_interrupted", {{"job", job_id}, {"run", run_id}, {"status", status}});
    } else {
      in_process_.erase(job_id);
      queue_.ClearTask(job_id);
      queue_.Finish(job_id, status, result, n);
    }
    Dispatch(n);
    cv_.notify_all();
  }
  n.Run();
}

bool Scheduler::HasWorker(const std::function<bool(const v1::WorkerCapabilities&)>& fits) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const v1::Worker& w : workers_.List()) {
    if (fits(w.capabilities())) return true;
  }
  return false;
}

absl::Status Scheduler::Restore(const cache::JobRecord& record, const JobSpec& spec) {
  Notifications n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    absl::Status restored = queue_.Restore(record, spec);
    if (!restored.ok()) return restored;
    Dispatch(n);
  }
  n.Run();
  return absl::OkStatus();
}

// ---- Workers ----------------------------------------------------------------------------------

std::string Scheduler::AddWorker(v1::Worker info, std::shared_ptr<WorkerChannel> channel) {
  Notifications n;
  std::string id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::string capabilities = workers::CapabilitiesText(info.capabilities());
    id = workers_.Add(std::move(info), std::move(channel), absl::Now());
    const v1::Worker& added = *workers_.Find(id);
    LogInfo("worker.registered", {{"worker", id},
                                  {"pid", added.pid()},
                                  {"capabilities", capabilities},
                                  {"slots", added.slots()},
                                  {"local", added.local()},
                                  {"address", added.address()}});
    Dispatch(n);
  }
  n.Run();
  return id;
}

void Scheduler::RemoveWorker(const std::string& worker_id, const absl::Status& why) {
  Notifications n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const v1::Worker* worker = workers_.Find(worker_id);
    if (worker == nullptr) return;
    int pid = worker->pid();
    std::vector<LostTask> lost = workers_.Remove(worker_id);
    LogWarning("worker.lost", {{"worker", worker_id},
                               {"pid", pid},
                               {"tasks", static_cast<int>(lost.size())},
                               {"reason", why}});
    for (const LostTask& task : lost) LoseTask(task, why, n);
    Dispatch(n);
    cv_.notify_all();
  }
  n.Run();
}

void Scheduler::Heartbeat(const std::string& worker_id, int32_t busy) {
  std::lock_guard<std::mutex> lock(mu_);
  workers_.Touch(worker_id, absl::Now(), busy);
}

void Scheduler::TaskDone(const std::string& worker_id, const v1::TaskResult& result) {
  Notifications n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    workers_.Touch(worker_id, absl::Now());
    std::optional<TaskEntry> task = workers_.EndTask(worker_id, result.task_id());
    if (!task.has_value()) {
      // Not a task of this worker's (or no longer one): never filed.
      LogWarning("task.unknown_result", {{"worker", worker_id}, {"task", result.task_id()}});
    } else if (queue_.FindByTask(task->job_id, task->task_id) == nullptr) {
      // Stale: cancelled, timed out or retried meanwhile. Its result is not filed either: only a
      // live task's result is accepted.
      LogInfo("task.stale_result", {{"task", result.task_id()}, {"worker", worker_id}});
    } else {
      absl::Status status = wire::StatusFromCode(result.error_code(), result.error_message());
      JobResult job_result;
      if (status.ok()) {
        absl::StatusOr<JobResult> done =
            HandlerFor(task->spec.kind)->TaskSucceeded(task->spec, task->job_id, worker_id, result);
        if (done.ok()) {
          job_result = *std::move(done);
        } else {
          status = done.status();
        }
      }
      if (absl::IsUnavailable(status)) {
        LoseTask(workers_.RecordLoss(*std::move(task)), status, n);
      } else if (absl::IsResourceExhausted(status) && result.refused()) {
        // The worker refused the task without trying it (it still counts a finishing task as
        // busy): requeue it in its place and give that worker a moment.
        workers_.CoolDown(worker_id, absl::Now() + absl::Milliseconds(100));
        queue_.Requeue(task->job_id,
                       absl::StrCat("worker ", worker_id, " refused: ", status.message()), n);
      } else {
        queue_.ClearTask(task->job_id);
        queue_.Finish(task->job_id, status, job_result, n);
      }
    }
    Dispatch(n);
    cv_.notify_all();
  }
  n.Run();
}

std::vector<v1::Worker> Scheduler::ListWorkers() {
  std::lock_guard<std::mutex> lock(mu_);
  return workers_.List();
}

Scheduler::Counts Scheduler::GetCounts() {
  std::lock_guard<std::mutex> lock(mu_);
  Counts c;
  c.queued = queue_.queued();
  c.running = queue_.running();
  c.workers = static_cast<int>(workers_.size());
  for (cache::JobKind kind : cache::kAllJobKinds) {
    c.queued_by_kind[kind] = 0;
    c.running_by_kind[kind] = 0;
  }
  queue_.CountByKind(c.queued_by_kind, c.running_by_kind);
  for (const v1::Worker& worker : workers_.List()) {
    for (const v1::Capability& capability : worker.capabilities().capabilities()) {
      if (capability.has_compile()) {
        ++c.workers_by_kind_device[{"compile",
                                    absl::StrJoin(capability.compile().target_kinds(), ",")}];
      } else if (capability.has_measure()) {
        const v1::MeasureCapability& m = capability.measure();
        std::string device = m.device_kind() == "cpu"
                                 ? m.device_kind()
                                 : absl::StrCat(m.device_kind(), ":", m.device_ordinal());
        ++c.workers_by_kind_device[{"measure", device}];
      }
    }
  }
  return c;
}

void Scheduler::Drain(absl::Duration grace) {
  Notifications n;
  {
    std::unique_lock<std::mutex> lock(mu_);
    draining_ = true;
    LogInfo("scheduler.draining", {{"running", queue_.running()},
                                   {"queued", queue_.queued()},
                                   {"grace_ms", absl::ToInt64Milliseconds(grace)}});
    // In-process jobs (tunes) do not hold up a shutdown: their runs end once their steps are
    // refused, and they are persisted as queued like the rest.
    cv_.wait_for(lock, absl::ToChronoMilliseconds(grace), [&] {
      return queue_.running() == static_cast<int>(in_process_.size());
    });
    queue_.PersistAllForRestart(n);
  }
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
    for (const std::string& id : workers_.Silent(now, options_.heartbeat_timeout)) {
      absl::Status why = absl::UnavailableError(
          absl::StrCat("no heartbeat for ", absl::FormatDuration(options_.heartbeat_timeout)));
      workers_.Channel(id)->Close(why);
      // RemoveWorker takes the lock itself; defer it.
      n.calls.push_back([this, id, why] { RemoveWorker(id, why); });
    }
    queue_.ExpireDeadlines(now, n);
    Dispatch(n);
  }
  n.Run();
}

void Scheduler::Dispatch(Notifications& n) {
  if (draining_) return;
  absl::Time now = absl::Now();
  for (const std::string& job_id : queue_.QueuedInOrder()) {
    const LiveJob& job = *queue_.Find(job_id);
    JobHandler& handler = *HandlerFor(job.spec.kind);  // Submit refuses kinds without one
    if (handler.RunsInProcess()) {
      if (static_cast<int>(in_process_.size()) >= options_.max_in_process) continue;
      in_process_.insert(job_id);
      std::string run_id = queue_.Start(job_id, "kilnd", n);
      n.calls.push_back([&handler, job_id, run_id, spec = job.spec] {
        handler.Start(job_id, run_id, spec);
      });
      continue;
    }
    if (workers_.size() == 0) continue;
    std::optional<std::string> worker =
        workers_.Pick(job_id, now, [&](const v1::WorkerCapabilities& capabilities) {
          return handler.CanRun(job.spec, capabilities);
        });
    if (!worker.has_value()) continue;
    v1::WorkerTask task;
    task.set_task_id(queue_.Start(job_id, *worker, n));
    task.set_job_id(job_id);
    if (job.deadline != absl::InfiniteFuture()) {
      task.set_deadline_unix_ms(absl::ToUnixMillis(job.deadline));
    }
    handler.BuildTask(job.spec, task);
    workers_.StartTask(TaskEntry{task.task_id(), job_id, *worker, job.spec});
    workers_.Channel(*worker)->SendTask(task);
  }
}

void Scheduler::LoseTask(const LostTask& lost, const absl::Status& why, Notifications& n) {
  const std::string& job_id = lost.task.job_id;
  const std::string& worker_id = lost.task.worker_id;
  if (queue_.FindByTask(job_id, lost.task.task_id) == nullptr) return;  // stale
  if (draining_) {
    queue_.ClearTask(job_id);  // Drain persists it as queued
    return;
  }
  if (lost.retry) {
    queue_.Requeue(job_id,
                   absl::StrCat("worker ", worker_id, " was lost (", why.message(),
                                "); retrying on another worker"),
                   n);
    return;
  }
  queue_.ClearTask(job_id);
  queue_.Finish(job_id,
                absl::InternalError(absl::StrCat(
                    "job ", job_id, " failed: its worker died or disconnected on each of ",
                    lost.losses, " attempts (last: worker ", worker_id, ": ", why.message(),
                    "); its input may crash the worker")),
                {}, n);
}

void Scheduler::OnJobEnd(const LiveJob& job) {
  workers_.ForgetJob(job.id);
  if (in_process_.erase(job.id) > 0) {
    // Ended while its run was live (cancelled, expired, draining): stop the run.
    HandlerFor(job.spec.kind)->Stop(job.id);
    return;
  }
  if (job.task_id.empty()) return;
  // Ended while its task ran: stop it. The task keeps its slot until the worker reports it.
  if (WorkerChannel* channel = workers_.Channel(job.worker)) channel->SendCancel(job.task_id);
}

}  // namespace kiln::server
