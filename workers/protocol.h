// What kilnd and kiln-worker read alike from CompileOptions (shape profiles, bounded minimums,
// constant inputs) and the capabilities text; the wire conventions themselves (chunk size,
// options hash, status codes, digests) are wire/. Links no compiler, so kilnd can use it.
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

/// One line naming every capability of a worker, for logs and `kiln workers`, e.g.
/// `compile(targets=cpu host_cpu=znver4)` or
/// `measure(device=cuda:0 name="NVIDIA H200" hardware_key=... cores=0)`; "none" if empty.
std::string CapabilitiesText(const kiln::v1::WorkerCapabilities& capabilities);

}  // namespace kiln::workers

#endif  // KILN_WORKERS_PROTOCOL_H_
