// Folds nodes whose inputs are all constants into new constants, evaluating them with the
// reference evaluator (so each op's meaning is written once).
#ifndef KILN_COMPILER_CORE_PASSES_GRAPH_CONSTANT_FOLDING_H_
#define KILN_COMPILER_CORE_PASSES_GRAPH_CONSTANT_FOLDING_H_

#include <string_view>

#include "compiler_core/passes/graph/pass.h"

namespace kiln::passes {

/// Replaces every node whose inputs are all constants (or omitted) by constants holding its
/// results, computed by reference::EvaluateNode. Ops the evaluator lacks are left alone.
class ConstantFolding final : public GraphPass {
 public:
  std::string_view name() const override { return "constant-folding"; }
  absl::StatusOr<bool> Run(graph::Graph& graph) override;
};

}  // namespace kiln::passes

#endif  // KILN_COMPILER_CORE_PASSES_GRAPH_CONSTANT_FOLDING_H_
