// Workloads, build and measure steps.
#include "workers/tune_tasks.h"

#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_core/codegen/llvm/codegen.h"
#include "compiler_core/importer/onnx/importer.h"
#include "compiler_core/ir/loop/parser.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/ir/loop/visitor.h"
#include "compiler_core/pipeline/workloads.h"
#include "compiler_core/schedule/schedule_parser.h"
#include "compiler_core/support/status_macros.h"
#include "compiler_core/tuning/build.h"
#include "compiler_core/tuning/measure_proto.h"
#include "workers/protocol.h"

namespace kiln::workers {
namespace {

/// The target of `spec`, checked against the key kilnd resolved (empty: unchecked).
absl::StatusOr<Target> ResolveChecked(const std::string& spec, const std::string& expected_key) {
  KILN_ASSIGN_OR_RETURN(Target target, kiln::ResolveTarget(spec.empty() ? "host" : spec));
  if (!expected_key.empty() && target.Key() != expected_key) {
    return absl::InternalError(absl::StrCat("target '", spec, "' resolves here to ",
                                            target.Key(), " but kilnd expected ", expected_key));
  }
  return target;
}

/// Adds one to every value stored into a param (an output) of the kernel: the wrong_outputs
/// fault.
class AddOneToOutputs final : public loop::StmtMutator {
 public:
  explicit AddOneToOutputs(const loop::Func& f) : params_(f.params) {}
  loop::Stmt MutateStmt(const loop::Stmt& stmt) override {
    loop::Stmt s = MutateChildren(stmt);
    if (s == nullptr || s->kind != loop::StmtKind::kStore) return s;
    bool param = false;
    for (const loop::BufferRef& p : params_) param = param || p == s->buffer;
    if (!param || s->value->dtype != DType::kFloat32) return s;
    return loop::Store(s->buffer, s->indices, s->value + loop::FloatImm(1.0));
  }

