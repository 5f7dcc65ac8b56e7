// Packs constant matmul weights into column panels: the B of a Gemm/MatMul that is a constant
// [K, N] matrix becomes [ceil(N/nr), K, nr] (b_layout="packed<nr>", see
// ir/graph/matmul_packing.h), so the register-blocked micro-kernel streams each panel
// contiguously instead of striding by N (power-of-two N maps every row to the same L1 sets).
#ifndef KILN_COMPILER_CORE_PASSES_GRAPH_MATMUL_PACK_H_
#define KILN_COMPILER_CORE_PASSES_GRAPH_MATMUL_PACK_H_

#include <string_view>

#include "compiler_core/passes/graph/pass.h"

namespace kiln::passes {

/// Options of the matmul-pack pass.
struct MatMulPackOptions {
  /// The target's f32 SIMD lanes: panels are 2 vectors (the micro-kernel's nr) wide.
  int f32_lanes = 16;
  /// False: the pass changes nothing.
  bool enabled = true;
};

/// What: rewrites Gemm(A, B, C) {transB=0} and MatMul(A, B) (A of rank >= 2) whose B is a
///   constant f32 [K, N] with N >= nr into the same op reading a new constant B packed to
///   [ceil(N/nr), K, nr] (zero-padded in the N tail), with attributes b_layout="packed<nr>" and
///   b_cols=N. Ops sharing a weight share its packed copy.
/// Requires: no fusion groups assigned yet; run after matmul-layout (which turns transB=1
///   weights into [K, N]).
/// Guarantees: the graph computes exactly the same values (packing only moves data).
class MatMulPack final : public GraphPass {
 public:
  explicit MatMulPack(MatMulPackOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "matmul-pack"; }
  absl::StatusOr<bool> Run(graph::Graph& graph) override;

 private:
  MatMulPackOptions options_;
};

}  // namespace kiln::passes

#endif  // KILN_COMPILER_CORE_PASSES_GRAPH_MATMUL_PACK_H_
