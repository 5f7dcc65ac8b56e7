// The emitter's entry: which backend emits a target's kernels, and the buffers a kernel uses.
#include "compiler_core/codegen/llvm/emitter.h"

#include "compiler_core/codegen/llvm/cpu_emitter.h"
#include "compiler_core/codegen/nvptx/nvptx_emitter.h"
#include "compiler_core/ir/loop/visitor.h"

namespace kiln::codegen {

KernelEmitter::KernelEmitter(llvm::Module& module, const Target& target, const loop::Func& func)
    : module_(module), ctx_(module.getContext()), b_(ctx_), target_(target), func_(func) {}

std::unique_ptr<KernelEmitter> KernelEmitter::Create(llvm::Module& module, const Target& target,
                                                     const loop::Func& func) {
  if (target.IsGpu()) return std::make_unique<NvptxKernelEmitter>(module, target, func);
  return std::make_unique<CpuKernelEmitter>(module, target, func);
}

absl::Status KernelEmitter::Emit() {
  used_buffers_.clear();
  loop::VisitStmts(func_.body, [&](const loop::Stmt& s) {
    if (s->buffer) used_buffers_.insert(s->buffer.get());
  });
  loop::VisitExprs(func_.body, [&](const loop::Expr& e) {
    if (e->kind == loop::ExprKind::kLoad) used_buffers_.insert(e->buffer.get());
  });
  // The params a symbolic buffer's dims read are used wherever it is.
  std::vector<const loop::Buffer*> symbolic;
  for (const loop::Buffer* b : used_buffers_) {
    if (b->is_symbolic()) symbolic.push_back(b);
  }
  for (const loop::Buffer* b : symbolic) {
    for (const loop::Expr& d : b->sym_shape) {
      loop::VisitExprs(d, [&](const loop::Expr& e) {
        if (e->kind == loop::ExprKind::kLoad) used_buffers_.insert(e->buffer.get());
      });
    }
  }
  return EmitEntries();
}

}  // namespace kiln::codegen
