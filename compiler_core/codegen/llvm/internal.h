// Declarations shared by the LLVM codegen sources (target hooks, optimization, object emission,
// linking). Includes LLVM; never include it outside compiler_core/codegen/llvm/.
#ifndef KILN_COMPILER_CORE_CODEGEN_LLVM_INTERNAL_H_
#define KILN_COMPILER_CORE_CODEGEN_LLVM_INTERNAL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/support/target.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

namespace kiln::codegen {

/// Registers the x86 target with LLVM (once per process).
void InitializeX86Target();
/// Registers the NVPTX target with LLVM (once per process).
void InitializeNvptxTarget();

/// A TargetMachine for `target` (PIC, aggressive codegen, FMA contraction where IR allows).
absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> CreateTargetMachine(const Target& target);

/// Runs the O3 pipeline of the new pass manager over `module`.
void OptimizeModule(llvm::Module& module, llvm::TargetMachine& machine);

/// Emits `module` as an ELF relocatable object; returns its bytes.
absl::StatusOr<std::string> EmitObjectFile(llvm::Module& module, llvm::TargetMachine& machine);

/// Emits `module` as target assembly (PTX for NVPTX); returns its text.
absl::StatusOr<std::string> EmitAssemblyFile(llvm::Module& module, llvm::TargetMachine& machine);

/// Links ELF objects, in order, into one shared object with lld (serialized by a mutex);
/// returns the .so bytes.
absl::StatusOr<std::string> LinkSharedObject(const std::vector<std::string>& objects);

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CORE_CODEGEN_LLVM_INTERNAL_H_
