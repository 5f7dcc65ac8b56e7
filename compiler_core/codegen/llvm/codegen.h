// Loop IR → LLVM IR → x86-64 object → shared object (lld as a library), or → PTX text for a
// CUDA target (LLVM's NVPTX backend). This header keeps LLVM out of its includers.
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

/// Emits one LLVM module holding every func as an exported C-ABI kernel (runtime/abi.h) and
/// returns its textual LLVM IR after optimization (O3 for the target), or as emitted with
/// `optimize` false (to replay LLVM's pipeline with `opt -passes='default<O3>' -pass-remarks-missed=.`).
/// A func with an init also exports loop::InitSymbol(name), with the same arguments, running
/// the init statements.
absl::StatusOr<std::string> EmitLlvmIr(const std::vector<loop::Func>& funcs, const Target& target,
                                       bool optimize = true);

/// Loop IR size (statements plus expressions) at which PartitionIntoShards closes a shard.
inline constexpr size_t kShardSize = 4000;

/// Groups `funcs` into codegen shards: ceil(total loop IR size / `shard_size`) shards
/// of consecutive kernels, cut where the running size passes each shard's equal share of the
/// total. Returns each shard's kernel indices, in order. The partition depends only on the
/// kernels, never on the thread count, so an artifact's bytes do not depend on the machine
/// that compiled it.
std::vector<std::vector<size_t>> PartitionIntoShards(const std::vector<loop::Func>& funcs,
                                                     size_t shard_size = kShardSize);

/// Compiles `funcs` for `target` and links them into an ELF shared object with lld; returns the
/// .so bytes. Math functions (expf, tanhf, erff, ...) stay undefined and bind to the loading
/// process's libm.
/// The kernels are compiled as PartitionIntoShards(funcs, shard_size)'s shards, one LLVM module and object file
/// each (as XLA's parallel codegen splits its module), on `threads` threads (0: one per
/// hardware thread), and the objects are linked in shard order.
/// `on_stage` receives the time of emitting each kernel's LLVM IR ("codegen: emit NAME"),
/// verifying and optimizing each shard's module, emitting its object file (with " shard K/N (M
/// kernels)" appended when there are several), and linking. Shards overlap in time when
/// threads > 1, so their times can sum to more than the codegen's wall time.
/// Errors: kInvalidArgument for a kernel name that is not a C identifier or is used twice;
/// kInternal for invalid LLVM IR or a failed link.
absl::StatusOr<std::string> CompileToSharedObject(const std::vector<loop::Func>& funcs,
                                                  const Target& target,
                                                  const StageTimeFn& on_stage = {},
                                                  int threads = 0,
                                                  size_t shard_size = kShardSize);

/// Compiles `funcs` for a GPU target (target.IsGpu()) into one PTX module; returns its text.
/// Every func becomes one .entry per launch (loop::SplitGpuLaunches), named
/// loop::GpuLaunchSymbol(func, i), and a func with an init also gets the entries of
/// loop::InitSymbol(func)'s launches. `on_stage` receives the times of emitting each kernel,
/// verifying, optimizing and emitting the PTX ("codegen: ptx").
/// Errors: kInvalidArgument for a CPU target, a bad kernel name, loop IR the GPU cannot run
/// (a thread-bound loop outside its launch's opening chain, more than 1024 threads per
/// block, f64 math); kInternal for invalid LLVM IR or a backend failure.
absl::StatusOr<std::string> CompileToPtx(const std::vector<loop::Func>& funcs,
                                         const Target& target, const StageTimeFn& on_stage = {});

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CORE_CODEGEN_LLVM_CODEGEN_H_
