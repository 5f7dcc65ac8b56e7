// Loop IR → LLVM IR → x86-64 object → shared object (lld as a library). This header keeps LLVM
// out of its includers.
#ifndef KILN_COMPILER_CORE_CODEGEN_LLVM_CODEGEN_H_
#define KILN_COMPILER_CORE_CODEGEN_LLVM_CODEGEN_H_

#include <string>
#include <string_view>
#include <vector>

#include "compiler_core/support/stage_timer.h"
#include "absl/status/statusor.h"
#include "compiler_core/ir/loop/loop_ir.h"
#include "compiler_core/support/target.h"

namespace kiln::codegen {

/// Resolves a target spec: "host" (this machine's CPU and features) or "cpu:<llvm cpu name>"
/// (e.g. "cpu:skylake-avx512", "cpu:znver4", "cpu:x86-64-v3").
/// Errors: kInvalidArgument for an unknown spec or a CPU name LLVM does not know for x86-64.
absl::StatusOr<Target> ResolveTarget(std::string_view spec);

/// Emits one LLVM module holding every func as an exported C-ABI kernel (runtime/abi.h) and
/// returns its textual LLVM IR after optimization (O3 for the target). A func with an init
/// also exports loop::InitSymbol(name), with the same arguments, running the init statements.
absl::StatusOr<std::string> EmitLlvmIr(const std::vector<loop::Func>& funcs, const Target& target);

/// Compiles `funcs` for `target` and links them into an ELF shared object with lld; returns the
/// .so bytes. Math functions (expf, tanhf, erff, ...) stay undefined and bind to the loading
/// process's libm.
/// `on_stage` receives the time of emitting each kernel's LLVM IR ("codegen: emit NAME"),
/// verifying and optimizing the module, emitting the object file, and linking.
absl::StatusOr<std::string> CompileToSharedObject(const std::vector<loop::Func>& funcs,
                                                  const Target& target,
                                                  const StageTimeFn& on_stage = {});

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CORE_CODEGEN_LLVM_CODEGEN_H_
