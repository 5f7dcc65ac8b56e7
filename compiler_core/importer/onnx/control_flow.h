// ONNX control flow (If, Loop, Scan) imported by inlining subgraphs into the static graph.
#ifndef KILN_COMPILER_CORE_IMPORTER_ONNX_CONTROL_FLOW_H_
#define KILN_COMPILER_CORE_IMPORTER_ONNX_CONTROL_FLOW_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/importer/onnx/import_context.h"
#include "compiler_core/importer/onnx/model_checks.h"
#include "onnx/onnx_pb.h"

namespace kiln::importer {

/// Most body nodes a Loop or Scan is unrolled into; a larger one runs at run time over its
/// compiled body (graph op Loop), as does every Loop whose trip count or condition is a run-time
/// value.
inline constexpr int64_t kMaxUnrolledLoopNodes = 512;

/// Imports subgraph `body` into the graph under construction and returns the values of its
/// outputs; a sequence output is null, its elements ctx.Sequence(its name) until the next import
/// of the body. Names resolve in `bound` (the body's inputs) first, then in the enclosing scopes
/// (outer-scope values, sequences by name); values the body defines are named `prefix` + their
/// ONNX name.
using SubgraphImporter = std::function<absl::StatusOr<std::vector<graph::Value*>>(
    const onnx::GraphProto& body, const std::map<std::string, graph::Value*>& bound,
    const std::string& prefix)>;

/// OK when none of subgraph `body`'s imported outputs `outs` is a sequence (null); else
/// kUnimplemented naming the output.
absl::Status RequireTensorOutputs(const std::vector<graph::Value*>& outs,
                                  const onnx::GraphProto& body);

/// A Loop body imported into a graph of its own (graph op Loop's "body"): inputs
/// (iteration_num i64 [], cond bool [], the carried values, then one per outer-scope value the
/// body reads that is not a constant), outputs as the ONNX body's. Outer-scope constants become
/// the body's own constants.
struct LoopBody {
  std::shared_ptr<graph::Graph> graph;
  std::vector<graph::Value*> outer_inputs;  // the outer values behind the trailing body inputs
};

/// Imports Loop body `body` with loop-carried values of `carried` types into a new graph named
/// `name`. `aliases` name outer values the body reads under names of its own (a Scan's inputs,
/// sliced per iteration by nodes the Scan adds to its body). Errors: the body's nodes' import
/// errors; kUnimplemented for an outer-scope sequence.
using LoopBodyImporter = std::function<absl::StatusOr<LoopBody>(
    const onnx::GraphProto& body, const std::vector<TensorType>& carried,
    const std::map<std::string, graph::Value*>& aliases, const std::string& name)>;

/// The outputs of the If, Loop or Scan `node` (inputs resolved in `values`) (ONNX operator spec,
/// opsets 1-21):
/// - If: a condition that is a compile-time constant imports its taken branch only. On a run-time
///   condition each branch becomes a graph Loop of one iteration when taken and none otherwise
///   (its outputs carried from zeros), so only the selected branch runs, and a Where per output
///   selects; branches that cannot be imported on their own (sequence outputs) are imported
///   inline and both run, each output (each element of a sequence) selected with Where. Both
///   branches must give each output one type (else kUnimplemented).
/// - Loop: when the trip count M and the condition (initial, and after every iteration) are
///   compile-time constants and the loop is small (kMaxUnrolledLoopNodes), the body is unrolled
///   once per iteration with iter_num a constant, loop-carried values (tensors or sequences)
///   threaded through, and scan outputs stacked along a new axis 0. Otherwise it becomes a graph
///   Loop node over the body imported by `import_body`, run at run time; its scan outputs have the
///   leading dim M (a constant) or the one ONNX shape inference or the declared graph output gives.
/// - Scan (scan_input_axes/_directions, scan_output_axes/_directions of opset 9+; opset 8's
///   batch axis and sequence_lens, which must be full): unrolled along its scan axes when small
///   (kMaxUnrolledLoopNodes), else a graph Loop node of its length over its body, which reads
///   each scan input at the iteration's index (Gather); the scan outputs are reversed (Slice) and
///   moved to their axes (Transpose) after the Loop.
/// Errors: kInvalidArgument for a malformed node; kUnimplemented for a run-time Loop whose scan
/// outputs have no static length, loop-carried values or Scan states whose type changes, and
/// zero iterations with scan outputs (zero-sized tensors).
absl::StatusOr<std::vector<graph::Value*>> BuildControlFlow(
    ImportContext& ctx, const onnx::NodeProto& node,
    const std::map<std::string, graph::Value*>& values, const SubgraphImporter& import,
    const LoopBodyImporter& import_body);

}  // namespace kiln::importer

#endif  // KILN_COMPILER_CORE_IMPORTER_ONNX_CONTROL_FLOW_H_