 private:
  const std::vector<loop::BufferRef>& params_;
};

}  // namespace

absl::StatusOr<kiln::v1::WorkloadsResult> ListWorkloads(std::string_view model_bytes,
                                                        const kiln::v1::WorkloadsTask& task,
                                                        const std::string& scratch_dir) {
  KILN_ASSIGN_OR_RETURN(Target expected, ResolveChecked(task.target(), task.target_key()));
  pipeline::CompileOptions options;
  options.target = task.target().empty() ? "host" : task.target();
  options.disabled_passes.assign(task.options().disabled_passes().begin(),
                                 task.options().disabled_passes().end());
  // The one profile, its bounded dims' minimums (ranges) if any.
  KILN_ASSIGN_OR_RETURN(importer::ShapeProfiles profiles, ShapeProfilesOf(task.options()));
  KILN_ASSIGN_OR_RETURN(importer::InputShapes shapes,
                        importer::SingleProfile(profiles, "a tune job"));
  if (!shapes.empty()) options.shape_profiles = {shapes};
  KILN_ASSIGN_OR_RETURN(options.bounded_min_shapes, BoundedMinShapesOf(task.options()));
  Target target;
  KILN_ASSIGN_OR_RETURN(std::vector<pipeline::ModelWorkload> workloads,
                        pipeline::ExtractImportedWorkloads(
                            [&](const importer::InputShapes& s) {
                              return importer::ImportOnnxBytes(model_bytes, /*base_dir=*/"", {s});
                            },
                            options, &target));
  if (target.Key() != expected.Key()) {
    return absl::InternalError(absl::StrCat("the pipeline lowered for ", target.Key(),
                                            ", not ", expected.Key()));
  }
  kiln::v1::WorkloadsResult result;
  result.set_target_key(target.Key());
  for (const pipeline::ModelWorkload& w : workloads) {
    kiln::v1::Workload& out = *result.add_workloads();
    out.set_workload_key(w.workload_key);
    out.set_loop_ir(loop::PrintFunc(w.lowered));
    out.set_fused_ops(w.fused_ops);
    out.set_weight(static_cast<int32_t>(w.symbols.size()));
    out.set_flops(w.flops);
  }
  return result;
}

absl::StatusOr<kiln::v1::BuildResult> BuildBatch(const kiln::v1::BuildTask& task,
                                                 const BuildFaults& faults) {
  absl::StatusOr<loop::Func> lowered = loop::ParseFunc(task.workload());
  if (!lowered.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the workload does not parse: ", lowered.status().message()));
  }
  KILN_ASSIGN_OR_RETURN(Target target, ResolveChecked(task.target(), task.target_key()));
  // A schedule that does not parse fails only its candidate.
  std::vector<absl::StatusOr<schedule::Schedule>> schedules;
  for (int i = 0; i < task.schedules_size(); ++i) {
    absl::StatusOr<schedule::Schedule> s = schedule::ParseSchedule(task.schedules(i));
    if (!s.ok()) {
      s = absl::InvalidArgumentError(
          absl::StrCat("schedule ", i, " does not parse: ", s.status().message()));
    }
    schedules.push_back(std::move(s));
  }
  std::function<void(loop::Func&)> fault;
  if (faults.wrong_outputs) {
    fault = [](loop::Func& f) { f.body = AddOneToOutputs(f).MutateStmt(f.body); };
  }
  KILN_ASSIGN_OR_RETURN(tuning::CandidateBatch batch,
                        tuning::BuildCandidatesWith(*lowered, schedules, target, fault));
  kiln::v1::BuildResult result;
  *result.mutable_batch() = tuning::BatchToProto(*lowered, batch);
  return result;
}

absl::StatusOr<kiln::v1::MeasureResult> MeasureBatch(const kiln::v1::MeasureTask& task,
                                                     const std::string& hardware_key, int cores,
                                                     int device) {
  if (task.hardware_key() != hardware_key) {
    return absl::FailedPreconditionError(
        absl::StrCat("this measure worker measures on ", hardware_key, ", not on ",
                     task.hardware_key()));
  }
  kiln::v1::MeasureOptions options = task.options();
  options.set_num_threads(cores);
  options.set_device(device);
  KILN_ASSIGN_OR_RETURN(kiln::v1::BatchMeasurement m,
                        tuning::RunBatchMessage(task.batch(), options));
  m.set_hardware_key(hardware_key);
  kiln::v1::MeasureResult result;
  *result.mutable_measurement() = std::move(m);
  return result;
}

kiln::v1::SandboxedStepResult RunSandboxedStep(const kiln::v1::SandboxedStep& request) {
  kiln::v1::SandboxedStepResult result;
  absl::Status status;
  if (request.task().has_workloads()) {
    absl::StatusOr<kiln::v1::WorkloadsResult> w =
        ListWorkloads(request.model(), request.task().workloads(), "");
    if (w.ok()) *result.mutable_workloads() = *std::move(w);
    status = w.status();
  } else if (request.task().has_build()) {
    absl::StatusOr<kiln::v1::BuildResult> b =
        BuildBatch(request.task().build(), BuildFaults{request.inject_wrong_outputs()});
    if (b.ok()) *result.mutable_build() = *std::move(b);
    status = b.status();
  } else {
    status = absl::InvalidArgumentError("a sandboxed step is a workloads or a build task");
  }
  result.set_error_code(static_cast<int32_t>(status.code()));
  result.set_error_message(std::string(status.message()));
  return result;
}

namespace {

absl::StatusOr<kiln::v1::SandboxedStepResult> StepInChild(const kiln::v1::SandboxedStep& request,
                                                          const CompileSandbox& sandbox,
                                                          absl::Duration timeout) {
  return RunInSandboxFor<kiln::v1::SandboxedStepResult>(sandbox, "--run-step", request, timeout,
                                                        "the tune step's compiler");
}

}  // namespace

absl::StatusOr<kiln::v1::WorkloadsResult> ListWorkloadsInChild(std::string_view model_bytes,
                                                               const kiln::v1::WorkloadsTask& task,
                                                               const CompileSandbox& sandbox,
                                                               absl::Duration timeout) {
  if (sandbox.binary.empty()) return ListWorkloads(model_bytes, task, "");
  kiln::v1::SandboxedStep request;
  *request.mutable_task()->mutable_workloads() = task;
  request.set_model(std::string(model_bytes));
  absl::StatusOr<kiln::v1::SandboxedStepResult> result = StepInChild(request, sandbox, timeout);
  if (!result.ok()) return result.status();
  return std::move(*result->mutable_workloads());
}

absl::StatusOr<kiln::v1::BuildResult> BuildBatchInChild(const kiln::v1::BuildTask& task,
                                                        const BuildFaults& faults,
                                                        const CompileSandbox& sandbox,
                                                        absl::Duration timeout) {
  if (sandbox.binary.empty()) return BuildBatch(task, faults);
  kiln::v1::SandboxedStep request;
  *request.mutable_task()->mutable_build() = task;
  request.set_inject_wrong_outputs(faults.wrong_outputs);
  absl::StatusOr<kiln::v1::SandboxedStepResult> result = StepInChild(request, sandbox, timeout);
  if (!result.ok()) return result.status();
  return std::move(*result->mutable_build());
}

}  // namespace kiln::workers
