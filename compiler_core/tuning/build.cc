// Building candidate batches.
#include "compiler_core/tuning/build.h"

#include "absl/strings/str_cat.h"
#include "compiler_core/codegen/llvm/codegen.h"
#include "compiler_core/ir/loop/gpu_launch.h"

namespace kiln::tuning {
namespace {

// The launches of `body` (a GPU kernel's), entries named after `name`.
absl::StatusOr<std::vector<KernelLaunch>> LaunchesOf(const loop::Stmt& body,
                                                     const std::string& name) {
  absl::StatusOr<std::vector<loop::GpuLaunch>> launches = loop::SplitGpuLaunches(body);
  if (!launches.ok()) return launches.status();
  std::vector<KernelLaunch> out;
  for (size_t i = 0; i < launches->size(); ++i) {
    out.push_back({loop::GpuLaunchSymbol(name, i), (*launches)[i].grid, (*launches)[i].block});
  }
  return out;
}

BuiltKernel Built(const loop::Func& f, bool gpu) {
  BuiltKernel k;
  k.symbol = f.name;
  if (f.init) k.init_symbol = loop::InitSymbol(f.name);
  for (const loop::BufferRef& w : f.workspaces) k.workspace_bytes.push_back(w->NumBytes());
  if (gpu) {
    absl::StatusOr<std::vector<KernelLaunch>> body = LaunchesOf(f.body, f.name);
    absl::StatusOr<std::vector<KernelLaunch>> init =
        f.init ? LaunchesOf(f.init, loop::InitSymbol(f.name))
               : absl::StatusOr<std::vector<KernelLaunch>>(std::vector<KernelLaunch>{});
    if (!body.ok() || !init.ok()) {
      k.status = body.ok() ? init.status() : body.status();
      k.symbol.clear();
      return k;
    }
    k.launches = std::move(*body);
    k.init_launches = std::move(*init);
  }
  return k;
}

}  // namespace

absl::StatusOr<CandidateBatch> BuildFuncs(const loop::Func& reference,
                                          const std::vector<loop::Func>& candidates,
                                          const Target& target) {
  std::vector<loop::Func> funcs;
  loop::Func ref = reference;
  ref.name = "kiln_reference";
  funcs.push_back(ref);
  const bool gpu = target.IsGpu();
  CandidateBatch batch;
  batch.ptx = gpu;
  batch.reference = Built(ref, gpu);
  if (!batch.reference.status.ok()) return batch.reference.status;
  for (size_t i = 0; i < candidates.size(); ++i) {
    loop::Func f = candidates[i];
    f.name = absl::StrCat("kiln_candidate_", i);
    if (f.params.size() != reference.params.size()) {
      BuiltKernel k;
      k.status = absl::InvalidArgumentError(
          absl::StrCat("candidate ", i, " has ", f.params.size(), " params, the workload ",
                       reference.params.size()));
      batch.candidates.push_back(k);
      continue;
    }
    batch.candidates.push_back(Built(f, gpu));
    if (batch.candidates.back().status.ok()) funcs.push_back(std::move(f));
  }
  absl::StatusOr<std::string> code =
      gpu ? codegen::CompileToPtx(funcs, target) : codegen::CompileToSharedObject(funcs, target);
  if (!code.ok()) return code.status();
  batch.code = std::move(*code);
  return batch;
}

absl::StatusOr<CandidateBatch> BuildCandidates(const loop::Func& lowered,
                                               const std::vector<schedule::Schedule>& candidates,
                                               const Target& target) {
  return BuildCandidatesWith(
      lowered, std::vector<absl::StatusOr<schedule::Schedule>>(candidates.begin(), candidates.end()),
      target);
}

absl::StatusOr<CandidateBatch> BuildCandidatesWith(
    const loop::Func& lowered, const std::vector<absl::StatusOr<schedule::Schedule>>& candidates,
    const Target& target, const std::function<void(loop::Func&)>& after_schedule) {
  loop::Func reference = lowered;
  absl::Status st = schedule::ApplySchedule(schedule::DefaultSchedule(lowered, target), reference);
  if (!st.ok()) return absl::InternalError(absl::StrCat("default schedule: ", st.message()));
  std::vector<loop::Func> built;
  std::vector<absl::Status> failed(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!candidates[i].ok()) {
      failed[i] = candidates[i].status();
      continue;
    }
    loop::Func f = lowered;
    failed[i] = schedule::ApplySchedule(*candidates[i], f);
    if (!failed[i].ok()) continue;
    if (after_schedule) after_schedule(f);
    built.push_back(std::move(f));
  }
  absl::StatusOr<CandidateBatch> batch = BuildFuncs(reference, built, target);
  if (!batch.ok()) return batch;
  // Spread the built kernels back over the candidate positions.
  std::vector<BuiltKernel> all(candidates.size());
  size_t next = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (failed[i].ok()) {
      all[i] = batch->candidates[next++];
    } else {
      all[i].status = failed[i];
    }
  }
  batch->candidates = std::move(all);
  return batch;
}

}  // namespace kiln::tuning
