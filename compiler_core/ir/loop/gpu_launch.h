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
  /// The thread loops of the opening chain (the others run guarded, followed by a barrier).
  std::vector<const StmtNode*> chain_threads;
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
  /// grid x * y * z * block x * y * z: the threads that run `body`.
  int64_t Threads() const;
};

/// The statements of `body` that become launches: its top-level statements, nested Blocks
/// flattened, in order.
std::vector<Stmt> LaunchStatements(const Stmt& body);

/// The entry point of launch `index` of kernel `kernel`: "<kernel>_k<index>".
std::string GpuLaunchSymbol(const std::string& kernel, size_t index);

/// Splits `body` into its launches. The block loops of a launch must open it as one chain of
/// directly nested loops (possibly followed by thread loops, each holding only the next); the
/// chain's extents are the grid and block dimensions. Thread loops may also appear below the
/// chain (after a shared-memory alloc, inside a serial loop over tiles): the block then has
/// each index's largest extent, every thread runs its own iteration of each such loop (threads
/// past a loop's extent, or off index 0 along a dim of the block no enclosing thread loop
/// binds, skip it), and a barrier follows each outermost one, so that what one
/// thread loop writes to shared memory the next reads (the loop IR's serial order). Bound loops
/// have no limit, and an outermost thread loop below the chain is never under a condition on a
/// thread index (its barrier must be reached by every thread). A launch with no bound loop runs
/// on one thread. Errors: kInvalidArgument
/// naming the loop that breaks a rule, or a block of more than 1024 threads (CUDA's limit) or a
/// grid dimension above 2^31 - 1 (x) / 65535 (y, z).
absl::StatusOr<std::vector<GpuLaunch>> SplitGpuLaunches(const Stmt& body);

}  // namespace kiln::loop

#endif  // KILN_COMPILER_CORE_IR_LOOP_GPU_LAUNCH_H_
