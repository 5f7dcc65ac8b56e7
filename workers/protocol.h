// What kilnd and kiln-worker must agree on beyond the proto: the chunk size of blob streams,
// the canonical hash of CompileOptions (the cache key's options_hash), and status codes in
// messages. Depends on the generated service proto and compiler_core/support only, so kilnd can
// link it without linking the compiler.
#ifndef KILN_WORKERS_PROTOCOL_H_
#define KILN_WORKERS_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler_core/importer/onnx/shape_profiles.h"
#include "kiln/v1/service.pb.h"

namespace kiln::workers {

/// Largest `data` chunk of one UploadModel/UploadArtifact/FetchModel/FetchArtifact message.
inline constexpr size_t kMaxChunkBytes = size_t{1} << 20;

/// `options` in canonical form: disabled_passes sorted and deduplicated (their order does not
/// change the generated code), input_shapes sorted by name. kilnd's server::CanonicalOptions.
kiln::v1::CompileOptions CanonicalOptions(const kiln::v1::CompileOptions& options);

/// SHA-256 (lowercase hex) of the deterministic serialization of CanonicalOptions(options),
/// of each record only what shapes the artifact. The same definition as kilnd's
/// server::OptionsHash: equal for options that compile alike.
std::string OptionsHash(const kiln::v1::CompileOptions& options);

/// `options.input_shapes` as shape profiles (importer::ProfilesOf: the k-th entry of an input
/// is profile k's). Errors (kInvalidArgument): an empty name, a dim < 1, inputs given
/// different numbers of shapes.
absl::StatusOr<importer::ShapeProfiles> ShapeProfilesOf(const kiln::v1::CompileOptions& options);

/// The minimums of the bounded dims in `options.input_shapes` (InputShape.min_dims), by input;
/// empty when no dim is bounded. Errors (kInvalidArgument): min_dims of another length than
/// dims, a minimum outside [1, dim], an input bounded twice, bounded dims with several profiles.
absl::StatusOr<importer::InputShapes> BoundedMinShapesOf(const kiln::v1::CompileOptions& options);

/// `options.constant_inputs` by input name (serialized TensorProtos). Errors
/// (kInvalidArgument): an empty name, a name given twice.
absl::StatusOr<std::map<std::string, std::string>> ConstantInputsOf(
    const kiln::v1::CompileOptions& options);

/// The one shape profile of `options` (empty: none) for what compiles one variant (tuning,
/// workload lists). Errors: ShapeProfilesOf's; kInvalidArgument for several profiles.
absl::StatusOr<importer::InputShapes> OneShapeProfileOf(const kiln::v1::CompileOptions& options);

/// The Digest message of `bytes` (SHA-256 hex and size).
kiln::v1::Digest DigestOf(const std::string& bytes);

/// One line naming every capability of a worker, for logs and `kiln workers`, e.g.
/// `compile(targets=cpu host_cpu=znver4)` or
/// `measure(device=cuda:0 name="NVIDIA H200" hardware_key=... cores=0)`; "none" if empty.
std::string CapabilitiesText(const kiln::v1::WorkerCapabilities& capabilities);

/// A status from a wire error code (google.rpc.Code, which absl::StatusCode mirrors) and message;
/// an out-of-range code becomes kUnknown.
absl::Status StatusFromCode(int code, const std::string& message);

}  // namespace kiln::workers

#endif  // KILN_WORKERS_PROTOCOL_H_
