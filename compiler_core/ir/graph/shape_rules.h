// Type and shape rules of every op in ops.def: what a node's outputs are, given its inputs and
// attributes. The importer uses them to type nodes, the verifier to check them.
#ifndef KILN_COMPILER_CORE_IR_GRAPH_SHAPE_RULES_H_
#define KILN_COMPILER_CORE_IR_GRAPH_SHAPE_RULES_H_

#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/graph.h"

namespace kiln::graph {

/// Output types of `node` from its input types, attributes and, where the op needs them
/// (Reshape's shape, Slice's starts/ends, ...), constant input values.
/// Errors: kInvalidArgument naming the node and the violated constraint, e.g.
/// "node 'conv_3' (Conv): input 1 has rank 3, expected 4"; kUnimplemented when a needed
/// input is not constant.
absl::StatusOr<std::vector<TensorType>> InferOutputTypes(const Node& node);

/// The dims [first, last) of its input that a Shape node reads: its start and end attributes,
/// negative ones counted from the end, clamped to [0, rank] (ONNX Shape-15).
std::pair<int64_t, int64_t> ShapeOpDims(const Node& node, int64_t rank);

/// Multidirectional (NumPy) broadcast of two shapes; kInvalidArgument if incompatible.
absl::StatusOr<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a,
                                                     const std::vector<int64_t>& b);

}  // namespace kiln::graph

#endif  // KILN_COMPILER_CORE_IR_GRAPH_SHAPE_RULES_H_
