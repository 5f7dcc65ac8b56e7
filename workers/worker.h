// A worker's connection to kilnd: registers over WorkerHub.Connect with its typed capabilities
// (a CompileCapability, or for a measure worker a MeasureCapability), heartbeats, runs
// WorkerTasks on up to `slots` threads (compile: fetch model → compile → upload artifact →
// TaskResult; a tune's workloads and build steps; on a measure worker, measure steps; a kind
// the worker does not run: UNIMPLEMENTED),
// honours CancelTask and deadlines between stages, and reconnects with backoff when kilnd goes
// away. A compiler crash kills the process by design: kilnd restarts it and retries the job.
#ifndef KILN_WORKERS_WORKER_H_
#define KILN_WORKERS_WORKER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "client/channel.h"
#include "kiln/v1/service.grpc.pb.h"
#include "workers/compile_task.h"
#include "workers/tune_tasks.h"

namespace kiln::workers {

struct WorkerOptions {
  /// kilnd's address, "HOST:PORT" (its --worker-listen address when it has one).
  std::string server;
  /// TLS and the bearer token (a `worker` role) of every call to kilnd.
  client::ChannelSecurity security;
  /// How compile tasks run: in a `--run-compile` child of this binary under limits (the
  /// default, set by main), or in this process when the binary is empty.
  CompileSandbox compile_sandbox;
  /// Tasks run at once.
  int slots = 1;
  /// Name sent in `register`; kilnd's Registered.worker_id wins if it differs.
  std::string id;
  /// Give up (Run returns kUnavailable) after this long without a registered connection.
  int64_t give_up_after_ms = 300'000;
  /// Reconnect delay: starts at min, doubles per failure up to max.
  int64_t min_backoff_ms = 100;
  int64_t max_backoff_ms = 5'000;
  /// Upper bound for one FetchModel/UploadArtifact call when the task has no deadline.
  int64_t transfer_timeout_ms = 600'000;
  /// A measure worker: registers only a MeasureCapability for this hardware key (the caller
  /// detected it and pinned the process to `measure_cores` cores) and runs measure tasks, one
  /// at a time. Empty: a compile worker (compile, workloads and build tasks).
  std::string measure_hardware_key;
  std::string measure_device_name;
  int measure_cores = 1;
  /// The device measured on: "cpu", or "cuda" with the GPU's ordinal.
  std::string measure_device_kind = "cpu";
  int measure_device_ordinal = 0;
  /// Faults injected into build tasks, for kilnd's tests.
  BuildFaults build_faults;
};

class Worker {
 public:
  explicit Worker(WorkerOptions options);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /// Serves until Shutdown (returns OK) or until no connection could be registered for
  /// give_up_after_ms (returns kUnavailable).
  absl::Status Run();
  /// Stops Run from any thread: closes the stream (kilnd requeues running tasks), cancels tasks.
  /// Run returns once task threads have finished their current stage.
  void Shutdown();
  /// Removes the worker's scratch directory (the destructor does too); for a process that
  /// exits without destroying the worker.
  void RemoveScratchDir();

 private:
  struct Task {
    std::thread thread;
    std::atomic<bool> cancelled{false};
    std::atomic<bool> done{false};
  };
  using Stream = grpc::ClientReaderWriterInterface<kiln::v1::WorkerMessage, kiln::v1::HubMessage>;

  // One registered stream, until it breaks or Shutdown. Sets `registered` once kilnd answered.
  absl::Status Serve(bool& registered);
  void StartTask(const kiln::v1::WorkerTask& task);
  void RunTask(const kiln::v1::WorkerTask& task, Task& state);
  // The compile stages of RunTask; `check` stops a cancelled or expired task between them.
  absl::Status RunCompile(const kiln::v1::WorkerTask& task,
                          std::chrono::system_clock::time_point deadline,
                          const std::function<absl::Status()>& check,
                          kiln::v1::CompileResult& result);
  // Runs a task of a tune job (workloads, build, measure) into `result`.
  absl::Status RunTuneStep(const kiln::v1::WorkerTask& task,
                           std::chrono::system_clock::time_point deadline,
                           const std::function<absl::Status()>& check,
                           kiln::v1::TaskResult& result);
  bool measures() const { return !options_.measure_hardware_key.empty(); }
  void HeartbeatLoop(int64_t interval_ms);
  bool Send(const kiln::v1::WorkerMessage& message);
  void ReapTasks(bool all);
  int Busy();
  kiln::v1::Worker Capabilities() const;
  /// Waits up to `limit` for the channel to kilnd to be READY; false if it is not (or the
  /// worker is stopping).
  bool WaitForChannel(std::chrono::milliseconds limit);

  const WorkerOptions options_;

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<kiln::v1::WorkerHub::Stub> hub_;
  std::string worker_id_;
  std::string scratch_dir_;  // empty dir: external data of a model resolves to nothing

  std::mutex mu_;  // guards the fields below
  std::condition_variable cv_;
  bool stopping_ = false;
  bool connected_ = false;
  grpc::ClientContext* context_ = nullptr;  // of the live stream, for TryCancel
  std::map<std::string, std::unique_ptr<Task>> tasks_;

  std::mutex write_mu_;  // one writer at a time on the stream
  Stream* stream_ = nullptr;
};

}  // namespace kiln::workers

#endif  // KILN_WORKERS_WORKER_H_
