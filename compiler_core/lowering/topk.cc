// TopK: per slice along the axis, k selection passes over the axis, each picking the best
// element not yet taken (largest or smallest; ties go to the lower index, as ONNX requires),
// writing values and int64 indices in sorted order. A "taken" workspace marks chosen elements.
#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/lowering/op_lowering.h"

namespace kiln::lowering {

using loop::BinaryOp;
using loop::Expr;
using loop::Stmt;

absl::StatusOr<std::vector<Stmt>> LowerTopK(KernelBuilder& b, const graph::Node& node,
                                            const Epilogue& epi) {
  if (!epi.empty()) return NoLowering(node, "fused consumers");
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const int64_t rank = static_cast<int64_t>(xs.size());
  const graph::TopKAttrs attrs = graph::TopKAttrs::Of(node);
  int64_t axis = attrs.axis;
  if (axis < 0) axis += rank;
  if (rank == 0 || axis < 0 || axis >= rank) return NoLowering(node, "this axis");
  const bool largest = attrs.largest;
  const graph::Value* values = node.output(0);
  const graph::Value* indices = node.outputs().size() > 1 ? node.output(1) : nullptr;
  const int64_t n = xs[axis];
  const int64_t k = values->type().shape[axis];
  if (k <= 0 || n <= 0 || k > n) return NoLowering(node, absl::StrCat("k = ", k));

  loop::BufferRef x = b.Input(xv);
  loop::BufferRef out = b.out();
  loop::BufferRef ind = indices != nullptr
                            ? b.ExtraOutput(indices)
                            : b.Workspace("ind", DType::kInt64, values->type().shape);
  loop::BufferRef taken = b.Workspace("taken", DType::kInt8, xs);

  std::vector<loop::Var> outer;
  std::vector<int64_t> outer_extents;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis) continue;
    outer.push_back(b.NewVar(absl::StrCat("d", d)));
    outer_extents.push_back(xs[d]);
  }
  // Index of a tensor shaped like x (or the results) with axis position `p`.
  auto at = [&](Expr p) {
    std::vector<Expr> idx;
    size_t o = 0;
    for (int64_t d = 0; d < rank; ++d) idx.push_back(d == axis ? p : loop::VarRef(outer[o++]));
    return idx;
  };
  loop::Var clr = b.NewVar("clr.a");
  loop::Var j = b.NewVar("j");
  loop::Var a = b.NewVar("a");
  const Expr ar = loop::VarRef(a);
  const std::vector<Expr> oidx = at(loop::VarRef(j));

  Stmt clear = loop::For(
      clr, n, loop::Store(taken, at(loop::VarRef(clr)), loop::IntImm(0, DType::kInt8)));
  Expr v = loop::Load(x, at(ar));
  Expr cur = loop::Load(out, oidx);
  Expr cur_i = loop::Load(ind, oidx);
  Expr free = Bin(BinaryOp::kEq, loop::Load(taken, at(ar)), loop::IntImm(0, DType::kInt8));
  Expr beats = Bin(largest ? BinaryOp::kGt : BinaryOp::kLt, v, cur);  // strict: lower index wins
  Expr better = Bin(BinaryOp::kAnd, free,
                    Bin(BinaryOp::kOr, Bin(BinaryOp::kLt, cur_i, Idx(0)), beats));
  // The index store decides; the value follows it (ind == a only if chosen at this a).
  Stmt scan = loop::Block({
      loop::Store(ind, oidx, loop::Select(better, ar, cur_i)),
      loop::Store(out, oidx, loop::Select(Bin(BinaryOp::kEq, loop::Load(ind, oidx), ar), v, cur)),
  });
  Stmt per_rank = loop::Block({
      loop::Store(ind, oidx, Idx(-1)),
      loop::Store(out, oidx, loop::Load(x, at(Idx(0)))),
      loop::For(a, n, scan, loop::ForKind::kSerial, /*is_reduction=*/true),
      loop::Store(taken, at(IdxClamp(loop::Load(ind, oidx), n)), loop::IntImm(1, DType::kInt8)),
  });
  // Each rank reads the "taken" marks of the earlier ones: j is sequential (a reduction).
  Stmt body = loop::Block({clear, loop::For(j, k, per_rank, loop::ForKind::kSerial,
                                            /*is_reduction=*/true)});
  return std::vector<Stmt>{Nest(outer, outer_extents, body)};
}

}  // namespace kiln::lowering
