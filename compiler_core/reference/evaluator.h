// The reference evaluator: a naive, obviously-correct implementation of every graph op over
// constant tensors. Constant folding uses it (so each op's meaning is written once) and tests
// use it as the numeric reference for generated code.
#ifndef KILN_COMPILER_CORE_REFERENCE_EVALUATOR_H_
#define KILN_COMPILER_CORE_REFERENCE_EVALUATOR_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/graph.h"

namespace kiln::reference {

using TensorPtr = std::shared_ptr<const Tensor>;

/// Evaluates one node. `inputs` matches node.inputs() (nullptr for omitted optional inputs).
/// Returns one tensor per node output, with the node's output types.
/// Errors: kUnimplemented for an op or attribute combination the evaluator lacks,
/// kInvalidArgument for inputs that contradict the node (wrong shape or dtype).
absl::StatusOr<std::vector<TensorPtr>> EvaluateNode(const graph::Node& node,
                                                    const std::vector<TensorPtr>& inputs);

/// Evaluates the whole graph on `inputs` (one per graph input, in order); returns the graph
/// outputs in order.
absl::StatusOr<std::vector<TensorPtr>> EvaluateGraph(const graph::Graph& graph,
                                                     const std::vector<TensorPtr>& inputs);

}  // namespace kiln::reference

#endif  // KILN_COMPILER_CORE_REFERENCE_EVALUATOR_H_
