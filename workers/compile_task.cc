// Import + pipeline + serialization for one task.
#include "workers/compile_task.h"

#include <chrono>
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler_core/importer/onnx/importer.h"
#include "compiler_core/pipeline/compile.h"
#include "compiler_core/runtime/artifact.h"
#include "compiler_core/runtime/manifest_calls.h"
#include "compiler_core/support/status_macros.h"
#include "compiler_core/tuning/records.h"
#include "wire/options.h"
#include "workers/protocol.h"

namespace kiln::workers {

absl::StatusOr<CompiledArtifact> CompileModelBytes(std::string_view model_bytes,
                                                   const std::string& target,
                                                   const kiln::v1::CompileOptions& options,
                                                   const std::string& scratch_dir) {
  auto start = std::chrono::steady_clock::now();
  pipeline::CompileOptions compile_options;
  compile_options.target = target.empty() ? "host" : target;
  if (!options.precision().empty()) compile_options.precision = options.precision();
  compile_options.disabled_passes.assign(options.disabled_passes().begin(),
                                         options.disabled_passes().end());
  KILN_ASSIGN_OR_RETURN(compile_options.shape_profiles, ShapeProfilesOf(options));
  KILN_ASSIGN_OR_RETURN(compile_options.bounded_min_shapes, BoundedMinShapesOf(options));
  KILN_ASSIGN_OR_RETURN(compile_options.constant_inputs, ConstantInputsOf(options));
  // The tuning records kilnd chose for this compile (best per workload on one hardware key).
  tuning::RecordSet records;
  for (const kiln::v1::TuningRecord& r : options.records()) {
    absl::Status added = records.Add(r);
    if (!added.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tuning record of workload ", r.workload_key(), ": ", added.message()));
    }
  }
  tuning::RecordScheduleSource schedules(records, options.hardware_key());
  if (!options.untuned() && records.size() > 0) compile_options.schedules = &schedules;
  KILN_ASSIGN_OR_RETURN(pipeline::CompileResult result,
                        pipeline::CompileProfiles(
                            [&](const importer::InputShapes& shapes) {
                              return importer::ImportOnnxBytes(
                                  model_bytes, /*base_dir=*/"",
                                  pipeline::ImportOptionsFor(compile_options, shapes));
                            },
                            compile_options));
  CompiledArtifact out;
  // The manifest names its whole cache key: kilnd and clients refuse it under any other.
  result.artifact.manifest.set_options_hash(wire::OptionsHash(options));
  out.bytes = runtime::SerializeArtifact(result.artifact);
  out.key.set_graph_hash(result.graph_hash);
  out.key.set_target_key(result.target.Key());
  out.key.set_compiler_version(pipeline::kCompilerVersion);
  out.key.set_options_hash(wire::OptionsHash(options));
  std::set<std::string> workloads;
  // Every kernel's workload, of the model, of each of its shape profiles and of Loop bodies.
  runtime::ForEachKernelCall(result.artifact.manifest, [&](const kiln::v1::KernelCall& k) {
    if (!k.workload_key().empty()) workloads.insert(k.workload_key());
  });
  out.workload_keys.assign(workloads.begin(), workloads.end());
  out.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

kiln::v1::SandboxedCompileResult RunSandboxedCompile(const kiln::v1::SandboxedCompile& request) {
  kiln::v1::SandboxedCompileResult result;
  absl::StatusOr<CompiledArtifact> compiled =
      CompileModelBytes(request.model(), request.target(), request.options(), "");
  if (!compiled.ok()) {
    result.set_error_code(static_cast<int32_t>(compiled.status().code()));
    result.set_error_message(std::string(compiled.status().message()));
    return result;
  }
  result.set_artifact(std::move(compiled->bytes));
  *result.mutable_key() = compiled->key;
  result.set_compile_ms(compiled->compile_ms);
  for (const std::string& w : compiled->workload_keys) result.add_workload_keys(w);
  return result;
}

absl::StatusOr<std::string> RunInSandbox(const CompileSandbox& sandbox, const std::string& mode,
                                         const std::string& request, absl::Duration timeout,
                                         const std::string& what) {
  server::ProcessLimits limits = sandbox.limits;
  limits.timeout = std::min(limits.timeout, timeout);
  limits.max_output_bytes = int64_t{8} << 30;  // an artifact
  absl::StatusOr<server::ProcessOutcome> ran =
      server::RunLimitedProcess({sandbox.binary, mode}, request, limits);
  if (!ran.ok()) return absl::UnavailableError(ran.status().message());
  if (ran->exit_code == 127) {
    return absl::UnavailableError(
        absl::StrCat("cannot start ", sandbox.binary, " ", mode, ": ", ran->err_tail));
  }
  // kInternal either way, never kResourceExhausted: to kilnd that means "refused, retry".
  if (!ran->ok()) return absl::InternalError(ran->Failure(what, limits));
  return std::move(ran->out);
}

absl::StatusOr<CompiledArtifact> CompileInChild(std::string_view model_bytes,
                                                const std::string& target,
                                                const kiln::v1::CompileOptions& options,
                                                const CompileSandbox& sandbox,
                                                absl::Duration timeout) {
  if (sandbox.binary.empty()) return CompileModelBytes(model_bytes, target, options, "");
  kiln::v1::SandboxedCompile request;
  request.set_model(std::string(model_bytes));
  request.set_target(target);
  *request.mutable_options() = options;
  KILN_ASSIGN_OR_RETURN(kiln::v1::SandboxedCompileResult result,
                        RunInSandboxFor<kiln::v1::SandboxedCompileResult>(
                            sandbox, "--run-compile", request, timeout, "the compiler"));
  CompiledArtifact compiled;
  compiled.bytes = std::move(*result.mutable_artifact());
  compiled.key = result.key();
  compiled.compile_ms = result.compile_ms();
  compiled.workload_keys.assign(result.workload_keys().begin(), result.workload_keys().end());
  return compiled;
}

}  // namespace kiln::workers
