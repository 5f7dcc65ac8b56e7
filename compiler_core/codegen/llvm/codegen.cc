// The codegen API: builds one LLVM module from loop::Funcs, verifies and optimizes it, and either
// prints it or compiles and links it into a shared object.
#include "compiler_core/codegen/llvm/codegen.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <set>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "compiler_core/codegen/llvm/emitter.h"
#include "compiler_core/codegen/llvm/internal.h"
#include "compiler_core/ir/loop/visitor.h"
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

// Checks that every kernel name is a C identifier and unique across `funcs`.
absl::Status CheckKernelNames(const std::vector<loop::Func>& funcs) {
  std::set<std::string> names;
  for (const loop::Func& func : funcs) {
    if (!IsCIdentifier(func.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel name '", func.name, "' is not a C identifier"));
    }
    if (!names.insert(func.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate kernel name ", func.name));
    }
  }
  return absl::OkStatus();
}

// Builds, verifies and (unless `optimize` is false) optimizes one module holding `funcs` (each
// kernel and its init entry point). `suffix` follows the module-wide stage names ("" or
// " shard K/N (M kernels)").
absl::StatusOr<ModuleBundle> BuildOptimizedModule(const std::vector<const loop::Func*>& funcs,
                                                  const Target& target,
                                                  const StageTimeFn& on_stage = {},
                                                  const std::string& suffix = "",
                                                  bool optimize = true) {
  ModuleBundle bundle;
  KILN_ASSIGN_OR_RETURN(bundle.machine, CreateTargetMachine(target));
  bundle.module = std::make_unique<llvm::Module>("kiln_kernels", *bundle.context);
  bundle.module->setTargetTriple(bundle.machine->getTargetTriple().str());
  bundle.module->setDataLayout(bundle.machine->createDataLayout());
  for (const loop::Func* func : funcs) {
    ScopedStageTimer timer(on_stage, on_stage ? "codegen: emit " + func->name : std::string());
    KILN_RETURN_IF_ERROR(KernelEmitter::Create(*bundle.module, target, *func)->Emit());
    if (func->init) {
      // The load-time entry point: the same arguments, the init statements as its body.
      loop::Func init = *func;
      init.name = loop::InitSymbol(func->name);
      init.body = func->init;
      init.init = nullptr;
      KILN_RETURN_IF_ERROR(KernelEmitter::Create(*bundle.module, target, init)->Emit());
    }
  }
  std::string problems;
  llvm::raw_string_ostream os(problems);
  ScopedStageTimer verify_timer(on_stage, "codegen: verify module" + suffix);
  if (llvm::verifyModule(*bundle.module, &os)) {
    os.flush();
    return absl::InternalError(absl::StrCat("codegen produced invalid LLVM IR: ", problems));
  }
  verify_timer.Stop();
  if (!optimize) return bundle;
  ScopedStageTimer optimize_timer(on_stage, "codegen: optimize (LLVM O3)" + suffix);
  OptimizeModule(*bundle.module, *bundle.machine);
  return bundle;
}

// Size of a kernel for sharding: its statements and expressions (body and init), a rough proxy
// for the LLVM instructions it becomes.
size_t KernelSize(const loop::Func& func) {
  size_t size = 0;
  for (const loop::Stmt& body : {func.body, func.init}) {
    if (body == nullptr) continue;
    loop::VisitStmts(body, [&](const loop::Stmt&) { ++size; });
    loop::VisitExprs(body, [&](const loop::Expr&) { ++size; });
  }
  return size;
}

// One shard: a module of consecutive kernels, optimized and emitted on its own.
struct ShardResult {
  absl::StatusOr<std::string> object = std::string();
  std::vector<std::pair<std::string, double>> stages;
};

}  // namespace

std::vector<std::vector<size_t>> PartitionIntoShards(const std::vector<loop::Func>& funcs,
                                                     size_t shard_size) {
  // ceil(total / shard_size) shards (at least one), then consecutive
  // kernels cut where the running size passes each shard's equal share, so the shards are
  // balanced rather than all full but the last.
  std::vector<size_t> sizes;
  size_t total = 0;
  for (const loop::Func& func : funcs) {
    sizes.push_back(KernelSize(func));
    total += sizes.back();
  }
  const size_t unit = std::max<size_t>(1, shard_size);
  const size_t count = std::max<size_t>(1, (total + unit - 1) / unit);
  std::vector<std::vector<size_t>> shards(1);
  size_t running = 0;
  for (size_t k = 0; k < funcs.size(); ++k) {
    // Shard s ends once the running size reaches (s + 1) / count of the total.
    if (!shards.back().empty() && shards.size() < count &&
        running * count >= shards.size() * total) {
      shards.emplace_back();
    }
    shards.back().push_back(k);
    running += sizes[k];
  }
  if (shards.back().empty()) shards.pop_back();
  return shards;
}

absl::StatusOr<std::string> EmitLlvmIr(const std::vector<loop::Func>& funcs,
                                       const Target& target, bool optimize) {
  KILN_RETURN_IF_ERROR(CheckKernelNames(funcs));
  std::vector<const loop::Func*> all;
  for (const loop::Func& func : funcs) all.push_back(&func);
  KILN_ASSIGN_OR_RETURN(ModuleBundle bundle, BuildOptimizedModule(all, target, {}, "", optimize));
  std::string text;
  llvm::raw_string_ostream os(text);
  bundle.module->print(os, nullptr);
  os.flush();
  return text;
}

absl::StatusOr<std::string> CompileToPtx(const std::vector<loop::Func>& funcs,
                                         const Target& target, const StageTimeFn& on_stage) {
  if (!target.IsGpu()) {
    return absl::InvalidArgumentError(
        absl::StrCat("PTX needs a CUDA target, not ", target.Key()));
  }
  KILN_RETURN_IF_ERROR(CheckKernelNames(funcs));
  std::vector<const loop::Func*> all;
  for (const loop::Func& func : funcs) all.push_back(&func);
  KILN_ASSIGN_OR_RETURN(ModuleBundle bundle, BuildOptimizedModule(all, target, on_stage));
  ScopedStageTimer ptx_timer(on_stage, "codegen: ptx");
  return EmitAssemblyFile(*bundle.module, *bundle.machine);
}

absl::StatusOr<std::string> CompileToSharedObject(const std::vector<loop::Func>& funcs,
                                                  const Target& target,
                                                  const StageTimeFn& on_stage, int threads,
                                                  size_t shard_size) {
  if (target.IsGpu()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a shared object needs a CPU target, not ", target.Key()));
  }
  KILN_RETURN_IF_ERROR(CheckKernelNames(funcs));
  const std::vector<std::vector<size_t>> shards = PartitionIntoShards(funcs, shard_size);
  std::vector<ShardResult> results(shards.size());
  std::atomic<size_t> next{0};
  // Each worker takes the next shard: its own LLVMContext, module and TargetMachine, so shards
  // share no LLVM state. Stage times are collected per shard and reported in shard order.
  auto work = [&] {
    for (size_t s = next++; s < shards.size(); s = next++) {
      ShardResult& r = results[s];
      StageTimeFn record;
      if (on_stage) {
        record = [&r](const std::string& stage, double ms) { r.stages.push_back({stage, ms}); };
      }
      std::string suffix = shards.size() == 1
                               ? std::string()
                               : absl::StrCat(" shard ", s + 1, "/", shards.size(), " (",
                                              shards[s].size(), " kernels)");
      std::vector<const loop::Func*> members;
      for (size_t k : shards[s]) members.push_back(&funcs[k]);
      absl::StatusOr<ModuleBundle> bundle = BuildOptimizedModule(members, target, record, suffix);
      if (!bundle.ok()) {
        r.object = bundle.status();
        continue;
      }
      ScopedStageTimer object_timer(record, "codegen: object file" + suffix);
      r.object = EmitObjectFile(*bundle->module, *bundle->machine);
    }
  };
  size_t workers = threads > 0 ? static_cast<size_t>(threads)
                               : std::max(1u, std::thread::hardware_concurrency());
  workers = std::min(workers, shards.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();

  std::vector<std::string> objects;
  for (ShardResult& r : results) {
    if (on_stage) {
      for (const auto& [stage, ms] : r.stages) on_stage(stage, ms);
    }
    if (!r.object.ok()) return r.object.status();
    objects.push_back(std::move(*r.object));
  }
  ScopedStageTimer link_timer(on_stage, "link");
  return LinkSharedObject(objects);
}

}  // namespace kiln::codegen
