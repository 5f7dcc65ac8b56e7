// Tests for ThreadPool: chunking covers [0, n) exactly once in contiguous chunks, n < threads and
// n = 0, nested calls run inline, many back-to-back calls, and the C trampoline.
#include "compiler_core/runtime/thread_pool.h"

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace kiln::runtime {
namespace {

struct SumClosure {
  const std::vector<int64_t>* values;
  std::atomic<int64_t> sum{0};
  std::atomic<int> calls{0};
};

void SumTask(void* closure, int64_t begin, int64_t end) {
  auto* c = static_cast<SumClosure*>(closure);
  int64_t s = 0;
  for (int64_t i = begin; i < end; ++i) s += (*c->values)[i];
  c->sum.fetch_add(s);
  c->calls.fetch_add(1);
}

TEST(ThreadPoolTest, ChunkBoundsAreContiguousAndBalanced) {
  int64_t begin, end;
  // 10 over 4: 3, 3, 2, 2.
  const int64_t expected[4][2] = {{0, 3}, {3, 6}, {6, 8}, {8, 10}};
  for (int i = 0; i < 4; ++i) {
    ThreadPool::ChunkBounds(10, 4, i, &begin, &end);
    EXPECT_EQ(begin, expected[i][0]);
    EXPECT_EQ(end, expected[i][1]);
  }
  ThreadPool::ChunkBounds(int64_t{1} << 62, 3, 2, &begin, &end);
  EXPECT_EQ(end, int64_t{1} << 62);
}

TEST(ThreadPoolTest, SumsOverManySizes) {
  for (int threads : {1, 2, 3, 4, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int64_t n = 0; n <= 300; ++n) {
      std::vector<int64_t> values(n);
      for (int64_t i = 0; i < n; ++i) values[i] = i * i + 7;
      SumClosure c{&values};
      pool.ParallelFor(&SumTask, &c, n);
      int64_t expected = 0;
      for (int64_t v : values) expected += v;
      ASSERT_EQ(c.sum.load(), expected) << "threads " << threads << " n " << n;
      ASSERT_EQ(c.calls.load(), std::min<int64_t>(n, threads))
          << "threads " << threads << " n " << n;
    }
  }
}

struct CoverClosure {
  std::vector<std::atomic<int>>* hits;
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  std::set<std::thread::id> threads;
};

void CoverTask(void* closure, int64_t begin, int64_t end) {
  auto* c = static_cast<CoverClosure*>(closure);
  for (int64_t i = begin; i < end; ++i) (*c->hits)[i].fetch_add(1);
  std::lock_guard<std::mutex> lock(c->mu);
  c->chunks.emplace_back(begin, end);
  c->threads.insert(std::this_thread::get_id());
}

TEST(ThreadPoolTest, EveryIndexExactlyOnceInContiguousChunks) {
  ThreadPool pool(4);
  for (int64_t n : {1, 2, 3, 4, 5, 7, 1000, 1001}) {
    std::vector<std::atomic<int>> hits(n);
    CoverClosure c{&hits};
    pool.ParallelFor(&CoverTask, &c, n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n " << n << " i " << i;
    std::sort(c.chunks.begin(), c.chunks.end());
    ASSERT_EQ(static_cast<int64_t>(c.chunks.size()), std::min<int64_t>(n, 4));
    EXPECT_EQ(c.chunks.front().first, 0);
    EXPECT_EQ(c.chunks.back().second, n);
    for (size_t k = 1; k < c.chunks.size(); ++k) {
      EXPECT_EQ(c.chunks[k].first, c.chunks[k - 1].second);
    }
    // One chunk per thread: as many distinct threads as chunks.
    EXPECT_EQ(c.threads.size(), c.chunks.size());
  }
}

TEST(ThreadPoolTest, ZeroAndNegativeCallNothing) {
  ThreadPool pool(4);
  std::vector<int64_t> values;
  SumClosure c{&values};
  pool.ParallelFor(&SumTask, &c, 0);
  pool.ParallelFor(&SumTask, &c, -5);
  ThreadPool::ParallelForTrampoline(nullptr, &SumTask, &c, 0);
  EXPECT_EQ(c.calls.load(), 0);
}

TEST(ThreadPoolTest, ManyConsecutiveCalls) {
  ThreadPool pool(4);
  std::vector<int64_t> values(64, 1);
  SumClosure c{&values};
  constexpr int kCalls = 20000;
  for (int i = 0; i < kCalls; ++i) pool.ParallelFor(&SumTask, &c, i % 9 == 0 ? 3 : 64);
  int64_t expected = 0;
  for (int i = 0; i < kCalls; ++i) expected += i % 9 == 0 ? 3 : 64;
  EXPECT_EQ(c.sum.load(), expected);
}

struct NestedClosure {
  ThreadPool* pool;
  std::vector<int64_t>* inner_values;
  std::atomic<int64_t> sum{0};
  std::atomic<int> inner_chunks{0};
};

void InnerTask(void* closure, int64_t begin, int64_t end) {
  auto* c = static_cast<NestedClosure*>(closure);
  int64_t s = 0;
  for (int64_t i = begin; i < end; ++i) s += (*c->inner_values)[i];
  c->sum.fetch_add(s);
  c->inner_chunks.fetch_add(1);
}

void OuterTask(void* closure, int64_t begin, int64_t end) {
  auto* c = static_cast<NestedClosure*>(closure);
  for (int64_t i = begin; i < end; ++i) {
    // Through the C trampoline, exactly as a kernel would call it.
    ThreadPool::ParallelForTrampoline(c->pool, &InnerTask, closure,
                                      static_cast<int64_t>(c->inner_values->size()));
  }
}

TEST(ThreadPoolTest, NestedCallsRunInline) {
  ThreadPool pool(4);
  std::vector<int64_t> inner(100);
  for (int i = 0; i < 100; ++i) inner[i] = i;
  NestedClosure c{&pool, &inner};
  pool.ParallelFor(&OuterTask, &c, 10);
  EXPECT_EQ(c.sum.load(), 10 * 4950);
  EXPECT_EQ(c.inner_chunks.load(), 10);  // each nested call ran as one inline chunk
}

TEST(ThreadPoolTest, TrampolineWithNullPoolRunsInline) {
  std::vector<int64_t> values = {1, 2, 3, 4, 5};
  SumClosure c{&values};
  ThreadPool::ParallelForTrampoline(nullptr, &SumTask, &c, 5);
  EXPECT_EQ(c.sum.load(), 15);
  EXPECT_EQ(c.calls.load(), 1);
}

TEST(ThreadPoolTest, CallsFromSeveralThreadsAreSerialized) {
  ThreadPool pool(3);
  std::vector<int64_t> values(50, 2);
  SumClosure c{&values};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) pool.ParallelFor(&SumTask, &c, 50);
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(c.sum.load(), 3 * 2000 * 100);
}

TEST(ThreadPoolTest, IdlePoolWakesAfterSleeping) {
  ThreadPool pool(4);
  std::vector<int64_t> values(8, 1);
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // workers go to sleep
    SumClosure c{&values};
    pool.ParallelFor(&SumTask, &c, 8);
    EXPECT_EQ(c.sum.load(), 8);
    EXPECT_EQ(c.calls.load(), 4);
  }
}

TEST(ThreadPoolTest, ConstructAndDestroyWithoutWork) {
  for (int i = 0; i < 50; ++i) ThreadPool pool(4);
  ThreadPool zero(0);
  EXPECT_EQ(zero.num_threads(), 1);
}

}  // namespace
}  // namespace kiln::runtime
