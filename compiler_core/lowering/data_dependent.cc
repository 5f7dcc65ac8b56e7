// NonZero, Compress, Unique and NonMaxSuppression: serial nests (every loop a reduction: each
// step reads what the earlier ones wrote) over i64 counters in workspaces. Each kernel also
// stores the output shape the data give (KernelBuilder::ShapeCheck), which the runtime compares
// with the compiled one, or, for an output sized by its upper bound ("bounded"), trims the
// graph output to (KernelBuilder::BoundedShape); every store index is clamped, so data that
// give another shape never write out of bounds. RuntimeCheck copies its input and stores the
// values to check.
// - NonZero: one pass in row-major order; a non-zero element writes its index into column
//   "count" and bumps the count.
// - Compress: one pass over the condition; a true position copies its slice into slot "count".
// - Unique, O(n^2 * slice) compares for n slices: "rep" (the first slice equal to each one),
//   then "pos" (each first occurrence's rank: the number of first occurrences before it, in
//   order of occurrence or, sorted, lexicographically smaller), then the outputs.
// - NonMaxSuppression, per batch and class: each box's rank in descending score order (ties:
//   lower index first; O(N^2) compares), the boxes in that order, then the greedy pass that
//   keeps a box (list "kept") unless a kept one overlaps it past the IoU threshold.
#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/lowering/op_lowering.h"

