// Folds an inference BatchNormalization into the Conv that feeds it by rewriting the Conv's
// weight and bias constants.
#ifndef KILN_COMPILER_CORE_PASSES_GRAPH_FOLD_BATCHNORM_H_
#define KILN_COMPILER_CORE_PASSES_GRAPH_FOLD_BATCHNORM_H_

#include <string_view>

#include "compiler_core/passes/graph/pass.h"

namespace kiln::passes {

/// Rewrites Conv → BatchNormalization (constant params, Conv output used only by the BN) into
/// one Conv with scaled weights and a shifted bias. Other BNs are left alone.
class FoldBatchNorm final : public GraphPass {
 public:
  std::string_view name() const override { return "fold-batchnorm"; }
  absl::StatusOr<bool> Run(graph::Graph& graph) override;
};

}  // namespace kiln::passes

#endif  // KILN_COMPILER_CORE_PASSES_GRAPH_FOLD_BATCHNORM_H_
