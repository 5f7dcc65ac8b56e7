// Dead-code elimination: removes nodes none of whose results reach a graph output.
#ifndef KILN_COMPILER_CORE_PASSES_GRAPH_DCE_H_
#define KILN_COMPILER_CORE_PASSES_GRAPH_DCE_H_

#include <string_view>

#include "compiler_core/passes/graph/pass.h"

namespace kiln::passes {

/// Removes nodes whose results are unused and are not graph outputs (transitively).
/// All graph ops are side-effect free.
class DeadCodeElimination final : public GraphPass {
 public:
  std::string_view name() const override { return "dce"; }
  absl::StatusOr<bool> Run(graph::Graph& graph) override;
};

}  // namespace kiln::passes

#endif  // KILN_COMPILER_CORE_PASSES_GRAPH_DCE_H_
