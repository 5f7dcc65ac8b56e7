// Target machines: creating the LLVM TargetMachine (x86-64 or NVPTX) for a resolved
// kiln::Target (ResolveTarget, support/target.h, resolves specs without LLVM).
#include <mutex>

#include "absl/strings/str_cat.h"
#include "compiler_core/codegen/llvm/codegen.h"
#include "compiler_core/codegen/llvm/internal.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

namespace kiln::codegen {
namespace {

constexpr char kDefaultX86Triple[] = "x86_64-pc-linux-gnu";

std::string X86Triple() {
  llvm::Triple host(llvm::sys::getDefaultTargetTriple());
  return host.getArch() == llvm::Triple::x86_64 ? host.normalize() : kDefaultX86Triple;
}

}  // namespace

void InitializeX86Target() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
  });
}

void InitializeNvptxTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> CreateTargetMachine(const Target& target) {
  if (target.kind != "cpu" && target.kind != "cuda") {
    return absl::InvalidArgumentError(absl::StrCat("LLVM codegen got target kind ", target.kind));
  }
  if (target.IsGpu()) {
    if (target.gpu.sm == 0 || target.triple.empty()) {
      return absl::InvalidArgumentError(
          "a cuda target needs its SM and triple (resolve it with ParseCudaTarget)");
    }
    InitializeNvptxTarget();
  } else {
    InitializeX86Target();
  }
  // A hand-built CPU Target may leave the triple empty: default to x86-64 Linux.
  std::string triple = target.triple.empty() ? X86Triple() : target.triple;
  std::string error;
  const llvm::Target* llvm_target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (llvm_target == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("target triple ", triple, ": ", error));
  }
  llvm::TargetOptions options;
  // Fuse a*b+c into FMA only where the IR carries `contract`.
  options.AllowFPOpFusion = llvm::FPOpFusion::Standard;
  std::unique_ptr<llvm::TargetMachine> machine(llvm_target->createTargetMachine(
      triple, target.cpu, target.features, options, llvm::Reloc::PIC_,
      llvm::CodeModel::Small, llvm::CodeGenOptLevel::Aggressive));
  if (machine == nullptr) {
    return absl::InternalError(absl::StrCat("cannot create a TargetMachine for ", target.Key()));
  }
  return machine;
}

}  // namespace kiln::codegen