namespace kiln::lowering {
namespace {

using graph::OpKind;
using loop::BinaryOp;
using loop::Expr;
using loop::Stmt;

constexpr DType kI64 = DType::kInt64;
constexpr DType kI8 = DType::kInt8;

Expr Eq(Expr a, Expr b) { return Bin(BinaryOp::kEq, std::move(a), std::move(b)); }
Expr Ne(Expr a, Expr b) { return Bin(BinaryOp::kNe, std::move(a), std::move(b)); }
Expr Lt(Expr a, Expr b) { return Bin(BinaryOp::kLt, std::move(a), std::move(b)); }
Expr And(Expr a, Expr b) { return Bin(BinaryOp::kAnd, std::move(a), std::move(b)); }
Expr I8(int64_t v) { return loop::IntImm(v, kI8); }

/// "node 'y' (NonZero): " for the shape check's message.
std::string What(const graph::Node& node) {
  return absl::StrCat("node '", node.name(), "' (", graph::OpName(node.op()), "): the data");
}

/// The output-shape check of a data-dependent op: against the static shape, or, for a bounded
/// output (attribute "bounded"), the run-time shape of the graph output it is.
Stmt OutputShapeCheck(KernelBuilder& b, const graph::Node& node, const std::vector<Expr>& dims,
                      const std::vector<int64_t>& shape) {
  if (graph::CommonAttrs::Of(node).bounded) return b.BoundedShape(dims, shape, What(node));
  return b.ShapeCheck(dims, shape, What(node));
}

/// A serial one-iteration loop around `s` (a top-level nest of its own).
Stmt Once(KernelBuilder& b, Stmt s) { return loop::For(b.NewVar("once"), 1, std::move(s)); }

/// Loops over every dim of `shape` but `axis` (row-major order), all serial.
struct SliceLoops {
  std::vector<loop::Var> vars;
  std::vector<int64_t> extents;
  int64_t axis;
  SliceLoops(KernelBuilder& b, const std::vector<int64_t>& shape, int64_t axis_,
             const std::string& prefix)
      : axis(axis_) {
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
      if (d == axis) continue;
      vars.push_back(b.NewVar(absl::StrCat(prefix, "d", d)));
      extents.push_back(shape[d]);
    }
  }
  /// The full index with `p` at the axis.
  std::vector<Expr> At(Expr p) const {
    std::vector<Expr> idx;
    size_t k = 0;
    for (int64_t d = 0; d <= static_cast<int64_t>(vars.size()); ++d) {
      idx.push_back(d == axis ? p : loop::VarRef(vars[k++]));
    }
    return idx;
  }
  Stmt Wrap(Stmt body) const {
    return Nest(vars, extents, std::move(body), std::vector<bool>(vars.size(), true));
  }
};

absl::StatusOr<std::vector<Stmt>> LowerNonZero(KernelBuilder& b, const graph::Node& node) {
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const int64_t rank = static_cast<int64_t>(xs.size());
  const int64_t k = node.output(0)->type().shape[1];
  loop::BufferRef x = b.Input(xv);
  loop::BufferRef count = b.Workspace("count", kI64, {1});
  const Expr cnt = loop::Load(count, {Idx(0)});
  std::vector<loop::Var> vars = b.NewVars("", AxisNames(xs.size()));
  std::vector<Expr> idx = Refs(vars);
  std::vector<Stmt> writes;
  for (int64_t d = 0; d < rank; ++d) {
    writes.push_back(
        loop::Store(b.out(), {Idx(d), IdxClamp(cnt, std::max<int64_t>(k, 1))}, idx[d]));
  }
  Stmt found = loop::Block({
      k > 0 ? loop::IfThenElse(Lt(cnt, Idx(k)), loop::Block(writes)) : loop::Block({}),
      loop::Store(count, {Idx(0)}, IdxAdd(cnt, 1)),
  });
  Stmt scan =
      Nest(vars, xs, loop::IfThenElse(Ne(loop::Load(x, idx), Const(0, xv->type().dtype)), found),
           std::vector<bool>(xs.size(), true));
  return std::vector<Stmt>{Once(b, loop::Store(count, {Idx(0)}, Idx(0))), scan,
                           OutputShapeCheck(b, node, {Idx(rank), cnt}, {rank, k})};
}

absl::StatusOr<std::vector<Stmt>> LowerCompress(KernelBuilder& b, const graph::Node& node) {
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const int64_t axis = graph::Axis0Attrs::Of(node).axis;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  const int64_t k = os[axis];
  const int64_t n = std::min(xs[axis], node.input(1)->type().shape[0]);
  loop::BufferRef x = b.Input(xv);
  loop::BufferRef cond = b.Input(node.input(1));
  loop::BufferRef count = b.Workspace("count", kI64, {1});
  const Expr cnt = loop::Load(count, {Idx(0)});
  loop::Var p = b.NewVar("p");
  SliceLoops slice(b, xs, axis, "");
  Stmt copy = slice.Wrap(loop::Store(b.out(), slice.At(IdxClamp(cnt, std::max<int64_t>(k, 1))),
                                     loop::Load(x, slice.At(loop::VarRef(p)))));
  Stmt taken = loop::Block({
      k > 0 ? loop::IfThenElse(Lt(cnt, Idx(k)), copy) : loop::Block({}),
      loop::Store(count, {Idx(0)}, IdxAdd(cnt, 1)),
  });
  Stmt scan = loop::For(
      p, n,
      loop::IfThenElse(Ne(loop::Load(cond, {loop::VarRef(p)}), Const(0, DType::kBool)), taken),
      loop::ForKind::kSerial, true);
  std::vector<Expr> dims;
  for (int64_t d = 0; d < static_cast<int64_t>(os.size()); ++d) {
    dims.push_back(d == axis ? cnt : Idx(os[d]));
  }
  return std::vector<Stmt>{Once(b, loop::Store(count, {Idx(0)}, Idx(0))), scan,
                           OutputShapeCheck(b, node, dims, os)};
}

absl::StatusOr<std::vector<Stmt>> LowerUnique(KernelBuilder& b, const graph::Node& node) {
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const graph::UniqueAttrs a = graph::UniqueAttrs::Of(node);
  const int64_t axis = a.axis.value_or(0);
  const bool sorted = a.sorted;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  const int64_t n = xs[axis], u = os[axis];
  if (n == 0 || u == 0) return NoLowering(node, "an empty input");
  loop::BufferRef x = b.Input(xv);
  auto output = [&](int i, const std::string& name, std::vector<int64_t> shape) {
    const graph::Value* v =
        node.outputs().size() > static_cast<size_t>(i) ? node.output(i) : nullptr;
    return v != nullptr ? b.ExtraOutput(v) : b.Workspace(name, kI64, std::move(shape));
  };
  loop::BufferRef indices = output(1, "indices", {u});
  loop::BufferRef inverse = output(2, "inverse", {n});
  loop::BufferRef counts = output(3, "counts", {u});
  loop::BufferRef rep = b.Workspace("rep", kI64, {n});
  loop::BufferRef pos = b.Workspace("pos", kI64, {n});
  loop::BufferRef flag = b.Workspace("flag", kI8, {2});
  loop::BufferRef distinct = b.Workspace("distinct", kI64, {1});
  auto rep_of = [&](Expr e) { return loop::Load(rep, {std::move(e)}); };
  const Expr flag0 = loop::Load(flag, {Idx(0)}), flag1 = loop::Load(flag, {Idx(1)});
  auto serial = [](loop::Var v, int64_t extent, Stmt body) {
    return loop::For(std::move(v), extent, std::move(body), loop::ForKind::kSerial, true);
  };

  // flag[0] = (slice a == slice c).
  auto equal = [&](Expr a, Expr c) {
    SliceLoops s(b, xs, axis, "eq.");
    Stmt cmp = loop::IfThenElse(Ne(loop::Load(x, s.At(a)), loop::Load(x, s.At(c))),
                                loop::Store(flag, {Idx(0)}, I8(0)));
    return loop::Block({loop::Store(flag, {Idx(0)}, I8(1)), s.Wrap(cmp)});
  };
  // flag[1] = (slice a < slice c), lexicographically in row-major order; flag[0]: decided.
  auto less = [&](Expr a, Expr c) {
    SliceLoops s(b, xs, axis, "lt.");
    Expr va = loop::Load(x, s.At(a)), vc = loop::Load(x, s.At(c));
    Stmt cmp = loop::IfThenElse(
        And(Eq(flag0, I8(0)), Ne(va, vc)),
        loop::Block({loop::Store(flag, {Idx(0)}, I8(1)),
                     loop::Store(flag, {Idx(1)}, loop::Select(Lt(va, vc), I8(1), I8(0)))}));
    return loop::Block(
        {loop::Store(flag, {Idx(0)}, I8(0)), loop::Store(flag, {Idx(1)}, I8(0)), s.Wrap(cmp)});
  };

  // rep[i]: the first j whose slice equals slice i.
  loop::Var i1 = b.NewVar("rep.i"), j1 = b.NewVar("rep.j");
  const Expr I1 = loop::VarRef(i1), J1 = loop::VarRef(j1);
  Stmt find_rep = serial(
      i1, n,
      loop::Block({loop::Store(rep, {I1}, I1),
                   serial(j1, n,
                          loop::Block({equal(I1, J1),
                                       loop::IfThenElse(And(Eq(flag0, I8(1)), Lt(J1, rep_of(I1))),
                                                        loop::Store(rep, {I1}, J1))}))}));

  // pos[i] of each first occurrence i: how many first occurrences come before it.
  loop::Var i2 = b.NewVar("pos.i"), j2 = b.NewVar("pos.j");
  const Expr I2 = loop::VarRef(i2), J2 = loop::VarRef(j2);
  const Expr bump = IdxAdd(loop::Load(pos, {I2}), 1);
  Expr is_first_j = Eq(rep_of(J2), J2);
  Stmt count_before =
      sorted ? loop::Block({less(J2, I2), loop::IfThenElse(And(is_first_j, Eq(flag1, I8(1))),
                                                           loop::Store(pos, {I2}, bump))})
             : loop::IfThenElse(And(is_first_j, Lt(J2, I2)), loop::Store(pos, {I2}, bump));
  const Expr dist = loop::Load(distinct, {Idx(0)});
  Stmt rank = serial(i2, n,
                     loop::IfThenElse(Eq(rep_of(I2), I2),
                                      loop::Block({loop::Store(pos, {I2}, Idx(0)),
                                                   loop::Store(distinct, {Idx(0)}, IdxAdd(dist, 1)),
                                                   serial(j2, n, count_before)})));

  // Outputs: each slice's position in Y, the counts, and each first occurrence's slice.
  loop::Var i3 = b.NewVar("out.i"), k = b.NewVar("clr.k");
  const Expr I3 = loop::VarRef(i3);
  const Expr slot = IdxClamp(loop::Load(pos, {IdxClamp(rep_of(I3), n)}), u);
  SliceLoops out_slice(b, xs, axis, "y.");
  Stmt write_y =
      out_slice.Wrap(loop::Store(b.out(), out_slice.At(slot), loop::Load(x, out_slice.At(I3))));
  Stmt emit = serial(
      i3, n,
      loop::Block({loop::Store(inverse, {I3}, slot),
                   loop::Store(counts, {slot}, IdxAdd(loop::Load(counts, {slot}), 1)),
                   loop::IfThenElse(Eq(rep_of(I3), I3),
                                    loop::Block({loop::Store(indices, {slot}, I3), write_y}))}));

  std::vector<Expr> dims;
  for (int64_t d = 0; d < static_cast<int64_t>(os.size()); ++d) {
    dims.push_back(d == axis ? dist : Idx(os[d]));
  }
  return std::vector<Stmt>{
      Once(b, loop::Store(distinct, {Idx(0)}, Idx(0))),
      loop::For(k, u, loop::Store(counts, {loop::VarRef(k)}, Idx(0))),
      find_rep,
      rank,
      emit,
      b.ShapeCheck(dims, os, What(node)),
  };
}

// Scalar `i` of an optional 1-element input (rank 0 or 1), or `absent`.
Expr ScalarOperand(KernelBuilder& b, const graph::Value* v, Expr absent) {
  if (v == nullptr) return absent;
  return loop::Load(b.Input(v), std::vector<Expr>(v->type().rank(), Idx(0)));
}

absl::StatusOr<std::vector<Stmt>> LowerNonMaxSuppression(KernelBuilder& b,
                                                         const graph::Node& node) {
  const std::vector<int64_t>& bs = node.input(0)->type().shape;
  const int64_t batches = bs[0], n = bs[1], classes = node.input(1)->type().shape[1];
  const int64_t k = node.output(0)->type().shape[0];
  const bool center = graph::NonMaxSuppressionAttrs::Of(node).center_point_box != 0;
  const DType f32 = DType::kFloat32;
  loop::BufferRef boxes = b.Input(node.input(0));
  loop::BufferRef scores = b.Input(node.input(1));
  const Expr max_out = ScalarOperand(b, node.input(2), Idx(0));
  const Expr iou = ScalarOperand(b, node.input(3), Const(0, f32));
  const graph::Value* min_score = node.input(4);
  loop::BufferRef rank = b.Workspace("rank", kI64, {n});
  loop::BufferRef order = b.Workspace("order", kI64, {n});
  loop::BufferRef kept = b.Workspace("kept", kI64, {n});
  loop::BufferRef state = b.Workspace("state", kI64, {2});  // [kept count, selected count]
  loop::BufferRef suppressed = b.Workspace("suppressed", kI8, {1});
  const Expr nkept = loop::Load(state, {Idx(0)}), count = loop::Load(state, {Idx(1)});
  loop::Var bv = b.NewVar("b"), cv = b.NewVar("c");
  const Expr B = loop::VarRef(bv), C = loop::VarRef(cv);
  auto score = [&](Expr i) { return loop::Load(scores, {B, C, std::move(i)}); };
  auto serial = [](loop::Var v, int64_t extent, Stmt body) {
    return loop::For(std::move(v), extent, std::move(body), loop::ForKind::kSerial, true);
  };

  // rank[i]: boxes before box i in descending score order.
  loop::Var i1 = b.NewVar("rank.i"), j1 = b.NewVar("rank.j");
  const Expr I1 = loop::VarRef(i1), J1 = loop::VarRef(j1);
  Expr before = Bin(BinaryOp::kOr, Bin(BinaryOp::kGt, score(J1), score(I1)),
                    And(Eq(score(J1), score(I1)), Lt(J1, I1)));
  Stmt ranks = serial(
      i1, n,
      loop::Block(
          {loop::Store(rank, {I1}, Idx(0)),
           serial(j1, n,
                  loop::IfThenElse(before,
                                   loop::Store(rank, {I1}, IdxAdd(loop::Load(rank, {I1}), 1))))}));
  loop::Var i2 = b.NewVar("order.i");
  const Expr I2 = loop::VarRef(i2);
  Stmt sort = serial(i2, n, loop::Store(order, {IdxClamp(loop::Load(rank, {I2}), n)}, I2));

  // Corners (y1, x1, y2, x2), min before max, of box `i` of this batch.
  auto corners = [&](const Expr& i) {
    std::vector<Expr> v;
    for (int64_t c = 0; c < 4; ++c) v.push_back(loop::Load(boxes, {B, i, Idx(c)}));
    if (center) {  // [xc, yc, w, h]
      Expr hw = v[2] * Const(0.5, f32), hh = v[3] * Const(0.5, f32);
      return std::vector<Expr>{v[1] - hh, v[0] - hw, v[1] + hh, v[0] + hw};
    }
    return std::vector<Expr>{loop::Min(v[0], v[2]), loop::Min(v[1], v[3]), loop::Max(v[0], v[2]),
                             loop::Max(v[1], v[3])};
  };
  loop::Var r = b.NewVar("r"), s = b.NewVar("s");
  const Expr box = IdxClamp(loop::Load(order, {loop::VarRef(r)}), n);
  const Expr other = IdxClamp(loop::Load(kept, {loop::VarRef(s)}), n);
  const std::vector<Expr> p = corners(box), q = corners(other);
  const Expr zero = Const(0, f32);
  Expr ih = loop::Max(zero, loop::Min(p[2], q[2]) - loop::Max(p[0], q[0]));
  Expr iw = loop::Max(zero, loop::Min(p[3], q[3]) - loop::Max(p[1], q[1]));
  Expr inter = ih * iw;
  Expr area_p = (p[2] - p[0]) * (p[3] - p[1]), area_q = (q[2] - q[0]) * (q[3] - q[1]);
  Expr uni = area_p + area_q - inter;
  Expr valid = And(And(Bin(BinaryOp::kGt, inter, zero), Bin(BinaryOp::kGt, area_p, zero)),
                   And(Bin(BinaryOp::kGt, area_q, zero), Bin(BinaryOp::kGt, uni, zero)));
  Expr overlaps = And(
      valid,
      Bin(BinaryOp::kGt, Bin(BinaryOp::kDiv, inter, loop::Select(valid, uni, Const(1, f32))), iou));
  Stmt check = serial(s, n,
                      loop::IfThenElse(And(Lt(loop::VarRef(s), nkept), overlaps),
                                       loop::Store(suppressed, {Idx(0)}, I8(1))));
  std::vector<Stmt> row;
  const Expr slot = IdxClamp(count, std::max<int64_t>(k, 1));
  row.push_back(loop::Store(b.out(), {slot, Idx(0)}, B));
  row.push_back(loop::Store(b.out(), {slot, Idx(1)}, C));
  row.push_back(loop::Store(b.out(), {slot, Idx(2)}, box));
  Stmt keep = loop::Block({
      loop::Store(kept, {IdxClamp(nkept, n)}, box),
      loop::Store(state, {Idx(0)}, IdxAdd(nkept, 1)),
      k > 0 ? loop::IfThenElse(Lt(count, Idx(k)), loop::Block(row)) : loop::Block({}),
      loop::Store(state, {Idx(1)}, IdxAdd(count, 1)),
  });
  Expr candidate = Lt(nkept, max_out);
  if (min_score != nullptr) {
    candidate = And(candidate, Bin(BinaryOp::kGt, score(box), ScalarOperand(b, min_score, zero)));
  }
  Stmt greedy = serial(
      r, n,
      loop::IfThenElse(
          candidate,
          loop::Block({loop::Store(suppressed, {Idx(0)}, I8(0)), check,
                       loop::IfThenElse(Eq(loop::Load(suppressed, {Idx(0)}), I8(0)), keep)})));
  Stmt per_class = loop::Block({ranks, sort, loop::Store(state, {Idx(0)}, Idx(0)), greedy});
  Stmt all = serial(bv, batches, serial(cv, classes, per_class));
  return std::vector<Stmt>{Once(b, loop::Store(state, {Idx(1)}, Idx(0))), all,
                           OutputShapeCheck(b, node, {count, Idx(3)}, {k, 3})};
}

absl::StatusOr<std::vector<Stmt>> LowerRuntimeCheck(KernelBuilder& b, const graph::Node& node) {
  const graph::Value* xv = node.input(0);
  const graph::Value* vv = node.input(1);
  const graph::RuntimeCheckAttrs a = graph::RuntimeCheckAttrs::Of(node);
  const std::vector<int64_t>& expected = a.expected;
  loop::BufferRef v = b.Input(vv);
  std::vector<Expr> values;
  for (int64_t i = 0; i < static_cast<int64_t>(expected.size()); ++i) {
    values.push_back(
        loop::Load(v, vv->type().rank() == 0 ? std::vector<Expr>{} : std::vector<Expr>{Idx(i)}));
  }
  const std::vector<int64_t>& xs = xv->type().shape;
  std::vector<loop::Var> vars = b.NewVars("", AxisNames(xs.size()));
  Stmt copy = Nest(vars, xs, loop::Store(b.out(), Refs(vars), loop::Load(b.Input(xv), Refs(vars))));
  return std::vector<Stmt>{
      b.ShapeCheck(values, expected, a.what.empty() ? What(node) : a.what, /*values=*/true), copy};
}

}  // namespace

absl::StatusOr<std::vector<Stmt>> LowerDataDependent(KernelBuilder& b, const graph::Node& node,
                                                     const Epilogue& epi) {
  if (!epi.empty()) return NoLowering(node, "fused consumers");
  switch (node.op()) {
    case OpKind::kNonZero:
      return LowerNonZero(b, node);
    case OpKind::kCompress:
      return LowerCompress(b, node);
    case OpKind::kUnique:
      return LowerUnique(b, node);
    case OpKind::kNonMaxSuppression:
      return LowerNonMaxSuppression(b, node);
    case OpKind::kRuntimeCheck:
      return LowerRuntimeCheck(b, node);
    default:
      return NoLowering(node, "this op");
  }
}

}  // namespace kiln::lowering
