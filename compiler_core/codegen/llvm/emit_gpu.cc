// GPU kernel emission (NVPTX): one PTX kernel entry per launch of the Func
// (loop::SplitGpuLaunches), taking the Func's buffers (params, then workspaces) as global
// pointers, with kernel and launch-bound (maxntid) annotations; thread-bound loops read the
// block and thread index registers, those below the opening chain run guarded and end in a
// barrier; shared buffers are addrspace(3) globals; thread-indexed local buffers are per-thread.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler_core/codegen/llvm/emitter.h"
#include "compiler_core/ir/loop/gpu_launch.h"
#include "compiler_core/ir/loop/visitor.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

namespace kiln::codegen {
namespace {

// Adds !{ptr fn, !"key", i32 value} to !nvvm.annotations (how NVVM marks kernel entries and
// launch bounds; NVPTX prints them as .entry and .maxntid).
void Annotate(llvm::Module& module, llvm::Function* fn, const char* key, int64_t value) {
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Metadata* md[] = {llvm::ValueAsMetadata::get(fn), llvm::MDString::get(ctx, key),
                          llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(
                              llvm::Type::getInt32Ty(ctx), static_cast<uint64_t>(value)))};
  module.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(ctx, md));
}

}  // namespace

absl::Status KernelEmitter::EmitGpuEntries() {
  absl::StatusOr<std::vector<loop::GpuLaunch>> launches = loop::SplitGpuLaunches(func_.body);
  if (!launches.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("codegen of ", func_.name, ": ", launches.status().message()));
  }
  std::vector<const loop::Buffer*> globals;
  for (const auto& b : func_.params) globals.push_back(b.get());
  for (const auto& b : func_.workspaces) globals.push_back(b.get());
  std::vector<llvm::Type*> params(globals.size(), b_.getPtrTy());
  for (size_t k = 0; k < launches->size(); ++k) {
    const loop::GpuLaunch& launch = (*launches)[k];
    const std::string name = loop::GpuLaunchSymbol(func_.name, k);
    auto* fn = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), params, false),
                                      llvm::GlobalValue::ExternalLinkage, name, module_);
    if (fn->getName() != name) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate kernel name ", name));
    }
    fn->setCallingConv(llvm::CallingConv::PTX_Kernel);
    SetFunctionAttributes(fn);
    Annotate(module_, fn, "kernel", 1);
    Annotate(module_, fn, "maxntidx", launch.block[0]);
    Annotate(module_, fn, "maxntidy", launch.block[1]);
    Annotate(module_, fn, "maxntidz", launch.block[2]);
    fs_ = FunctionState{};
    fs_.fn = fn;
    chain_threads_ =
        std::set<const loop::StmtNode*>(launch.chain_threads.begin(), launch.chain_threads.end());
    launch_block_ = launch.block;
    thread_depth_ = 0;
    for (size_t i = 0; i < globals.size(); ++i) {
      unsigned arg = static_cast<unsigned>(i);
      fn->addParamAttr(arg, llvm::Attribute::NoAlias);
      fn->addParamAttr(arg, llvm::Attribute::NoCapture);
      fn->addParamAttr(arg, llvm::Attribute::getWithAlignment(
                                ctx_, llvm::Align(DTypeSize(globals[i]->dtype))));
      fn->getArg(arg)->setName(globals[i]->name);
      fs_.buffers[globals[i]] = fn->getArg(arg);
    }
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn));
    EmitStmt(launch.body);
    if (!status_.ok()) return status_;
    b_.CreateRetVoid();
  }
  return status_;
}

