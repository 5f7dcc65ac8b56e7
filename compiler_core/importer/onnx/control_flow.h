// ONNX control flow (If, Loop, Scan) imported by inlining subgraphs into the static graph.
#ifndef KILN_COMPILER_CORE_IMPORTER_ONNX_CONTROL_FLOW_H_
#define KILN_COMPILER_CORE_IMPORTER_ONNX_CONTROL_FLOW_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/importer/onnx/import_context.h"
#include "compiler_core/importer/onnx/model_checks.h"
#include "onnx/onnx_pb.h"

namespace kiln::importer {

/// Most body nodes one Loop or Scan may unroll into (iterations x body nodes).
inline constexpr int64_t kMaxUnrolledNodes = 100000;

/// Imports subgraph `body` into the graph under construction and returns the values of its
/// outputs. Names resolve in `bound` (the body's inputs) first, then in the enclosing scopes
/// (outer-scope values); values the body defines are named `prefix` + their ONNX name.
using SubgraphImporter = std::function<absl::StatusOr<std::vector<graph::Value*>>(
    const onnx::GraphProto& body, const std::map<std::string, graph::Value*>& bound,
    const std::string& prefix)>;

/// The outputs of the If, Loop or Scan `node` (inputs resolved in `values`), built by inlining
/// (ONNX operator spec, opsets 1-21):
/// - If: a condition that is a compile-time constant imports its taken branch only; a run-time
///   condition imports both branches and selects each output with Where, which needs both
///   branches to give it one type (else kUnimplemented).
/// - Loop: the trip count M and the condition (initial, and after every iteration) must be
///   compile-time constants; the body is unrolled once per iteration with iter_num a constant,
///   loop-carried values threaded through, and scan outputs stacked along a new axis 0.
/// - Scan: unrolled along its scan axes (scan_input_axes/_directions, scan_output_axes/
///   _directions of opset 9+; opset 8's batch axis and sequence_lens, which must be full).
/// Errors: kInvalidArgument for a malformed node; kUnimplemented for run-time trip counts or
/// conditions of a Loop, more than kMaxUnrolledNodes unrolled nodes, and zero iterations with
/// scan outputs (zero-sized tensors).
absl::StatusOr<std::vector<graph::Value*>> BuildControlFlow(
    ImportContext& ctx, const onnx::NodeProto& node,
    const std::map<std::string, graph::Value*>& values, const SubgraphImporter& import);

}  // namespace kiln::importer

#endif  // KILN_COMPILER_CORE_IMPORTER_ONNX_CONTROL_FLOW_H_
