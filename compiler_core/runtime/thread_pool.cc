// ThreadPool: per-worker mailboxes with a sequence number; both sides spin briefly before
// sleeping on a condition variable, so back-to-back parallel loops avoid futex round trips.
#include "compiler_core/runtime/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kiln::runtime {
namespace {

// Waiting spins briefly (pause instructions), then yields the core for a while (so that an
// oversubscribed machine still runs the thread being waited for), then sleeps on a condition
// variable. Together a few tens of microseconds: the gap between consecutive parallel loops.
constexpr int kPauseIterations = 100;
constexpr int kSpinIterations = 1000;

// True while this thread runs a chunk of some pool's ParallelFor: nested calls run inline.
thread_local bool t_in_parallel_region = false;

inline void CpuRelax(int iteration) {
  if (iteration >= kPauseIterations) {
    std::this_thread::yield();
    return;
  }
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

class ParallelRegion {
 public:
  ParallelRegion() : saved_(t_in_parallel_region) { t_in_parallel_region = true; }
  ~ParallelRegion() { t_in_parallel_region = saved_; }

 private:
  bool saved_;
};

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  const int workers = std::max(num_threads, 1) - 1;
  workers_.reserve(workers);
  for (int i = 0; i < workers; ++i) workers_.push_back(std::make_unique<Worker>());
  for (auto& w : workers_) {
    Worker* worker = w.get();
    worker->thread = std::thread([this, worker] { WorkerLoop(worker); });
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  for (auto& w : workers_) {
    { std::lock_guard<std::mutex> lock(w->mu); }
    w->cv.notify_one();
  }
  for (auto& w : workers_) w->thread.join();
}

void ThreadPool::ChunkBounds(int64_t n, int64_t chunks, int64_t index, int64_t* begin,
                             int64_t* end) {
  const int64_t base = n / chunks;
  const int64_t extra = n % chunks;
  *begin = index * base + std::min(index, extra);
  *end = *begin + base + (index < extra ? 1 : 0);
}

void ThreadPool::ParallelForTrampoline(void* pool, kiln_task_fn fn, void* closure, int64_t n) {
  if (pool == nullptr) {
    if (n > 0) fn(closure, 0, n);
    return;
  }
  static_cast<ThreadPool*>(pool)->ParallelFor(fn, closure, n);
}

void ThreadPool::ParallelFor(kiln_task_fn fn, void* closure, int64_t n) {
  if (n <= 0) return;
  const int64_t chunks = std::min<int64_t>(n, num_threads());
  if (chunks == 1 || t_in_parallel_region) {
    fn(closure, 0, n);
    return;
  }
  std::lock_guard<std::mutex> dispatch(dispatch_mu_);
  remaining_.store(static_cast<int>(chunks - 1), std::memory_order_relaxed);
  for (int64_t i = 1; i < chunks; ++i) {
    int64_t begin, end;
    ChunkBounds(n, chunks, i, &begin, &end);
    Post(workers_[i - 1].get(), fn, closure, begin, end);
  }
  {
    ParallelRegion region;
    int64_t begin, end;
    ChunkBounds(n, chunks, 0, &begin, &end);
    fn(closure, begin, end);
  }
  WaitForWorkers();
}

void ThreadPool::Post(Worker* worker, kiln_task_fn fn, void* closure, int64_t begin, int64_t end) {
  // The worker is idle (it finished its previous task before the last ParallelFor returned), so
  // the plain fields are ours until `seq` is published.
  worker->fn = fn;
  worker->closure = closure;
  worker->begin = begin;
  worker->end = end;
  worker->seq.fetch_add(1, std::memory_order_seq_cst);
  // Dekker handshake with WorkerLoop: it sets `sleeping` before re-checking `seq` under `mu`.
  if (worker->sleeping.load(std::memory_order_seq_cst)) {
    { std::lock_guard<std::mutex> lock(worker->mu); }
    worker->cv.notify_one();
  }
}

void ThreadPool::WaitForWorkers() {
  for (int i = 0; i < kSpinIterations; ++i) {
    if (remaining_.load(std::memory_order_acquire) == 0) return;
    CpuRelax(i);
  }
  std::unique_lock<std::mutex> lock(done_mu_);
  caller_sleeping_.store(true, std::memory_order_seq_cst);
  done_cv_.wait(lock, [this] { return remaining_.load(std::memory_order_seq_cst) == 0; });
  caller_sleeping_.store(false, std::memory_order_relaxed);
}

void ThreadPool::WorkerLoop(Worker* worker) {
  uint64_t seen = 0;
  for (;;) {
    bool ready = false;
    for (int i = 0; i < kSpinIterations; ++i) {
      if (worker->seq.load(std::memory_order_acquire) != seen) {
        ready = true;
        break;
      }
      if (stop_.load(std::memory_order_relaxed)) break;
      CpuRelax(i);
    }
    if (!ready) {
      std::unique_lock<std::mutex> lock(worker->mu);
      worker->sleeping.store(true, std::memory_order_seq_cst);
      worker->cv.wait(lock, [&] {
        return worker->seq.load(std::memory_order_seq_cst) != seen ||
               stop_.load(std::memory_order_seq_cst);
      });
      worker->sleeping.store(false, std::memory_order_relaxed);
      if (worker->seq.load(std::memory_order_acquire) == seen) return;  // stopping, no task
    }
    seen = worker->seq.load(std::memory_order_acquire);
    {
      ParallelRegion region;
      worker->fn(worker->closure, worker->begin, worker->end);
    }
    if (remaining_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        caller_sleeping_.load(std::memory_order_seq_cst)) {
      { std::lock_guard<std::mutex> lock(done_mu_); }
      done_cv_.notify_one();
    }
  }
}

}  // namespace kiln::runtime