void KernelEmitter::EmitBoundFor(const loop::StmtNode& s) {
  llvm::Intrinsic::ID id = llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x;
  switch (s.for_kind) {
    case loop::ForKind::kBlockIdxX: id = llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x; break;
    case loop::ForKind::kBlockIdxY: id = llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y; break;
    case loop::ForKind::kBlockIdxZ: id = llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z; break;
    case loop::ForKind::kThreadIdxX: id = llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x; break;
    case loop::ForKind::kThreadIdxY: id = llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y; break;
    case loop::ForKind::kThreadIdxZ: id = llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z; break;
    default: Fail("EmitBoundFor on a loop that is not thread-bound"); return;
  }
  llvm::Value* index = b_.CreateIntrinsic(id, {}, {});
  llvm::Value* var = b_.CreateZExt(index, b_.getInt64Ty(), s.loop_var->name);
  fs_.vars[s.loop_var.get()] = var;
  // A block loop, or a thread loop of the opening chain: the launch has exactly `extent`
  // blocks / threads along this index (SplitGpuLaunches), so the index is the loop variable.
  if (loop::IsBlockBound(s.for_kind) || chain_threads_.count(&s) != 0) {
    EmitStmt(s.body);
    return;
  }
  // A thread loop below the chain: threads past its extent skip it; after the outermost one,
  // all threads of the block meet at a barrier (the block-level code around it is uniform),
  // so the next statement sees what this one wrote to shared memory, and a tile is not
  // overwritten while others still read it.
  const int dim = static_cast<int>(s.for_kind) - static_cast<int>(loop::ForKind::kThreadIdxX);
  const bool outermost = thread_depth_ == 0;
  ++thread_depth_;
  if (s.extent < launch_block_[dim]) {
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, s.loop_var->name + ".run", fs_.fn);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, s.loop_var->name + ".done", fs_.fn);
    b_.CreateCondBr(b_.CreateICmpULT(var, b_.getInt64(s.extent)), body, done);
    b_.SetInsertPoint(body);
    EmitStmt(s.body);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  } else {
    EmitStmt(s.body);
  }
  --thread_depth_;
  if (outermost) b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
}

void KernelEmitter::EmitGpuAllocate(const loop::StmtNode& s) {
  const loop::Buffer& buf = *s.buffer;
  llvm::Type* elem = MemType(buf.dtype);
  if (buf.scope == loop::Buffer::Scope::kShared) {
    const uint64_t n = static_cast<uint64_t>(std::max<int64_t>(buf.NumElements(), 1));
    auto* array = llvm::ArrayType::get(elem, n);
    auto* global = new llvm::GlobalVariable(
        module_, array, /*isConstant=*/false, llvm::GlobalValue::InternalLinkage,
        llvm::UndefValue::get(array), absl::StrCat(fs_.fn->getName().str(), ".", buf.name), nullptr,
        llvm::GlobalValue::NotThreadLocal, /*AddressSpace=*/3);
    global->setAlignment(llvm::Align(16));
    fs_.buffers[&buf] = global;
    EmitStmt(s.body);
    fs_.buffers.erase(&buf);
    return;
  }
  // Dims indexed, in every access, by the variable of a thread loop inside the alloc: each
  // thread only ever touches its own slice along them.
  std::vector<bool> private_dims(buf.shape.size(), thread_depth_ == 0);
  std::set<const loop::VarNode*> thread_vars;
  loop::VisitStmts(s.body, [&](const loop::Stmt& st) {
    if (st->kind == loop::StmtKind::kFor && loop::IsThreadBound(st->for_kind) &&
        !loop::IsBlockBound(st->for_kind)) {
      thread_vars.insert(st->loop_var.get());
    }
  });
  auto check = [&](const std::vector<loop::Expr>& indices) {
    for (size_t d = 0; d < indices.size() && d < private_dims.size(); ++d) {
      private_dims[d] = private_dims[d] && indices[d]->kind == loop::ExprKind::kVar &&
                        thread_vars.count(indices[d]->var.get()) != 0;
    }
  };
  loop::VisitStmts(s.body, [&](const loop::Stmt& st) {
    if (st->kind == loop::StmtKind::kStore && st->buffer.get() == &buf) check(st->indices);
  });
  loop::VisitExprs(s.body, [&](const loop::Expr& e) {
    if (e->kind == loop::ExprKind::kLoad && e->buffer.get() == &buf) check(e->operands);
  });
  int64_t n = 1;
  for (size_t d = 0; d < buf.shape.size(); ++d) {
    if (!private_dims[d]) n *= buf.shape[d];
  }
  if (std::find(private_dims.begin(), private_dims.end(), true) != private_dims.end()) {
    private_dims_[&buf] = private_dims;
  }
  fs_.buffers[&buf] = CreateEntryAlloca(
      llvm::ArrayType::get(elem, static_cast<uint64_t>(std::max<int64_t>(n, 1))), 16, buf.name);
  EmitStmt(s.body);
  fs_.buffers.erase(&buf);
  private_dims_.erase(&buf);
}

}  // namespace kiln::codegen
