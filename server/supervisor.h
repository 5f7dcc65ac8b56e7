// The local worker supervisor: starts N `kiln-worker --connect 127.0.0.1:PORT ...` processes
// (compile workers, or measure workers with per-slot cores), restarts one that dies (with
// exponential backoff), and stops them all on shutdown.
#ifndef KILN_SERVER_SUPERVISOR_H_
#define KILN_SERVER_SUPERVISOR_H_

#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/metrics_hooks.h"

namespace kiln::server {

struct SupervisorOptions {
  /// Path of the kiln-worker binary.
  std::string worker_binary;
  /// Arguments after the binary name, e.g. {"--connect", "127.0.0.1:7878"}.
  std::vector<std::string> args;
  /// Arguments for slot i (0-based) after `args`, e.g. the cores a measure worker pins to.
  /// Optional.
  std::function<std::vector<std::string>(int slot)> slot_args;
  int workers = 1;
  absl::Duration min_backoff = absl::Milliseconds(500);
  absl::Duration max_backoff = absl::Seconds(30);
  /// A worker that lived this long resets its slot's backoff.
  absl::Duration healthy_after = absl::Seconds(60);
  /// How long Stop waits after SIGTERM before SIGKILL.
  absl::Duration stop_grace = absl::Seconds(3);
  MetricsHooks* metrics = nullptr;
};

class Supervisor {
 public:
  explicit Supervisor(SupervisorOptions options) : options_(std::move(options)) {}
  /// Stops the workers (as Stop).
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  /// Starts the workers and the supervising thread. kFailedPrecondition if the binary is not
  /// executable.
  absl::Status Start();
  /// SIGTERM to every worker, SIGKILL to those still alive after stop_grace; reaps them all.
  /// Idempotent.
  void Stop();
  /// Whether `pid` is a worker this supervisor started and that is alive.
  bool IsWorker(pid_t pid);
  /// Pids of the live workers.
  std::vector<pid_t> Pids();

 private:
  struct Slot {
    pid_t pid = 0;  // 0: not running
    absl::Time started;
    absl::Duration backoff;
    absl::Time restart_at;  // when pid == 0: when to start it again
    int restarts = 0;
  };
  absl::StatusOr<pid_t> Spawn(int slot);
  void Loop();

  const SupervisorOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool started_ = false;
  std::vector<Slot> slots_;
  std::thread thread_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_SUPERVISOR_H_
