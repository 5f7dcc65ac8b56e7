// The CPU backend of the kernel emitter (x86-64): its ABI, function attributes and outlining of
// parallel loops into kiln_task_fn callbacks (KernelEmitter's hooks).
#ifndef KILN_COMPILER_CORE_CODEGEN_LLVM_CPU_EMITTER_H_
#define KILN_COMPILER_CORE_CODEGEN_LLVM_CPU_EMITTER_H_

#include <string>
#include <vector>

#include "compiler_core/codegen/llvm/emitter.h"

namespace kiln::codegen {

/// Emits a loop::Func for a CPU as
///   extern "C" void <name>(const kiln_context* ctx, void* const* args)
/// plus internal helpers: <name>.impl (the body, with noalias buffer parameters; always inlined
/// into <name>) and, per parallel loop, <name>.parN (the kiln_task_fn) and <name>.parN.body.
/// Thread-bound loops are refused, unless the target emulates a GPU (Target::emulate_gpu):
/// then they run serially, warp-level statements as their loops, and math uses the GPU
/// math library.
class CpuKernelEmitter final : public KernelEmitter {
 public:
  CpuKernelEmitter(llvm::Module& module, const Target& target, const loop::Func& func)
      : KernelEmitter(module, target, func) {}

 private:
  absl::Status EmitEntries() override;
  void SetFunctionAttributes(llvm::Function* fn) override;
  void EmitParallelFor(const loop::StmtNode& s) override;
  void EmitBoundFor(const loop::StmtNode& s) override;
  bool UsesGpuMathLibrary() const override { return target_.emulate_gpu; }

  llvm::Function* CreateBodyFunction(const std::string& name,
                                     const std::vector<const loop::Buffer*>& buffers,
                                     size_t num_i64_params);

  int num_outlined_ = 0;
};

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CORE_CODEGEN_LLVM_CPU_EMITTER_H_
