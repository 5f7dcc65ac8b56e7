// The codegen API: builds one LLVM module from loop::Funcs, verifies and optimizes it, and either
// prints it or compiles and links it into a shared object.
#include "compiler_core/codegen/llvm/codegen.h"

#include <memory>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "compiler_core/codegen/llvm/emitter.h"
#include "compiler_core/codegen/llvm/internal.h"
#include "compiler_core/support/status_macros.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln::codegen {
namespace {

bool IsCIdentifier(const std::string& name) {
  if (name.empty() || absl::ascii_isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// A module and the context that owns it (the context must outlive the module).
struct ModuleBundle {
  std::unique_ptr<llvm::LLVMContext> context = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> module;
  std::unique_ptr<llvm::TargetMachine> machine;
};

absl::StatusOr<ModuleBundle> BuildOptimizedModule(const std::vector<loop::Func>& funcs,
                                                  const Target& target,
                                                  const StageTimeFn& on_stage = {}) {
  ModuleBundle bundle;
  KILN_ASSIGN_OR_RETURN(bundle.machine, CreateTargetMachine(target));
  bundle.module = std::make_unique<llvm::Module>("kiln_kernels", *bundle.context);
  bundle.module->setTargetTriple(bundle.machine->getTargetTriple().str());
  bundle.module->setDataLayout(bundle.machine->createDataLayout());
  std::set<std::string> names;
  for (const loop::Func& func : funcs) {
    if (!IsCIdentifier(func.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel name '", func.name, "' is not a C identifier"));
    }
    if (!names.insert(func.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate kernel name ", func.name));
    }
    ScopedStageTimer timer(on_stage, on_stage ? "codegen: emit " + func.name : std::string());
    KernelEmitter emitter(*bundle.module, target, func);
    KILN_RETURN_IF_ERROR(emitter.Emit());
    if (func.init) {
      // The load-time entry point: the same arguments, the init statements as its body.
      loop::Func init = func;
      init.name = loop::InitSymbol(func.name);
      init.body = func.init;
      init.init = nullptr;
      KernelEmitter init_emitter(*bundle.module, target, init);
      KILN_RETURN_IF_ERROR(init_emitter.Emit());
    }
  }
  std::string problems;
  llvm::raw_string_ostream os(problems);
  ScopedStageTimer verify_timer(on_stage, "codegen: verify module");
  if (llvm::verifyModule(*bundle.module, &os)) {
    os.flush();
    return absl::InternalError(absl::StrCat("codegen produced invalid LLVM IR: ", problems));
  }
  verify_timer.Stop();
  ScopedStageTimer optimize_timer(on_stage, "codegen: optimize (LLVM O3)");
  OptimizeModule(*bundle.module, *bundle.machine);
  return bundle;
}

}  // namespace

absl::StatusOr<std::string> EmitLlvmIr(const std::vector<loop::Func>& funcs,
                                       const Target& target) {
  KILN_ASSIGN_OR_RETURN(ModuleBundle bundle, BuildOptimizedModule(funcs, target));
  std::string text;
  llvm::raw_string_ostream os(text);
  bundle.module->print(os, nullptr);
  os.flush();
  return text;
}

absl::StatusOr<std::string> CompileToSharedObject(const std::vector<loop::Func>& funcs,
                                                  const Target& target,
                                                  const StageTimeFn& on_stage) {
  KILN_ASSIGN_OR_RETURN(ModuleBundle bundle, BuildOptimizedModule(funcs, target, on_stage));
  ScopedStageTimer object_timer(on_stage, "codegen: object file");
  KILN_ASSIGN_OR_RETURN(std::string object, EmitObjectFile(*bundle.module, *bundle.machine));
  object_timer.Stop();
  ScopedStageTimer link_timer(on_stage, "link");
  return LinkSharedObject(object);
}

}  // namespace kiln::codegen
