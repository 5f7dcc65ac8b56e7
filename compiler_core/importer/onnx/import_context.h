// Shared state of one ONNX import: the graph under construction, the ONNX-name → value map,
// the opset, and helpers that the per-op builders use to emit canonical nodes.
#ifndef KILN_COMPILER_CORE_IMPORTER_ONNX_IMPORT_CONTEXT_H_
#define KILN_COMPILER_CORE_IMPORTER_ONNX_IMPORT_CONTEXT_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/graph.h"
#include "onnx/onnx_pb.h"

namespace kiln::importer {

/// One ONNX node as the builders see it: converted attributes and resolved inputs.
struct OnnxNode {
  const onnx::NodeProto* proto = nullptr;
  graph::OpKind op;
  std::string name;                   // node name, or its first output's name when unnamed
  graph::AttrMap attrs;               // every ONNX attribute, converted
  std::vector<graph::Value*> inputs;  // nullptr for omitted ("") optional inputs

  /// "node 'name' (OpType): " for error messages.
  std::string Prefix() const;
  graph::Value* input(int i) const {
    return i < static_cast<int>(inputs.size()) ? inputs[i] : nullptr;
  }
};

/// Builder result: one value per ONNX output (nullptr where the canonical form drops it).
using BuiltOutputs = std::vector<graph::Value*>;

class ImportContext {
 public:
  ImportContext(graph::Graph& graph, int opset) : graph_(graph), opset_(opset) {}

  graph::Graph& graph() { return graph_; }
  /// Default-domain opset of the model.
  int opset() const { return opset_; }
  /// Whether an ONNX value name is read by some node or is a graph output.
  bool IsUsed(const std::string& name) const { return used_.count(name) != 0; }
  void MarkUsed(const std::string& name) { used_.insert(name); }

  /// Appends a node, typing its outputs with InferOutputTypes.
  absl::StatusOr<graph::Node*> Emit(graph::OpKind op, const std::string& name,
                                    std::vector<graph::Value*> inputs, graph::AttrMap attrs,
                                    int num_outputs = 1);
  /// New constants: 1-D i64 vector, or a scalar (rank 0) of `dtype`.
  graph::Value* ConstI64(const std::string& name, const std::vector<int64_t>& values);
  graph::Value* ConstScalar(const std::string& name, DType dtype, double value);

  /// The integer values of constant input `i` of `node` (kUnimplemented if not constant).
  absl::StatusOr<std::vector<int64_t>> ConstInts(const OnnxNode& node, int i) const;

 private:
  graph::Graph& graph_;
  int opset_;
  std::set<std::string> used_;
};

/// Builds the canonical Kiln node(s) for one ONNX node (see importer.h and the per-op
/// builders). Errors name the node.
absl::StatusOr<BuiltOutputs> BuildNode(ImportContext& ctx, const OnnxNode& node);

/// Per-family builders, dispatched from BuildNode.
absl::StatusOr<BuiltOutputs> BuildWindowOp(ImportContext& ctx, const OnnxNode& node);
absl::StatusOr<BuiltOutputs> BuildShapeOp(ImportContext& ctx, const OnnxNode& node);

}  // namespace kiln::importer

#endif  // KILN_COMPILER_CORE_IMPORTER_ONNX_IMPORT_CONTEXT_H_
