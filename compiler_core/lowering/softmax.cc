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
  const std::vector<Expr> dims = loop::BufferDims(*x);
  // With symbolic dims the max and sum are scalars local to each row (Allocate inside the
  // outer loops, so those may still run in parallel) instead of workspaces over the rows.
  const bool symbolic = x->is_symbolic();
  std::vector<int64_t> ws_shape = xs;
  ws_shape[axis] = 1;
  loop::BufferRef max, sum;
  if (symbolic) {
    max = loop::MakeBuffer("max", dt, {1}, loop::Buffer::Scope::kLocal);
    sum = loop::MakeBuffer("sum", dt, {1}, loop::Buffer::Scope::kLocal);
  } else {
    max = b.Workspace("max", dt, ws_shape);
    sum = b.Workspace("sum", dt, ws_shape);
  }

  std::vector<loop::Var> outer;
  std::vector<Expr> outer_extents;
  std::vector<Expr> ws_idx;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis) {
      ws_idx.push_back(Idx(0));
      continue;
    }
    outer.push_back(b.NewVar(absl::StrCat("d", d)));
    outer_extents.push_back(dims[d]);
    ws_idx.push_back(loop::VarRef(outer.back()));
  }
  const std::vector<Expr> scalar_idx = symbolic ? std::vector<Expr>{Idx(0)} : ws_idx;
  // One pass over the axis: a fresh variable named `<stage>.a` and the full index.
  auto axis_loop = [&](const std::string& stage, bool reduction, auto make_body) {
    loop::Var a = b.NewVar(stage + ".a");
    std::vector<Expr> full = ws_idx;
    full[axis] = loop::VarRef(a);
    return NestDims({a}, {dims[axis]}, make_body(full), {reduction});
  };
  Expr max_v = loop::Load(max, scalar_idx), sum_v = loop::Load(sum, scalar_idx);
  std::vector<Stmt> body;
  body.push_back(loop::Store(max, scalar_idx, Lowest(dt)));
  body.push_back(axis_loop("max", true, [&](const std::vector<Expr>& i) {
    return loop::Store(max, scalar_idx, loop::Max(max_v, loop::Load(x, i)));
  }));
  body.push_back(axis_loop("exp", false, [&](const std::vector<Expr>& i) {
    return loop::Store(out, i, loop::Unary(loop::UnaryOp::kExp, loop::Load(x, i) - max_v));
  }));
  body.push_back(loop::Store(sum, scalar_idx, Const(0, dt)));
  body.push_back(axis_loop("sum", true, [&](const std::vector<Expr>& i) {
    return loop::Store(sum, scalar_idx, sum_v + loop::Load(out, i));
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
  Stmt row = loop::Block(std::move(body));
  if (symbolic) row = loop::Allocate(max, loop::Allocate(sum, row));
  return std::vector<Stmt>{NestDims(outer, outer_extents, row)};
}

}  // namespace kiln::lowering
