// The compile step of a worker task, free of any RPC: model bytes + target + options →
// serialized artifact and its cache key.
#ifndef KILN_WORKERS_COMPILE_TASK_H_
#define KILN_WORKERS_COMPILE_TASK_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "kiln/v1/service.pb.h"
#include "server/limited_process.h"
#include "wire/status.h"

namespace kiln::workers {

/// A compiled model, ready to upload.
struct CompiledArtifact {
  std::string bytes;          // runtime::SerializeArtifact output
  kiln::v1::ArtifactKey key;  // graph hash, resolved target key, compiler version, options hash
  double compile_ms = 0;      // import through artifact
  std::vector<std::string> workload_keys;  // distinct, of the artifact's kernels
};

/// Imports the ONNX `model_bytes` and compiles them for `target` ("host" or "cpu:<name>") with
/// `options` (disabled_passes honoured). External-data tensors are looked up in `scratch_dir`,
/// an empty directory, so a model cannot make the worker read its files.
/// Errors: those of pipeline::CompileGraph and the importer (kInvalidArgument for a malformed
/// model, an unknown target or an unknown pass name; kUnimplemented for an unsupported op).
absl::StatusOr<CompiledArtifact> CompileModelBytes(std::string_view model_bytes,
                                                   const std::string& target,
                                                   const kiln::v1::CompileOptions& options,
                                                   const std::string& scratch_dir);

/// The child side of a sandboxed compile (`kiln-worker --run-compile`): CompileModelBytes of
/// the request, its result or error in the reply.
kiln::v1::SandboxedCompileResult RunSandboxedCompile(const kiln::v1::SandboxedCompile& request);

/// Where and how a worker runs its compiles: `binary` (kiln-worker itself) with
/// `--run-compile` in a child under `limits`; an empty binary compiles in this process.
struct CompileSandbox {
  std::string binary;
  server::ProcessLimits limits;
};

/// Runs `sandbox.binary MODE` in a child under `sandbox.limits` (its timeout lowered to
/// `timeout`) with `request` on stdin; returns its stdout. Errors: kInternal naming `what` ("the
/// compiler") and how the child ended (a signal, a limit, with its stderr tail); kUnavailable
/// when it cannot be started.
absl::StatusOr<std::string> RunInSandbox(const CompileSandbox& sandbox, const std::string& mode,
                                         const std::string& request, absl::Duration timeout,
                                         const std::string& what);

/// RunInSandbox of the serialized `request`, its stdout parsed as a `Result` (a message with
/// error_code and error_message fields). Errors: RunInSandbox's; the child's own error_code;
/// kInternal when its output is not a `Result`.
template <typename Result>
absl::StatusOr<Result> RunInSandboxFor(const CompileSandbox& sandbox, const std::string& mode,
                                       const google::protobuf::Message& request,
                                       absl::Duration timeout, const std::string& what) {
  absl::StatusOr<std::string> out =
      RunInSandbox(sandbox, mode, request.SerializeAsString(), timeout, what);
  if (!out.ok()) return out.status();
  Result result;
  if (!result.ParseFromString(*out)) {
    return absl::InternalError(
        absl::StrCat(what, "'s child wrote no ", Result::descriptor()->name()));
  }
  if (result.error_code() != 0) {
    return wire::StatusFromCode(result.error_code(), result.error_message());
  }
  return result;
}

/// CompileModelBytes in a child process under `sandbox.limits` (its timeout lowered to
/// `timeout`), so that a compiler crash, hang or runaway allocation ends only the child.
/// Errors: the compile's own; kInternal "the compiler was killed by signal N (...)" for a
/// crash or "ran past its time limit" for a limit (memory, CPU, `timeout`), naming the limits;
/// kUnavailable when the child cannot be started.
absl::StatusOr<CompiledArtifact> CompileInChild(std::string_view model_bytes,
                                                const std::string& target,
                                                const kiln::v1::CompileOptions& options,
                                                const CompileSandbox& sandbox,
                                                absl::Duration timeout);

}  // namespace kiln::workers

#endif  // KILN_WORKERS_COMPILE_TASK_H_
