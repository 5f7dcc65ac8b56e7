// A GPU kernel's launches: how a thread-bound loop IR Func becomes CUDA kernel entry points.
// Each top-level statement of the body (nested Blocks flattened) is one launch, run in order on
// one stream, so statements see each other's writes without a grid-wide barrier; its launch
// dimensions are the extents of the thread-bound loops that open it.
#ifndef KILN_COMPILER_CORE_IR_LOOP_GPU_LAUNCH_H_
#define KILN_COMPILER_CORE_IR_LOOP_GPU_LAUNCH_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/loop/loop_ir.h"

namespace kiln::loop {

/// One launch of a GPU kernel: the statement its threads run and the CUDA grid and block
/// dimensions (x, y, z; 1 where no loop is bound to that index).
struct GpuLaunch {
  Stmt body;
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
  /// grid x * y * z * block x * y * z: the threads that run `body`.
  int64_t Threads() const;
};

/// The entry point of launch `index` of kernel `kernel`: "<kernel>_k<index>".
std::string GpuLaunchSymbol(const std::string& kernel, size_t index);

/// Splits `body` into its launches. The thread-bound loops of a launch must open it as one
/// chain of directly nested loops (a block loop, or a thread loop, each holding only the next),
/// with no limit; no thread-bound loop may appear elsewhere. A launch with no bound loop runs on
/// one thread. Errors: kInvalidArgument naming the loop that breaks the rule, or a block of more
/// than 1024 threads (CUDA's limit) or a grid dimension above 2^31 - 1 (x) / 65535 (y, z).
absl::StatusOr<std::vector<GpuLaunch>> SplitGpuLaunches(const Stmt& body);

}  // namespace kiln::loop

#endif  // KILN_COMPILER_CORE_IR_LOOP_GPU_LAUNCH_H_
