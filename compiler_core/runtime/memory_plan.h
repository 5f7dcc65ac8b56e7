// Memory planning: places every intermediate buffer of a kernel sequence in one arena, reusing
// the space of buffers whose live ranges have ended. The compiler plans the static arena with
// it; the runtime places a symbolic artifact's dynamic buffers with it at each run, once their
// sizes are known.
#ifndef KILN_COMPILER_CORE_RUNTIME_MEMORY_PLAN_H_
#define KILN_COMPILER_CORE_RUNTIME_MEMORY_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::runtime {

/// A buffer to place: its size and the inclusive range of kernel indices that touch it.
struct BufferRequest {
  std::string name;
  int64_t size_bytes = 0;
  int first_use = 0;
  int last_use = 0;
};

/// The placement: offsets (64-byte aligned) parallel to the requests.
struct MemoryPlan {
  std::vector<int64_t> offsets;
  int64_t arena_bytes = 0;           // total size with reuse
  int64_t arena_bytes_no_reuse = 0;  // sum of aligned sizes
};

/// Greedy by size, largest first; each buffer takes the lowest offset that overlaps no placed
/// buffer with an intersecting live range (the "greedy by size" heuristic of TFLite's arena
/// planner). Two buffers whose live ranges intersect never overlap in memory.
MemoryPlan PlanMemory(const std::vector<BufferRequest>& requests);

}  // namespace kiln::runtime

#endif  // KILN_COMPILER_CORE_RUNTIME_MEMORY_PLAN_H_
