// The job queue of kilnd's own work: a fixed pool of threads that runs everything that may block
// (SQLite, blob I/O, ONNX import), so gRPC reactors never block.
#ifndef KILN_SERVER_EXECUTOR_H_
#define KILN_SERVER_EXECUTOR_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::server {

/// A FIFO thread pool. Thread-safe.
class Executor {
 public:
  /// Starts `threads` (at least 1) threads.
  explicit Executor(int threads);
  /// Runs what is queued, then joins (as Shutdown).
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// Queues `fn`. After Shutdown, `fn` is dropped (never run).
  void Post(std::function<void()> fn);
  /// Runs the queued work, then joins the threads. Idempotent.
  void Shutdown();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_EXECUTOR_H_
