// GPU kernel emission (NVPTX): one PTX kernel entry per launch of the Func
// (loop::SplitGpuLaunches), taking the Func's buffers (params, then workspaces) as global
// pointers, with kernel and launch-bound (maxntid) annotations; thread-bound loops read the
// block and thread index registers.
#include "absl/strings/str_cat.h"
#include "compiler_core/codegen/llvm/emitter.h"
#include "compiler_core/ir/loop/gpu_launch.h"
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
  // The launch has exactly `extent` blocks / threads along this index (SplitGpuLaunches), so
  // the index is the loop variable with no guard.
  llvm::Value* index = b_.CreateIntrinsic(id, {}, {});
  fs_.vars[s.loop_var.get()] = b_.CreateZExt(index, b_.getInt64Ty(), s.loop_var->name);
  EmitStmt(s.body);
}

}  // namespace kiln::codegen
