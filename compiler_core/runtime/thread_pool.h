// A fixed-size thread pool for the parallel loops of generated kernels: ParallelFor splits
// [0, n) into contiguous chunks, one per thread (the caller runs the first), and blocks until all
// are done. Built for many small calls per inference: no allocation or thread creation per call.
#ifndef KILN_COMPILER_CORE_RUNTIME_THREAD_POOL_H_
#define KILN_COMPILER_CORE_RUNTIME_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "compiler_core/runtime/abi.h"

namespace kiln::runtime {

/// Runs chunks of parallel loops on `num_threads - 1` worker threads plus the calling thread.
/// ParallelFor may be called from any thread (calls are serialized); a ParallelFor issued from
/// inside a running task (a nested parallel loop) runs inline on the calling thread.
class ThreadPool {
 public:
  /// `num_threads` is the total parallelism including the caller; values < 1 mean 1 (no workers).
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  /// Runs fn(closure, begin, end) over contiguous chunks covering [0, n), at most one chunk per
  /// thread, and returns when every chunk has finished. n <= 0 calls nothing.
  void ParallelFor(kiln_task_fn fn, void* closure, int64_t n);

  /// Has the signature of kiln_context::parallel_for: `pool` is a ThreadPool* or nullptr
  /// (run inline as one chunk).
  static void ParallelForTrampoline(void* pool, kiln_task_fn fn, void* closure, int64_t n);

  /// The chunk [begin, end) of thread `index` when [0, n) is split into `chunks` parts; chunk
  /// sizes differ by at most one and earlier chunks are the larger ones.
  static void ChunkBounds(int64_t n, int64_t chunks, int64_t index, int64_t* begin, int64_t* end);

 private:
  // One mailbox per worker, on its own cache line: the caller writes the task, then bumps `seq`.
  struct alignas(64) Worker {
    std::atomic<uint64_t> seq{0};
    std::atomic<bool> sleeping{false};
    kiln_task_fn fn = nullptr;
    void* closure = nullptr;
    int64_t begin = 0;
    int64_t end = 0;
    std::mutex mu;
    std::condition_variable cv;
    std::thread thread;
  };

  void WorkerLoop(Worker* worker);
  void Post(Worker* worker, kiln_task_fn fn, void* closure, int64_t begin, int64_t end);
  void WaitForWorkers();

  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<bool> stop_{false};
  std::mutex dispatch_mu_;  // one ParallelFor at a time

  // Completion: workers count `remaining_` down; the caller spins, then sleeps on done_cv_.
  alignas(64) std::atomic<int> remaining_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::mutex done_mu_;
  std::condition_variable done_cv_;
};

}  // namespace kiln::runtime

#endif  // KILN_COMPILER_CORE_RUNTIME_THREAD_POOL_H_
