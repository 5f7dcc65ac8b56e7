// Algebraic simplification: small local rewrites that remove no-op nodes, merge chains of data
// movement, and form Gelu from the Erf/Tanh subgraphs that exporters emit.
#ifndef KILN_COMPILER_CORE_PASSES_GRAPH_SIMPLIFY_H_
#define KILN_COMPILER_CORE_PASSES_GRAPH_SIMPLIFY_H_

#include <string_view>

#include "compiler_core/passes/graph/pass.h"

namespace kiln::passes {

/// Removes identity-like nodes (Identity, Dropout, zero Pad, identity Transpose, same-dtype
/// Cast, full Slice, same-shape Expand/Reshape, one-input Concat), cancels or merges
/// Transpose pairs, folds reshape-like chains into one Reshape, and replaces the exact and
/// tanh-approximate Gelu subgraphs with one Gelu node.
class Simplify final : public GraphPass {
 public:
  std::string_view name() const override { return "simplify"; }
  absl::StatusOr<bool> Run(graph::Graph& graph) override;
};

}  // namespace kiln::passes

#endif  // KILN_COMPILER_CORE_PASSES_GRAPH_SIMPLIFY_H_
