// Applying a group's fused elementwise consumers at the final store of its anchor's result.
#include "compiler_core/lowering/op_lowering.h"

#include "absl/strings/str_cat.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::lowering {

using loop::Expr;
using loop::Stmt;

absl::Status NoLowering(const graph::Node& node, const std::string& what) {
  return absl::UnimplementedError(absl::StrCat("node '", node.name(), "' (",
                                               graph::OpName(node.op()), "): no lowering for ",
                                               what));
}

absl::StatusOr<Expr> Epilogue::Apply(Expr value, const std::vector<Expr>& out_idx) const {
  ValueExprs computed;
  computed[anchor_out_] = std::move(value);
  Expr result = computed[anchor_out_];
  for (const graph::Node* c : consumers_) {
    KILN_ASSIGN_OR_RETURN(result, LowerElementwiseNode(builder_, *c, out_idx, computed));
  }
  return result;
}

absl::Status Epilogue::CheckSameDType(const graph::Node& anchor) const {
  DType out = builder_.out()->dtype;
  if (out != anchor_out_->type().dtype) {
    return NoLowering(anchor, absl::StrCat("a fused epilogue changing the dtype to ",
                                           DTypeName(out)));
  }
  return absl::OkStatus();
}

absl::StatusOr<Stmt> Epilogue::FinalNest(
    const std::function<Expr(Expr, const std::vector<Expr>&)>& pre, loop::BufferRef src) const {
  loop::BufferRef out = builder_.out();
  if (src == nullptr) src = out;
  if (empty() && !pre && src == out) return Stmt();
  std::vector<loop::Var> vars = builder_.NewVars("epi.", AxisNames(out->shape.size()));
  std::vector<Expr> idx = Refs(vars);
  Expr value = loop::Load(src, idx);
  if (pre) value = pre(value, idx);
  KILN_ASSIGN_OR_RETURN(value, Apply(value, idx));
  return NestDims(vars, loop::BufferDims(*out), loop::Store(out, idx, value));
}

}  // namespace kiln::lowering
