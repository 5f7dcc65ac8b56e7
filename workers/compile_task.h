// The compile step of a worker task, free of any RPC: model bytes + target + options →
// serialized artifact and its cache key.
#ifndef KILN_WORKERS_COMPILE_TASK_H_
#define KILN_WORKERS_COMPILE_TASK_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kiln/v1/service.pb.h"

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

}  // namespace kiln::workers

#endif  // KILN_WORKERS_COMPILE_TASK_H_
