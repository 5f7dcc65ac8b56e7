// Worker bookkeeping: registration, liveness, slot accounting, placement and lost tasks.
#include "server/worker_registry.h"

#include "absl/strings/str_cat.h"

namespace kiln::server {

std::string WorkerRegistry::Add(v1::Worker info, std::shared_ptr<WorkerChannel> channel,
                                absl::Time now) {
  std::string id = absl::StrCat("w", next_worker_++);
  info.set_id(id);
  if (info.slots() < 1) info.set_slots(1);
  WorkerState& worker = workers_[id];
  worker.info = std::move(info);
  worker.channel = std::move(channel);
  worker.last_seen = now;
  return id;
}

std::vector<LostTask> WorkerRegistry::Remove(const std::string& worker_id) {
  std::vector<LostTask> lost;
  auto it = workers_.find(worker_id);
  if (it == workers_.end()) return lost;
  std::set<std::string> task_ids = std::move(it->second.tasks);
  workers_.erase(it);
  for (const std::string& task_id : task_ids) {
    auto task = tasks_.find(task_id);
    if (task == tasks_.end()) continue;
    TaskEntry entry = std::move(task->second);
    tasks_.erase(task);
    lost.push_back(RecordLoss(std::move(entry)));
  }
  return lost;
}

void WorkerRegistry::Touch(const std::string& worker_id, absl::Time now,
                           std::optional<int32_t> busy) {
  auto it = workers_.find(worker_id);
  if (it == workers_.end()) return;
  it->second.last_seen = now;
  if (busy.has_value()) {
    it->second.info.set_busy(*busy);
    it->second.info.set_last_heartbeat_ms(absl::ToUnixMillis(now));
  }
}

std::vector<std::string> WorkerRegistry::Silent(absl::Time now, absl::Duration timeout) const {
  std::vector<std::string> silent;
  for (const auto& [id, worker] : workers_) {
    if (now - worker.last_seen > timeout) silent.push_back(id);
  }
  return silent;
}

void WorkerRegistry::CoolDown(const std::string& worker_id, absl::Time until) {
  auto it = workers_.find(worker_id);
  if (it != workers_.end()) it->second.cooldown_until = until;
}

const v1::Worker* WorkerRegistry::Find(const std::string& worker_id) const {
  auto it = workers_.find(worker_id);
  return it == workers_.end() ? nullptr : &it->second.info;
}

WorkerChannel* WorkerRegistry::Channel(const std::string& worker_id) const {
  auto it = workers_.find(worker_id);
  return it == workers_.end() ? nullptr : it->second.channel.get();
}

std::optional<std::string> WorkerRegistry::Pick(
    const std::string& job_id, absl::Time now,
    const std::function<bool(const v1::WorkerCapabilities&)>& can_run) const {
  auto history = history_.find(job_id);
  const WorkerState* chosen = nullptr;
  for (const auto& [id, worker] : workers_) {
    if (static_cast<int>(worker.tasks.size()) >= worker.info.slots()) continue;
    if (worker.cooldown_until > now) continue;
    if (history != history_.end() && history->second.lost_on.count(id) != 0) continue;
    if (!can_run(worker.info.capabilities())) continue;
    // Least loaded first, so work spreads over workers.
    if (chosen == nullptr || worker.tasks.size() < chosen->tasks.size()) chosen = &worker;
  }
  if (chosen == nullptr) return std::nullopt;
  return chosen->info.id();
}

void WorkerRegistry::StartTask(TaskEntry task) {
  workers_.at(task.worker_id).tasks.insert(task.task_id);
  history_.try_emplace(task.job_id);
  std::string task_id = task.task_id;
  tasks_[task_id] = std::move(task);
}

std::optional<TaskEntry> WorkerRegistry::EndTask(const std::string& worker_id,
                                                 const std::string& task_id) {
  auto task = tasks_.find(task_id);
  std::optional<TaskEntry> entry;
  // A result counts only from the worker the task was sent to: task ids are not secrets.
  if (task != tasks_.end() && task->second.worker_id == worker_id) {
    entry = std::move(task->second);
    tasks_.erase(task);
  }
  auto worker = workers_.find(worker_id);
  if (worker != workers_.end()) worker->second.tasks.erase(task_id);
  return entry;
}

LostTask WorkerRegistry::RecordLoss(TaskEntry task) {
  LostTask lost;
  auto history = history_.find(task.job_id);
  if (history != history_.end()) {
    history->second.lost_on.insert(task.worker_id);
    lost.losses = ++history->second.losses;
    lost.retry = lost.losses < max_losses_;
  }
  lost.task = std::move(task);
  return lost;
}

std::vector<v1::Worker> WorkerRegistry::List() const {
  std::vector<v1::Worker> out;
  for (const auto& [id, worker] : workers_) {
    v1::Worker w = worker.info;
    w.set_busy(static_cast<int32_t>(worker.tasks.size()));
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace kiln::server
