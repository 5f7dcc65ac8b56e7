// Target hooks: resolving "host" / "cpu:<name>" specs into kiln::Target (CPU, sorted feature
// string, SIMD width), "cuda:sm_NN" through ParseCudaTarget, and creating the matching LLVM
// TargetMachine (x86-64 or NVPTX).
#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/codegen/llvm/codegen.h"
#include "compiler_core/codegen/llvm/internal.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/TargetParser/X86TargetParser.h"

namespace kiln::codegen {
namespace {

constexpr char kDefaultX86Triple[] = "x86_64-pc-linux-gnu";

std::string X86Triple() {
  llvm::Triple host(llvm::sys::getDefaultTargetTriple());
  return host.getArch() == llvm::Triple::x86_64 ? host.normalize() : kDefaultX86Triple;
}

bool HasFeature(const std::vector<std::string>& features, const char* name) {
  return std::find(features.begin(), features.end(), absl::StrCat("+", name)) != features.end();
}

// Sorted by feature name (ignoring the +/- sign).
void SortFeatures(std::vector<std::string>& features) {
  std::sort(features.begin(), features.end(), [](const std::string& a, const std::string& b) {
    return a.substr(1) < b.substr(1);
  });
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

absl::StatusOr<Target> ResolveTarget(std::string_view spec) {
  if (spec.substr(0, 5) == "cuda:") return ParseCudaTarget(spec);
  InitializeX86Target();
  Target t;
  t.kind = "cpu";
  t.triple = X86Triple();
  std::vector<std::string> features;
  if (spec == "host") {
    llvm::Triple host(llvm::sys::getDefaultTargetTriple());
    if (host.getArch() != llvm::Triple::x86_64) {
      return absl::InvalidArgumentError("target host: only x86-64 hosts are supported");
    }
    t.cpu = llvm::sys::getHostCPUName().str();
    for (const auto& f : llvm::sys::getHostCPUFeatures()) {
      features.push_back(absl::StrCat(f.getValue() ? "+" : "-", std::string(f.getKey())));
    }
    unsigned cores = std::thread::hardware_concurrency();
    t.num_cores = cores == 0 ? 1 : static_cast<int>(cores);
  } else if (absl::StartsWith(std::string(spec), "cpu:") && spec.size() > 4) {
    t.cpu = std::string(spec.substr(4));
    std::string error;
    const llvm::Target* x86 = llvm::TargetRegistry::lookupTarget(t.triple, error);
    if (x86 == nullptr) return absl::InternalError(absl::StrCat("no x86-64 target: ", error));
    std::unique_ptr<llvm::MCSubtargetInfo> sti(x86->createMCSubtargetInfo(t.triple, "", ""));
    if (sti == nullptr || !sti->isCPUStringValid(t.cpu) ||
        llvm::X86::parseArchX86(t.cpu, /*Only64Bit=*/true) == llvm::X86::CK_None) {
      return absl::InvalidArgumentError(
          absl::StrCat("target ", std::string(spec), ": LLVM knows no x86-64 CPU named ", t.cpu));
    }
    llvm::SmallVector<llvm::StringRef, 64> names;
    llvm::X86::getFeaturesForCPU(t.cpu, names, /*NeedPlus=*/true);
    for (llvm::StringRef n : names) features.push_back(n.str());
    t.num_cores = 1;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown target spec '", std::string(spec),
        "' (expected host, cpu:<llvm cpu name> or cuda:sm_80|sm_86|sm_89|sm_90|sm_90a)"));
  }
  SortFeatures(features);
  t.features = absl::StrJoin(features, ",");
  if (HasFeature(features, "avx512f")) {
    t.vector_bits = 512;
  } else if (HasFeature(features, "avx2") || HasFeature(features, "avx")) {
    t.vector_bits = 256;
  } else {
    t.vector_bits = 128;
  }
  return t;
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
