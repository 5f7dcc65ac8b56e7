// The graph hash of a model, computed by importing it (protobuf parse, ONNX checker, shape
// inference, Kiln's import): what kiln-graph-hash runs in its sandboxed child, never kilnd.
#ifndef KILN_SERVER_GRAPH_HASH_TASK_H_
#define KILN_SERVER_GRAPH_HASH_TASK_H_

#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "compiler_core/importer/onnx/shape_profiles.h"
#include "kiln/v1/service.pb.h"

namespace kiln::server {

/// The task for one shape profile: `shapes` (with `min_shapes`, bounded dims) and `constants`
/// (input name → serialized onnx.TensorProto); a tensor past `max_tensor_bytes` (0: the
/// importer's default, 1 TiB) is INVALID_ARGUMENT.
v1::GraphHashTask MakeGraphHashTask(std::string_view model, const importer::InputShapes& shapes,
                                    const std::map<std::string, std::string>& constants,
                                    const importer::InputShapes& min_shapes,
                                    int64_t max_tensor_bytes = 0);

/// Imports the task's model (external data refused: it came as bytes) and returns its
/// graph::GraphHash, or with bounded dims passes::BoundedGraphHash after passes::BoundDims, as
/// the pipeline computes them. Errors (in the result): the importer's kInvalidArgument and
/// kUnimplemented, naming the node.
v1::GraphHashResult RunGraphHashTask(const v1::GraphHashTask& task);

}  // namespace kiln::server

#endif  // KILN_SERVER_GRAPH_HASH_TASK_H_
