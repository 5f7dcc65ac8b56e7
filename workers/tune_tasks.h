// The steps of a tune job a worker runs, free of any RPC (as compile_task.h is for compiles):
// list a model's workloads and build a batch of candidates (compile workers), run a built batch
// on this machine (measure workers).
#ifndef KILN_WORKERS_TUNE_TASKS_H_
#define KILN_WORKERS_TUNE_TASKS_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kiln/v1/service.pb.h"
#include "workers/compile_task.h"

namespace kiln::workers {

/// Faults a worker injects on purpose, for kilnd's tests of what it must never accept.
struct BuildFaults {
  /// Every built candidate (never the reference) stores each output value plus one, so its
  /// outputs differ from the reference's: the measure worker must reject it.
  bool wrong_outputs = false;
};

/// The workloads of the ONNX `model_bytes` lowered for `task.target()` with the task's
/// options (no code generation): key, printed loop IR (it parses back), fused ops, kernels
/// with that workload, FLOPs of one. External data resolves in `scratch_dir` (an empty dir).
/// Errors: the importer's and the pipeline's (kInvalidArgument, kUnimplemented); kInternal when
/// the target resolves to another key than `task.target_key()` (both named).
absl::StatusOr<kiln::v1::WorkloadsResult> ListWorkloads(std::string_view model_bytes,
                                                        const kiln::v1::WorkloadsTask& task,
                                                        const std::string& scratch_dir);

/// Builds the default schedule of `task.workload()` and every schedule of the task into one
/// code object for the task's target (tuning/build.h). A schedule that does not parse or apply
/// fails only its candidate (its BuiltKernel carries the error); candidates keep the order of
/// `task.schedules()`. Errors: kInvalidArgument for a workload that does not parse; kInternal
/// for a target key mismatch (as ListWorkloads) or a code generation failure.
absl::StatusOr<kiln::v1::BuildResult> BuildBatch(const kiln::v1::BuildTask& task,
                                                 const BuildFaults& faults = {});

/// Runs a built batch on this machine as the measure worker of `hardware_key` owning `cores`
/// cores (tuning/measure_proto.h RunBatchMessage, with num_threads = cores) and, for a PTX
/// batch, GPU `device`; the measurement names `hardware_key`. Errors: kFailedPrecondition when the
/// task is for another hardware key (both named); those of RunBatchMessage.
absl::StatusOr<kiln::v1::MeasureResult> MeasureBatch(const kiln::v1::MeasureTask& task,
                                                     const std::string& hardware_key, int cores,
                                                     int device = 0);

/// The child side of a sandboxed tune step (`kiln-worker --run-step`): ListWorkloads or
/// BuildBatch of the request's task, its result or error in the reply.
kiln::v1::SandboxedStepResult RunSandboxedStep(const kiln::v1::SandboxedStep& request);

/// ListWorkloads in a child under `sandbox` (in this process when its binary is empty).
/// Errors: ListWorkloads's; RunInSandbox's for a crash or limit.
absl::StatusOr<kiln::v1::WorkloadsResult> ListWorkloadsInChild(std::string_view model_bytes,
                                                               const kiln::v1::WorkloadsTask& task,
                                                               const CompileSandbox& sandbox,
                                                               absl::Duration timeout);

/// BuildBatch in a child under `sandbox` (in this process when its binary is empty).
/// Errors: BuildBatch's; RunInSandbox's for a crash or limit.
absl::StatusOr<kiln::v1::BuildResult> BuildBatchInChild(const kiln::v1::BuildTask& task,
                                                        const BuildFaults& faults,
                                                        const CompileSandbox& sandbox,
                                                        absl::Duration timeout);

}  // namespace kiln::workers

#endif  // KILN_WORKERS_TUNE_TASKS_H_
