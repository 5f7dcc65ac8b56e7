// Layout of constant matmul operands.
//
// What: for Gemm(A, B, C) with transB=1 and B a constant of rank 2 (shape [N, K]), a Transpose
//   node is evaluated with the reference evaluator (so the transpose's meaning is written once)
//   into a new constant of shape [K, N], the Gemm reads it and its transB becomes 0. The old
//   constant is never mutated (other nodes may share it); dce drops it when unused.
// Why: the matmul kernel vectorizes over the output columns j; with B stored [N, K] every
//   vector lane reads B with stride K (a gather), with [K, N] one contiguous load.
// Requires: no fusion groups assigned yet.
// Guarantees: the graph computes exactly the same values (a transpose only moves data).
//
//   before: %2 = const f32[1000,512] ...
//           %4 = Gemm(%0, %2, %3) {transB=1} : f32[1,1000]
//   after:  %5 = const f32[512,1000] ...
//           %4 = Gemm(%0, %5, %3) {transB=0} : f32[1,1000]
#include "compiler_core/passes/graph/matmul_layout.h"

#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/passes/graph/rewrite.h"
#include "compiler_core/reference/evaluator.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Value;

/// `value` transposed ([N, K] → [K, N]) as a new constant, computed by the reference evaluator.
absl::StatusOr<Value*> TransposedConstant(Graph& graph, Node& before, Value* value) {
  const TensorType& type = value->type();
  graph::AttrMap perm;
  perm.Set("perm", std::vector<int64_t>{1, 0});
  Node* transpose = graph.InsertNodeBefore(
      &before, OpKind::kTranspose, absl::StrCat(value->name(), "_t"), {value},
      {TensorType{type.dtype, {type.shape[1], type.shape[0]}}}, perm);
  absl::StatusOr<std::vector<reference::TensorPtr>> result =
      reference::EvaluateNode(*transpose, {value->constant()});
  graph.RemoveNode(transpose);
  if (!result.ok()) return result.status();
  return graph.AddConstant(absl::StrCat(value->name(), "_t"), (*result)[0]);
}

/// Transposed copies already made, by source constant: Gemms sharing a weight share its
/// transpose. Only looked up, never iterated, so pointer keys keep the output deterministic.
using TransposeCache = std::unordered_map<const Value*, Value*>;

/// The pattern: Gemm {transB=1} with a constant rank-2 B reads a pre-transposed B instead.
absl::StatusOr<bool> PretransposeGemmWeight(Node& node, Rewriter& rewriter,
                                            TransposeCache& cache) {
  if (node.op() != OpKind::kGemm || !graph::GemmAttrs::Of(node).transB) return false;
  Value* b = node.input(1);
  if (b == nullptr || !b->is_constant() || b->type().rank() != 2) return false;
  Value*& transposed = cache[b];
  if (transposed == nullptr) {
    KILN_ASSIGN_OR_RETURN(transposed, TransposedConstant(rewriter.graph(), node, b));
  }
  node.set_input(1, transposed);
  node.attrs().Set("transB", int64_t{0});
  return true;
}

}  // namespace

absl::StatusOr<bool> MatMulWeightLayout::Run(Graph& graph) {
  KILN_RETURN_IF_ERROR(CheckRunsBeforeFusion(graph, name()));
  TransposeCache cache;
  return ApplyPatterns(graph, {[&cache](Node& node, Rewriter& rewriter) {
                         return PretransposeGemmWeight(node, rewriter, cache);
                       }});
}

}  // namespace kiln::passes
