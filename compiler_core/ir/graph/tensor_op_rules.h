// Type and shape rules of the tensor, reduction and logic ops (comparisons, logic, unary math,
// reductions, ArgMax/ArgMin, index-driven data movement, Einsum), and the Einsum equation
// parser shared by the shape rule, the reference evaluator and the lowering.
#ifndef KILN_COMPILER_CORE_IR_GRAPH_TENSOR_OP_RULES_H_
#define KILN_COMPILER_CORE_IR_GRAPH_TENSOR_OP_RULES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/graph.h"

namespace kiln::graph {

/// Output types of a node whose op is in the "Tensor, reduction and logic ops" section of
/// ops.def. Called from InferOutputTypes; same error conventions.
absl::StatusOr<std::vector<TensorType>> InferTensorOpTypes(const Node& node);

/// A parsed Einsum equation with every label resolved to a size. Labels are letters; an
/// ellipsis is expanded into labels '0', '1', ... (its broadcast dims, right-aligned).
struct EinsumSpec {
  std::vector<std::string> inputs;  // labels of each input, one char per dim
  std::string output;               // labels of the output, one char per dim
  std::string reduced;              // labels summed over (in none of the output)
  /// Size of each label (indexed by the char); 0 for unused labels.
  int64_t size[128] = {};
};

/// Parses `equation` for inputs of `shapes` (implicit output: labels used once, sorted, after
/// the ellipsis dims). Errors: kInvalidArgument for malformed equations or size mismatches
/// (a size-1 dim broadcasts against a larger one only under the ellipsis).
absl::StatusOr<EinsumSpec> ParseEinsum(const std::string& equation,
                                       const std::vector<std::vector<int64_t>>& shapes);

/// The axes a reduction node reduces: its canonical "axes" attribute, or every axis when the
/// attribute is absent. Sorted, non-negative.
std::vector<int64_t> ReductionAxes(const Node& node);

}  // namespace kiln::graph

#endif  // KILN_COMPILER_CORE_IR_GRAPH_TENSOR_OP_RULES_H_
