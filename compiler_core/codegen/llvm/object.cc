// Optimization and object emission: the new pass manager's O3 pipeline with the target's cost
// model, then the legacy codegen pipeline writing an ELF object (or PTX text) into memory.
#include "absl/strings/str_cat.h"
#include "compiler_core/codegen/llvm/internal.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

namespace kiln::codegen {

void OptimizeModule(llvm::Module& module, llvm::TargetMachine& machine) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;

  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;
  llvm::PassBuilder builder(&machine, tuning);

  // Knows libm (expf, tanhf, ...) for the triple so calls can be simplified.
  llvm::TargetLibraryInfoImpl tlii(llvm::Triple(module.getTargetTriple()));
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });

  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);

  llvm::ModulePassManager mpm =
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
}

namespace {

absl::StatusOr<std::string> EmitFile(llvm::Module& module, llvm::TargetMachine& machine,
                                     llvm::CodeGenFileType type) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (machine.addPassesToEmitFile(pm, os, nullptr, type)) {
    return absl::InternalError(
        absl::StrCat("the target ", machine.getTargetTriple().str(), " cannot emit ",
                     type == llvm::CodeGenFileType::ObjectFile ? "object files" : "assembly"));
  }
  pm.run(module);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace

absl::StatusOr<std::string> EmitObjectFile(llvm::Module& module, llvm::TargetMachine& machine) {
  return EmitFile(module, machine, llvm::CodeGenFileType::ObjectFile);
}

absl::StatusOr<std::string> EmitAssemblyFile(llvm::Module& module,
                                             llvm::TargetMachine& machine) {
  return EmitFile(module, machine, llvm::CodeGenFileType::AssemblyFile);
}

}  // namespace kiln::codegen
