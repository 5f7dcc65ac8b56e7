// Common-subexpression elimination: merges equal nodes and equal constants.
#ifndef KILN_COMPILER_CORE_PASSES_GRAPH_CSE_H_
#define KILN_COMPILER_CORE_PASSES_GRAPH_CSE_H_

#include <string_view>

#include "compiler_core/passes/graph/pass.h"

namespace kiln::passes {

/// Merges nodes with the same op, inputs, attributes and output types into the first such
/// node, and constants with the same type and bytes into the first such constant.
class CommonSubexpressionElimination final : public GraphPass {
 public:
  std::string_view name() const override { return "cse"; }
  absl::StatusOr<bool> Run(graph::Graph& graph) override;
};

}  // namespace kiln::passes

#endif  // KILN_COMPILER_CORE_PASSES_GRAPH_CSE_H_
