// Worker processes: fork/exec, reap, restart with backoff, stop. The supervising thread is the
// one that forks, so PR_SET_PDEATHSIG (which fires when the forking *thread* exits) kills the
// workers if kilnd dies without running Stop.
#include "server/supervisor.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/log.h"

namespace kiln::server {

Supervisor::~Supervisor() { Stop(); }

absl::Status Supervisor::Start() {
  if (::access(options_.worker_binary.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "worker binary '", options_.worker_binary, "' is not executable: ", std::strerror(errno)));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) return absl::OkStatus();
  started_ = true;
  slots_.resize(static_cast<size_t>(std::max(0, options_.workers)));
  for (Slot& slot : slots_) {
    slot.backoff = options_.min_backoff;
    slot.restart_at = absl::InfinitePast();  // start at once, on the supervising thread
  }
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

absl::StatusOr<pid_t> Supervisor::Spawn(int slot) {
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<std::string> args = {options_.worker_binary};
  args.insert(args.end(), options_.args.begin(), options_.args.end());
  if (options_.slot_args) {
    std::vector<std::string> extra = options_.slot_args(slot);
    args.insert(args.end(), extra.begin(), extra.end());
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return absl::UnavailableError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);  // kilnd died between fork and prctl
    // kilnd blocks SIGTERM/SIGINT in all threads to sigwait for them; the worker must not
    // inherit that mask.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  LogInfo("worker.started", {{"pid", static_cast<int>(pid)}, {"cmd", absl::StrJoin(args, " ")}});
  return pid;
}

void Supervisor::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    // Reap the dead: only this supervisor's children (kilnd runs one supervisor for compile
    // workers and one for measure workers; waitpid(-1) here would reap the other's).
    for (Slot& slot : slots_) {
      if (slot.pid == 0) continue;
      int status = 0;
      const pid_t pid = ::waitpid(slot.pid, &status, WNOHANG);
      if (pid != slot.pid) continue;
      slot.pid = 0;
      absl::Time now = absl::Now();
      if (now - slot.started >= options_.healthy_after) slot.backoff = options_.min_backoff;
      slot.restart_at = now + slot.backoff;
      std::string how = WIFSIGNALED(status) ? absl::StrCat("signal ", WTERMSIG(status))
                                            : absl::StrCat("exit ", WEXITSTATUS(status));
      LogWarning("worker.died", {{"pid", static_cast<int>(pid)},
                                 {"how", how},
                                 {"restart_in_ms", absl::ToInt64Milliseconds(slot.backoff)}});
      slot.backoff = std::min(slot.backoff * 2, options_.max_backoff);
    }
    // Start the missing.
    absl::Time now = absl::Now();
    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot& slot = slots_[i];
      if (slot.pid != 0 || slot.restart_at > now) continue;
      bool restart = slot.restart_at != absl::InfinitePast();
      absl::StatusOr<pid_t> pid = Spawn(static_cast<int>(i));
      if (!pid.ok()) {
        LogError("worker.spawn_failed", {{"status", pid.status()}});
        slot.restart_at = now + slot.backoff;
        slot.backoff = std::min(slot.backoff * 2, options_.max_backoff);
        continue;
      }
      slot.pid = *pid;
      slot.started = now;
      if (restart) {
        ++slot.restarts;
        if (options_.metrics) options_.metrics->WorkerRestarted();
      }
    }
    cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

void Supervisor::Stop() {
  std::vector<pid_t> pids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_ || stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  for (Slot& slot : slots_) {
    if (slot.pid > 0) pids.push_back(slot.pid);
  }
  for (pid_t pid : pids) ::kill(pid, SIGTERM);
  absl::Time give_up = absl::Now() + options_.stop_grace;
  std::set<pid_t> alive(pids.begin(), pids.end());
  while (!alive.empty()) {
    for (auto it = alive.begin(); it != alive.end();) {
      int status = 0;
      pid_t r = ::waitpid(*it, &status, WNOHANG);
      if (r == *it || (r < 0 && errno == ECHILD)) {
        it = alive.erase(it);
      } else {
        ++it;
      }
    }
    if (alive.empty()) break;
    if (absl::Now() >= give_up) {
      for (pid_t pid : alive) {
        LogWarning("worker.killed", {{"pid", static_cast<int>(pid)}});
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
      break;
    }
    ::usleep(20 * 1000);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (Slot& slot : slots_) slot.pid = 0;
  LogInfo("workers.stopped", {{"count", static_cast<int>(pids.size())}});
}

bool Supervisor::IsWorker(pid_t pid) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Slot& slot : slots_) {
    if (slot.pid == pid) return true;
  }
  return false;
}

std::vector<pid_t> Supervisor::Pids() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<pid_t> pids;
  for (const Slot& slot : slots_) {
    if (slot.pid > 0) pids.push_back(slot.pid);
  }
  return pids;
}

}  // namespace kiln::server
