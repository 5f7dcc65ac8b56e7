// Chooses the layout of constant matmul operands: a Gemm whose B is a constant stored [N, K]
// (transB=1, as PyTorch exports every Linear layer) gets B pre-transposed to [K, N], so the
// lowered kernel reads B rows contiguously in its vectorized j loop.
#ifndef KILN_COMPILER_CORE_PASSES_GRAPH_MATMUL_LAYOUT_H_
#define KILN_COMPILER_CORE_PASSES_GRAPH_MATMUL_LAYOUT_H_

#include <string_view>

#include "compiler_core/passes/graph/pass.h"

namespace kiln::passes {

/// Rewrites Gemm(A, B, C) {transB=1} with a constant rank-2 B into Gemm(A, Bᵀ, C) {transB=0}
/// reading a new constant Bᵀ computed by the reference evaluator's Transpose. Other nodes are
/// left alone.
class MatMulWeightLayout final : public GraphPass {
 public:
  std::string_view name() const override { return "matmul-layout"; }
  absl::StatusOr<bool> Run(graph::Graph& graph) override;
};

}  // namespace kiln::passes

#endif  // KILN_COMPILER_CORE_PASSES_GRAPH_MATMUL_LAYOUT_H_
