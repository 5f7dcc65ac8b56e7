// Workload extraction: a plan (no code generation) whose schedule source records every kernel
// it is asked about.
#include "compiler_core/pipeline/workloads.h"

#include <functional>
#include <map>

#include "compiler_core/runtime/manifest_calls.h"
#include "compiler_core/tuning/workload.h"

namespace kiln::pipeline {
namespace {

/// Passes every choice through to `inner` and remembers the lowered kernels, in call order.
class RecordingSource final : public schedule::ScheduleSource {
 public:
  explicit RecordingSource(const schedule::ScheduleSource& inner) : inner_(inner) {}
  schedule::ScheduleChoice Choose(const loop::Func& lowered, const std::string& workload_key,
                                  const Target& target) const override {
    seen_.push_back({workload_key, lowered});
    return inner_.Choose(lowered, workload_key, target);
  }
  mutable std::vector<std::pair<std::string, loop::Func>> seen_;

 private:
  const schedule::ScheduleSource& inner_;
};

/// The workloads of what `plan` plans with the options it is given.
absl::StatusOr<std::vector<ModelWorkload>> Extract(
    const CompileOptions& options, Target* target,
    const std::function<absl::StatusOr<PlannedGraph>(const CompileOptions&)>& plan) {
  const schedule::DefaultScheduleSource defaults;
  RecordingSource recorder(options.schedules != nullptr ? *options.schedules : defaults);
  CompileOptions recording = options;
  recording.schedules = &recorder;
  absl::StatusOr<PlannedGraph> planned = plan(recording);
  if (!planned.ok()) return planned.status();
  if (target != nullptr) *target = planned->result.target;
  // The generated kernels in the order their schedules were chosen: a Loop body's where the
  // Loop stands (the body is planned when the plan reaches the Loop).
  std::vector<const kiln::v1::KernelCall*> calls;
  runtime::ForEachKernelCall(planned->plan.manifest, [&](const kiln::v1::KernelCall& call) {
    if (!call.has_loop()) calls.push_back(&call);
  });
  std::vector<ModelWorkload> out;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < recorder.seen_.size() && i < calls.size(); ++i) {
    const auto& [key, lowered] = recorder.seen_[i];
    // A kernel over symbolic dims has no one shape to measure at: not tunable yet.
    if (loop::HasSymbolicParams(lowered)) continue;
    auto [it, inserted] = index.try_emplace(key, out.size());
    if (inserted) {
      ModelWorkload w;
      w.workload_key = key;
      w.lowered = lowered;
      w.fused_ops = calls[i]->fused_ops();
      w.flops = tuning::CountFlops(lowered);
      out.push_back(std::move(w));
    }
    out[it->second].symbols.push_back(calls[i]->symbol());
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<ModelWorkload>> ExtractWorkloads(const std::string& model_path,
                                                            const CompileOptions& options,
                                                            Target* target) {
  return Extract(options, target, [&](const CompileOptions& recording) {
    return PlanModelFile(model_path, recording);
  });
}

absl::StatusOr<std::vector<ModelWorkload>> ExtractImportedWorkloads(const GraphImporter& import,
                                                                    const CompileOptions& options,
                                                                    Target* target) {
  return Extract(options, target,
                 [&](const CompileOptions& recording) { return PlanImported(import, recording); });
}

absl::StatusOr<std::vector<ModelWorkload>> ExtractGraphWorkloads(
    std::unique_ptr<graph::Graph> graph, const CompileOptions& options, Target* target) {
  return Extract(options, target, [&](const CompileOptions& recording) {
    return PlanGraph(std::move(graph), recording);
  });
}

}  // namespace kiln::pipeline
