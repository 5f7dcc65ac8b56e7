// The matmul-pack pass: packs constant matmul weights into column panels (see matmul_pack.h).
//
//   before: %2 = const f32[512,1000] ...
//           %4 = Gemm(%0, %2, %3) {transB=0} : f32[1,1000]
//   after:  %5 = const f32[32,512,32] ...
//           %4 = Gemm(%0, %5, %3) {b_cols=1000, b_layout="packed32", transB=0} : f32[1,1000]
#include "compiler_core/passes/graph/matmul_pack.h"

#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/matmul_packing.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/passes/graph/rewrite.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Value;

/// Packed copies already made, by source constant. Only looked up, never iterated, so pointer
/// keys keep the output deterministic.
using PackCache = std::unordered_map<const Value*, Value*>;

/// The pattern: a Gemm {transB=0} or MatMul (A of rank >= 2) with a constant f32 [K, N] B,
/// N >= nr, not packed yet, reads B packed in panels of nr.
bool PackWeight(Node& node, Rewriter& rewriter, PackCache& cache, int64_t nr) {
  if (node.op() != OpKind::kGemm && node.op() != OpKind::kMatMul) return false;
  if (graph::PackedBPanelWidth(node) != 0) return false;
  if (node.op() == OpKind::kGemm && graph::GemmAttrs::Of(node).transB) return false;
  if (node.op() == OpKind::kMatMul && node.input(0)->type().rank() < 2) return false;
  Value* b = node.input(1);
  if (b == nullptr || !b->is_constant() || b->type().rank() != 2 ||
      b->type().dtype != DType::kFloat32 || b->type().shape[1] < nr) {
    return false;
  }
  Value*& packed = cache[b];
  if (packed == nullptr) {
    packed = rewriter.graph().AddConstant(absl::StrCat(b->name(), "_p", nr),
                                          graph::PackMatMulB(*b->constant(), nr));
  }
  node.set_input(1, packed);
  node.attrs().Set("b_layout", graph::PackedBLayout(nr));
  node.attrs().Set("b_cols", b->type().shape[1]);
  return true;
}

}  // namespace

absl::StatusOr<bool> MatMulPack::Run(Graph& graph) {
  KILN_RETURN_IF_ERROR(CheckRunsBeforeFusion(graph, name()));
  if (!options_.enabled || options_.f32_lanes < 1) return false;
  const int64_t nr = 2 * int64_t{options_.f32_lanes};
  PackCache cache;
  return ApplyPatterns(graph, {[&cache, nr](Node& node, Rewriter& rewriter) -> absl::StatusOr<bool> {
                         return PackWeight(node, rewriter, cache, nr);
                       }});
}

}  // namespace kiln::passes
