// Tests for the greedy-by-size static memory planner: exact placements in small hand cases and a
// randomized property test (buffers with intersecting live ranges never overlap in memory).
#include "compiler_core/runtime/memory_plan.h"

#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::runtime {
namespace {

using ::testing::ElementsAre;

int64_t AlignUp(int64_t n) { return (n + 63) / 64 * 64; }

TEST(MemoryPlanTest, EmptyRequestList) {
  MemoryPlan plan = PlanMemory({});
  EXPECT_TRUE(plan.offsets.empty());
  EXPECT_EQ(plan.arena_bytes, 0);
  EXPECT_EQ(plan.arena_bytes_no_reuse, 0);
}

TEST(MemoryPlanTest, HandCaseExactOffsets) {
  // Placement order (largest first): c, a, e, b, d.
  //   c 256B [2,3] -> 0
  //   a 128B [0,1] -> 0    (disjoint from c: reuses its space)
  //   e 128B [3,4] -> 256  (intersects c)
  //   b  64B [1,2] -> 256  (intersects a and c, not e)
  //   d   0B       -> 0
  std::vector<BufferRequest> requests = {
      {"a", 100, 0, 1}, {"b", 64, 1, 2}, {"c", 200, 2, 3}, {"d", 0, 0, 4}, {"e", 128, 3, 4},
  };
  MemoryPlan plan = PlanMemory(requests);
  EXPECT_THAT(plan.offsets, ElementsAre(0, 256, 0, 0, 256));
  EXPECT_EQ(plan.arena_bytes, 384);
  EXPECT_EQ(plan.arena_bytes_no_reuse, 128 + 64 + 256 + 0 + 128);
}

TEST(MemoryPlanTest, TakesLowestFittingGap) {
  // p holds [0,128) for the whole sequence; q, r, s are used one after another and all reuse
  // the same 64 bytes right after p.
  std::vector<BufferRequest> requests = {
      {"p", 128, 0, 2},
      {"q", 64, 0, 0},
      {"r", 64, 1, 1},
      {"s", 1, 2, 2},
  };
  MemoryPlan plan = PlanMemory(requests);
  EXPECT_THAT(plan.offsets, ElementsAre(0, 128, 128, 128));
  EXPECT_EQ(plan.arena_bytes, 192);
  EXPECT_EQ(plan.arena_bytes_no_reuse, 128 + 64 + 64 + 64);
}

TEST(MemoryPlanTest, FillsHoleBetweenBuffers) {
  // The short-lived big buffer leaves a hole once it dies; later buffers fill it.
  // Placement order: big, then the 64-byte ones by first use (z, x, y).
  //   big 128B [0,0] -> 0
  //   z    64B [0,3] -> 128  (intersects big)
  //   x    64B [1,3] -> 0    (intersects z only: fits below it)
  //   y    64B [2,3] -> 64   (intersects x and z: the hole between them fits)
  std::vector<BufferRequest> requests = {
      {"big", 128, 0, 0},
      {"x", 64, 1, 3},
      {"z", 64, 0, 3},
      {"y", 64, 2, 3},
  };
  MemoryPlan plan = PlanMemory(requests);
  EXPECT_THAT(plan.offsets, ElementsAre(0, 0, 128, 64));
  EXPECT_EQ(plan.arena_bytes, 192);
  EXPECT_EQ(plan.arena_bytes_no_reuse, 320);
}

TEST(MemoryPlanTest, DisjointRangesShareOneSlot) {
  std::vector<BufferRequest> requests;
  for (int i = 0; i < 10; ++i) requests.push_back({"t", 1000 + i, i, i});
  MemoryPlan plan = PlanMemory(requests);
  for (int64_t offset : plan.offsets) EXPECT_EQ(offset, 0);
  EXPECT_EQ(plan.arena_bytes, AlignUp(1009));
  EXPECT_EQ(plan.arena_bytes_no_reuse, 10 * AlignUp(1000));
}

TEST(MemoryPlanTest, AllLiveTogetherMeansNoReuse) {
  std::vector<BufferRequest> requests = {{"a", 1, 0, 5}, {"b", 65, 0, 5}, {"c", 64, 0, 5}};
  MemoryPlan plan = PlanMemory(requests);
  // b (128 aligned) first, then a and c (64 each, tie broken by request order).
  EXPECT_THAT(plan.offsets, ElementsAre(128, 0, 192));
  EXPECT_EQ(plan.arena_bytes, 256);
  EXPECT_EQ(plan.arena_bytes, plan.arena_bytes_no_reuse);
}

TEST(MemoryPlanTest, ZeroSizeBuffersTakeNoSpace) {
  std::vector<BufferRequest> requests = {{"e0", 0, 0, 3}, {"a", 64, 0, 3}, {"e1", 0, 1, 2}};
  MemoryPlan plan = PlanMemory(requests);
  EXPECT_THAT(plan.offsets, ElementsAre(0, 0, 0));
  EXPECT_EQ(plan.arena_bytes, 64);
  EXPECT_EQ(plan.arena_bytes_no_reuse, 64);
}

TEST(MemoryPlanTest, RandomizedNoOverlapOfLiveBuffers) {
  std::mt19937_64 rng(20240611);
  for (int trial = 0; trial < 2000; ++trial) {
    const int num_kernels = 1 + static_cast<int>(rng() % 20);
    const int num_buffers = static_cast<int>(rng() % 40);
    std::vector<BufferRequest> requests;
    int64_t expected_no_reuse = 0;
    for (int i = 0; i < num_buffers; ++i) {
      BufferRequest r;
      r.name = "b" + std::to_string(i);
      // Mix of zero, tiny, aligned and large sizes, with many ties.
      switch (rng() % 4) {
        case 0:
          r.size_bytes = static_cast<int64_t>(rng() % 3) * 64;
          break;
        case 1:
          r.size_bytes = static_cast<int64_t>(rng() % 200);
          break;
        default:
          r.size_bytes = static_cast<int64_t>(rng() % 100000);
          break;
      }
      r.first_use = static_cast<int>(rng() % num_kernels);
      r.last_use = r.first_use + static_cast<int>(rng() % (num_kernels - r.first_use));
      expected_no_reuse += AlignUp(r.size_bytes);
      requests.push_back(r);
    }
    MemoryPlan plan = PlanMemory(requests);
    ASSERT_EQ(plan.offsets.size(), requests.size());
    EXPECT_EQ(plan.arena_bytes_no_reuse, expected_no_reuse);
    EXPECT_LE(plan.arena_bytes, plan.arena_bytes_no_reuse);
    EXPECT_EQ(plan.arena_bytes % 64, 0);
    int64_t max_aligned = 0;
    for (int i = 0; i < num_buffers; ++i) {
      const int64_t size = AlignUp(requests[i].size_bytes);
      max_aligned = std::max(max_aligned, size);
      EXPECT_EQ(plan.offsets[i] % 64, 0) << "trial " << trial << " buffer " << i;
      EXPECT_GE(plan.offsets[i], 0);
      EXPECT_LE(plan.offsets[i] + size, plan.arena_bytes);
      for (int j = i + 1; j < num_buffers; ++j) {
        const BufferRequest& a = requests[i];
        const BufferRequest& b = requests[j];
        if (a.size_bytes == 0 || b.size_bytes == 0) continue;
        if (a.first_use > b.last_use || b.first_use > a.last_use) continue;
        const int64_t a_end = plan.offsets[i] + AlignUp(a.size_bytes);
        const int64_t b_end = plan.offsets[j] + AlignUp(b.size_bytes);
        EXPECT_TRUE(a_end <= plan.offsets[j] || b_end <= plan.offsets[i])
            << "trial " << trial << ": live buffers " << i << " and " << j << " overlap";
      }
    }
    // The largest buffer alone bounds the arena from below.
    EXPECT_GE(plan.arena_bytes, max_aligned);
    // Deterministic: the same requests give the same plan.
    MemoryPlan again = PlanMemory(requests);
    EXPECT_EQ(again.offsets, plan.offsets);
  }
}

}  // namespace
}  // namespace kiln::runtime
