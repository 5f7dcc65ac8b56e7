// Static memory planning: greedy-by-size placement of intermediate buffers in one arena, reusing
// the space of buffers whose live ranges do not intersect (as TFLite's arena planner does).
#include "compiler_core/runtime/memory_plan.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace kiln::runtime {
namespace {

constexpr int64_t kAlignment = 64;

int64_t AlignUp(int64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

bool LiveRangesIntersect(const BufferRequest& a, const BufferRequest& b) {
  return a.first_use <= b.last_use && b.first_use <= a.last_use;
}

}  // namespace

MemoryPlan PlanMemory(const std::vector<BufferRequest>& requests) {
  const size_t n = requests.size();
  MemoryPlan plan;
  plan.offsets.assign(n, 0);
  std::vector<int64_t> sizes(n);
  for (size_t i = 0; i < n; ++i) {
    assert(requests[i].size_bytes >= 0 && "buffer size must be non-negative");
    assert(requests[i].first_use <= requests[i].last_use && "live range must not be empty");
    sizes[i] = AlignUp(requests[i].size_bytes);
    plan.arena_bytes_no_reuse += sizes[i];
  }

  // Largest first; ties by earlier first use, then by request order, so plans are deterministic.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (sizes[a] != sizes[b]) return sizes[a] > sizes[b];
    return requests[a].first_use < requests[b].first_use;
  });

  std::vector<size_t> placed;  // indices of placed non-empty buffers
  placed.reserve(n);
  std::vector<size_t> conflicts;
  for (size_t i : order) {
    if (sizes[i] == 0) continue;  // occupies no bytes: offset 0 overlaps nothing
    conflicts.clear();
    for (size_t j : placed) {
      if (LiveRangesIntersect(requests[i], requests[j])) conflicts.push_back(j);
    }
    std::sort(conflicts.begin(), conflicts.end(),
              [&](size_t a, size_t b) { return plan.offsets[a] < plan.offsets[b]; });
    // Lowest gap between conflicting buffers (sorted by offset) that fits this one.
    int64_t offset = 0;
    for (size_t j : conflicts) {
      if (plan.offsets[j] - offset >= sizes[i]) break;
      offset = std::max(offset, plan.offsets[j] + sizes[j]);
    }
    plan.offsets[i] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + sizes[i]);
    placed.push_back(i);
  }
  return plan;
}

}  // namespace kiln::runtime
