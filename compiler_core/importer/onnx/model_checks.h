// Pre-import passes over a ModelProto: opset and op support, definedness and topological
// order of nodes, external data inlining, and the ONNX checker and shape inference.
#ifndef KILN_COMPILER_CORE_IMPORTER_ONNX_MODEL_CHECKS_H_
#define KILN_COMPILER_CORE_IMPORTER_ONNX_MODEL_CHECKS_H_

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/importer/onnx/input_shapes.h"
#include "onnx/onnx_pb.h"

namespace kiln::importer {

/// The default-domain opset; kUnimplemented outside 7..17 or for other domains' nodes.
absl::StatusOr<int> CheckOpsets(const onnx::ModelProto& model);

/// kUnimplemented naming the first node whose op Kiln lacks.
/// Upgrades a model of default-domain opset 1..6 to opset 7 in place with the ONNX version
/// converter (updating `opset`); a no-op for newer models. Errors: kUnimplemented when the
/// converter cannot upgrade the model.
absl::Status UpgradeLegacyOpset(onnx::ModelProto& model, int& opset);

/// kUnimplemented naming the first node (in the graph or any If/Loop/Scan subgraph) whose op
/// Kiln has no builder for, or a non-control-flow node with a graph attribute.
absl::Status CheckOpsSupported(const onnx::ModelProto& model);

/// kInvalidArgument naming the first node (in the graph or any subgraph) with an attribute that
/// ONNX shape inference divides by and that is not positive: strides, dilations, kernel_shape,
/// or blocksize (whose square must also fit int64); and a Conv or ConvTranspose whose declared
/// input ranks are inconsistent (input 0 below rank 3, input 1 of another rank). Runs before
/// CheckAndInfer, which would otherwise die on a division by zero or an out-of-range index
/// inside the ONNX library.
absl::Status CheckBeforeShapeInference(const onnx::ModelProto& model);

/// Whether `op_type` (default domain) is If, Loop or Scan (imported by control_flow.h).
bool IsControlFlowOp(const std::string& op_type);

/// Checks that every node input is defined (graph input, initializer or node output) and
/// reorders the nodes topologically (stable); kInvalidArgument naming a node on a cycle or
/// reading an undefined value.
absl::Status SortNodes(onnx::GraphProto& graph);

/// Reads every external-data tensor (initializers and Constant attributes) into raw_data,
/// refusing (kInvalidArgument) one whose claimed size passes `max_bytes` before reading it.
/// An empty `base_dir` (a model that came as bytes) refuses external data: kInvalidArgument.
absl::Status InlineExternalData(onnx::GraphProto& graph, const std::string& base_dir,
                                int64_t max_bytes);

/// The files holding the external data of the serialized model `bytes` (initializers and
/// Constant attributes, subgraphs included), each `base_dir`/location, sorted, without
/// duplicates; empty when it has none. For build systems' dependency lists (kiln compile
/// --depfile). Errors: kInvalidArgument (not a ModelProto).
absl::StatusOr<std::vector<std::string>> ExternalDataFiles(std::string_view bytes,
                                                           const std::string& base_dir);

/// The serialized model `bytes` with its external data (relative to `base_dir`, the model
/// file's directory) inlined; `bytes` unchanged when it has none. For clients that upload a
/// model file. Errors: kInvalidArgument (not a ModelProto, a bad reference, a model past the
/// 2 GiB protobuf limit once inlined), kNotFound (a missing data file).
absl::StatusOr<std::string> InlineExternalDataOfModel(std::string_view bytes,
                                                      const std::string& base_dir);

/// Binds the symbolic dims of `graph`'s inputs (initializers excluded) in place: an input named
/// in `shapes` takes that shape, every other symbolic dim the value its `dim_param` got from a
/// named input; graph outputs and value_info with a bound dim_param get its value too.
/// Errors (kInvalidArgument): a graph input declaring a negative dim, a name that is not a graph
/// input, a rank that differs, a shape that contradicts a fixed dim, a dim_param given two
/// values, and any symbolic dim left unbound (naming each such input, its dims and the
/// --input-shape flag).
absl::Status BindInputShapes(const InputShapes& shapes, onnx::GraphProto& graph);

/// Turns the graph inputs named in `constants` (name → serialized onnx.TensorProto) into
/// initializers holding those tensors. Errors (kInvalidArgument, naming the input): not a graph
/// input, bytes that are not a TensorProto, another element type, another rank, or a dim that
/// contradicts a fixed dim of the input's declared shape (symbolic dims take the tensor's).
absl::Status BindConstantInputs(const std::map<std::string, std::string>& constants,
                                onnx::GraphProto& graph);

/// Runs onnx::checker and onnx::shape_inference; returns the inferred type of every value
/// name ONNX could type (value_info and graph outputs). A symbolic dim that inference invents
/// for an intermediate value (e.g. the length of a Range over runtime operands) and that flows
/// unchanged into a graph output takes that output's declared static dim. kInvalidArgument on
/// checker failure.
absl::StatusOr<std::map<std::string, onnx::TypeProto>> CheckAndInfer(onnx::ModelProto& model);

/// Display name of a node: its name, or its first output's name when unnamed.
std::string NodeDisplayName(const onnx::NodeProto& node);

/// "node 'NAME' (OpType): ", NAME as NodeDisplayName gives it: the start of error messages.
std::string NodePrefix(const onnx::NodeProto& node);

/// Adds to `names` the names that `node`'s subgraphs read from enclosing scopes (outer-scope
/// values, ONNX IR spec "Names Within a Graph").
void OuterScopeNames(const onnx::NodeProto& node, std::set<std::string>& names);
/// Adds to `names` the names that subgraph `g` (and the subgraphs in it) read from enclosing
/// scopes: every name read that no graph on the way defines.
void GraphOuterScopeNames(const onnx::GraphProto& g, std::set<std::string>& names);

}  // namespace kiln::importer

#endif  // KILN_COMPILER_CORE_IMPORTER_ONNX_MODEL_CHECKS_H_
