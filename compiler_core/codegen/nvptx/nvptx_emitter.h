// The NVPTX backend of the kernel emitter (KernelEmitter's hooks for CUDA targets): kernel entry
// points with launch bounds, thread-bound loops on the block and thread index registers,
// shared memory as address space 3, per-thread registers, mma.sync and cp.async. Includes LLVM;
// only compiler_core/codegen includes it.
#ifndef KILN_COMPILER_CORE_CODEGEN_NVPTX_NVPTX_EMITTER_H_
#define KILN_COMPILER_CORE_CODEGEN_NVPTX_NVPTX_EMITTER_H_

#include <array>
#include <set>

#include "compiler_core/codegen/llvm/emitter.h"

namespace kiln::codegen {

/// Emits a loop::Func for a GPU as one PTX kernel entry per launch (loop::SplitGpuLaunches)
///   .entry <name>_k<i>(.param .u64 buffer0, ...)   // params, then workspaces
/// whose thread-bound loops read %ctaid / %tid.
class NvptxKernelEmitter final : public KernelEmitter {
 public:
  NvptxKernelEmitter(llvm::Module& module, const Target& target, const loop::Func& func)
      : KernelEmitter(module, target, func) {}

 private:
  absl::Status EmitEntries() override;
  void SetFunctionAttributes(llvm::Function* fn) override;
  /// A GPU thread runs a parallel loop serially; its parallelism is the bound loops'.
  void EmitParallelFor(const loop::StmtNode& s) override { EmitSerialFor(s); }
  void EmitBoundFor(const loop::StmtNode& s) override;
  /// A shared buffer as an addrspace(3) global of the module; a local one allocated at block
  /// level whose leading dims every access indexes by enclosing thread-loop variables gets
  /// those dims dropped (each thread holds its own slice, in registers).
  void EmitAllocate(const loop::StmtNode& s) override;
  /// A kMma statement as one mma.sync: the lane's A and B fragments gathered from the tiles in
  /// PTX's fragment layout (converted to tf32 / packed as f16x2 or bf16x2), its 4 accumulators
  /// in and out.
  void EmitMma(const loop::StmtNode& s) override;
  /// A kAsyncCopy as one cp.async (4 or 8 bytes .ca, 16 bytes .cg; with a condition its
  /// src-size is 0 where false, zero-filling).
  void EmitAsyncCopy(const loop::StmtNode& s) override;
  /// A kAsyncWait as cp.async.commit_group; cp.async.wait_group N.
  void EmitAsyncWait(const loop::StmtNode& s) override;
  bool UsesGpuMathLibrary() const override { return true; }

  // The launch being emitted (its chain thread loops run unguarded), how many thread loops
  // enclose the statement being emitted, and which block dims are bound around it.
  std::set<const loop::StmtNode*> chain_threads_;
  std::array<int64_t, 3> launch_block_ = {1, 1, 1};
  int thread_depth_ = 0;
  std::array<bool, 3> thread_dims_bound_ = {false, false, false};  // x, y, z
};

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CORE_CODEGEN_NVPTX_NVPTX_EMITTER_H_
