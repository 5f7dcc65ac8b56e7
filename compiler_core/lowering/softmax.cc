// Softmax / LogSoftmax over one axis (opset-13 semantics), numerically stable: per position of
// the other axes, a max pass, exp(x - max) into the result, a sum pass, then a normalize pass.
// The max and sum live in workspaces indexed by the other axes, so outer loops may run in
// parallel.
#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/lowering/op_lowering.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::lowering {

using loop::Expr;
using loop::Stmt;

absl::StatusOr<std::vector<Stmt>> LowerSoftmax(KernelBuilder& b, const graph::Node& node,
                                               const Epilogue& epi) {
  KILN_RETURN_IF_ERROR(epi.CheckSameDType(node));
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const DType dt = node.output(0)->type().dtype;
  const int64_t rank = static_cast<int64_t>(xs.size());
  int64_t axis = graph::AxisAttrs::Of(node).axis;
  if (axis < 0) axis += rank;
  if (rank == 0 || axis < 0 || axis >= rank) return NoLowering(node, "this axis");
  if (!IsFloat(dt)) return NoLowering(node, "integer operands");
  const bool log = node.op() == graph::OpKind::kLogSoftmax;

  loop::BufferRef x = b.Input(xv);
  loop::BufferRef out = b.out();
  std::vector<int64_t> ws_shape = xs;
  ws_shape[axis] = 1;
  loop::BufferRef max = b.Workspace("max", dt, ws_shape);
  loop::BufferRef sum = b.Workspace("sum", dt, ws_shape);

  std::vector<loop::Var> outer;
  std::vector<int64_t> outer_extents;
  std::vector<Expr> ws_idx;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis) {
      ws_idx.push_back(Idx(0));
      continue;
    }
    outer.push_back(b.NewVar(absl::StrCat("d", d)));
    outer_extents.push_back(xs[d]);
    ws_idx.push_back(loop::VarRef(outer.back()));
  }
  // One pass over the axis: a fresh variable named `<stage>.a` and the full index.
  auto axis_loop = [&](const std::string& stage, bool reduction, auto make_body) {
    loop::Var a = b.NewVar(stage + ".a");
    std::vector<Expr> full = ws_idx;
    full[axis] = loop::VarRef(a);
    return loop::For(a, xs[axis], make_body(full), loop::ForKind::kSerial, reduction);
  };
  Expr max_v = loop::Load(max, ws_idx), sum_v = loop::Load(sum, ws_idx);
  std::vector<Stmt> body;
  body.push_back(loop::Store(max, ws_idx, Lowest(dt)));
  body.push_back(axis_loop("max", true, [&](const std::vector<Expr>& i) {
    return loop::Store(max, ws_idx, loop::Max(max_v, loop::Load(x, i)));
  }));
  body.push_back(axis_loop("exp", false, [&](const std::vector<Expr>& i) {
    return loop::Store(out, i, loop::Unary(loop::UnaryOp::kExp, loop::Load(x, i) - max_v));
  }));
  body.push_back(loop::Store(sum, ws_idx, Const(0, dt)));
  body.push_back(axis_loop("sum", true, [&](const std::vector<Expr>& i) {
    return loop::Store(sum, ws_idx, sum_v + loop::Load(out, i));
  }));
  absl::Status status;
  body.push_back(axis_loop("norm", false, [&](const std::vector<Expr>& i) -> Stmt {
    Expr v = log ? loop::Load(x, i) - max_v - loop::Unary(loop::UnaryOp::kLog, sum_v)
                 : loop::Binary(loop::BinaryOp::kDiv, loop::Load(out, i), sum_v);
    absl::StatusOr<Expr> e = epi.Apply(v, i);
    if (!e.ok()) {
      status = e.status();
      return loop::Store(out, i, v);
    }
    return loop::Store(out, i, *e);
  }));
  KILN_RETURN_IF_ERROR(status);
  return std::vector<Stmt>{Nest(outer, outer_extents, loop::Block(std::move(body)))};
}

}  // namespace kiln::lowering
