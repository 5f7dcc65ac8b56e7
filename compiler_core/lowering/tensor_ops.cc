// Lowering of the tensor, reduction and logic ops.
//
// Elementwise ones (comparisons, logic, Where, Mod, BitShift, Mean, unary math) are scalar
// expressions used by the elementwise anchor and by epilogues. The others are anchors:
// - Reductions: "init.d*" (acc = identity), update nest over the input "d*" with the reduced
//   axes marked as reductions, and a final "epi.d*" nest (mean/sqrt/log, fused consumers).
//   f16 accumulates in an f32 workspace "acc"; other dtypes accumulate in "out".
// - ArgMax/ArgMin: nest over the output with a reduction loop "k" over the axis and a
//   workspace "best" holding the running extreme.
// - Injective ops (Expand, Tile, Trilu, GatherElements, GatherND, Depth/SpaceToDepth, EyeLike,
//   Range, OneHot): one nest over the output; loaded indices are normalized and clamped.
// - ScatterElements/ScatterND: a copy nest, then a scatter nest whose loops are marked as
//   reductions (the store index is data-dependent, so they must stay serial).
// - CumSum: per non-axis position a serial axis loop "t" with a running sum; a runtime axis
//   gets one guarded nest per possible axis.
// - Einsum: "init.d*", then one nest over the output labels and the summed labels (marked as
//   reductions) accumulating the product of the operands.
// No load is ever out of bounds.
#include <algorithm>
#include <functional>
#include <limits>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/ir/graph/tensor_op_rules.h"
#include "compiler_core/lowering/op_lowering.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::lowering {
namespace {

using graph::OpKind;
using loop::BinaryOp;
using loop::Expr;
using loop::Stmt;
using loop::UnaryOp;

/// Input `i` at the output index: a computed group value or a broadcast load.
Expr Operand(KernelBuilder& b, const graph::Node& node, int i, const std::vector<Expr>& out_idx,
             const ValueExprs& computed) {
  const graph::Value* v = node.input(i);
  auto it = computed.find(v);
  if (it != computed.end()) return it->second;
  return loop::Load(b.Input(v), BroadcastIndices(v->type().shape, out_idx));
}

/// Element 0 of a scalar-like input: an immediate for a constant, else a load.
Expr ScalarOperand(KernelBuilder& b, const graph::Value* v) {
  if (v->is_constant()) {
    if (IsFloat(v->type().dtype)) return Const(v->constant()->GetAsDouble(0), v->type().dtype);
    return loop::IntImm(v->constant()->GetAsInt64(0), v->type().dtype);
  }
  return loop::Load(b.Input(v), std::vector<Expr>(v->type().rank(), Idx(0)));
}

/// The largest value of `dtype` (+inf for floats): the identity of min.
Expr Highest(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: case DType::kFloat64: case DType::kFloat16: case DType::kBFloat16:
      return loop::FloatImm(std::numeric_limits<double>::infinity(), dtype);
    case DType::kInt8: return loop::IntImm(std::numeric_limits<int8_t>::max(), dtype);
    case DType::kInt16: return loop::IntImm(std::numeric_limits<int16_t>::max(), dtype);
    case DType::kInt32: return loop::IntImm(std::numeric_limits<int32_t>::max(), dtype);
    case DType::kInt64: return loop::IntImm(std::numeric_limits<int64_t>::max(), dtype);
    case DType::kUInt8: return loop::IntImm(std::numeric_limits<uint8_t>::max(), dtype);
    case DType::kUInt16: return loop::IntImm(std::numeric_limits<uint16_t>::max(), dtype);
    case DType::kUInt32: return loop::IntImm(std::numeric_limits<uint32_t>::max(), dtype);
    case DType::kUInt64: return loop::IntImm(-1, dtype);
    default: return loop::IntImm(1, dtype);
  }
}

/// A loaded index into a dim of size `n`: i64, negative values wrapped, clamped in bounds.
Expr NormIndex(Expr i, int64_t n) {
  if (i->dtype != DType::kInt64) i = loop::Cast(DType::kInt64, i);
  i = loop::Select(Bin(BinaryOp::kLt, i, Idx(0)), IdxAdd(i, n), i);
  return IdxClamp(i, n);
}

absl::StatusOr<Expr> FloatMath(const graph::Node& node, UnaryOp op, Expr x) {
  if (!IsFloat(x->dtype)) return NoLowering(node, "integer operands");
  return loop::Unary(op, std::move(x));
}

// ---- Reductions -------------------------------------------------------------------------

absl::StatusOr<std::vector<Stmt>> LowerReduce(KernelBuilder& b, const graph::Node& node,
                                              const Epilogue& epi) {
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  const DType dt = xv->type().dtype;
  const OpKind op = node.op();
  const bool keep = graph::ReduceAttrs::Of(node).keepdims;
  std::vector<bool> reduced(xs.size(), false);
  int64_t count = 1;  // over the static reduced axes
  for (int64_t a : graph::ReductionAxes(node)) {
    reduced[a] = true;
    if (xs[a] != kSymbolicDim) count *= xs[a];
  }
  if (!IsFloat(dt) && (op == OpKind::kReduceLogSum || op == OpKind::kReduceLogSumExp ||
                       op == OpKind::kReduceL2)) {
    return NoLowering(node, "integer operands");
  }
  const DType acc_dt = dt == DType::kFloat16 ? DType::kFloat32 : dt;
  const bool symbolic = !xv->type().is_static();
  if (symbolic && acc_dt != dt) return NoLowering(node, "an f16 reduction over symbolic dims");
  loop::BufferRef x = b.Input(xv);
  loop::BufferRef out = b.out();
  loop::BufferRef acc = acc_dt == dt ? out : b.Workspace("acc", acc_dt, os);
  const std::vector<Expr> xdims = loop::BufferDims(*x), odims = loop::BufferDims(*out);
  // The element count of the reduced axes (a run-time value when one of them is symbolic).
  Expr count_expr = Idx(1);
  for (size_t d = 0; d < xs.size(); ++d) {
    if (reduced[d] && xs[d] != kSymbolicDim) continue;
    if (reduced[d]) count_expr = IsIntImm(count_expr, 1) ? xdims[d] : count_expr * xdims[d];
  }
  Expr init = op == OpKind::kReduceProd  ? Const(1, acc_dt)
              : op == OpKind::kReduceMax ? Lowest(acc_dt)
              : op == OpKind::kReduceMin ? Highest(acc_dt)
                                         : Const(0, acc_dt);
  std::vector<Stmt> nests;
  {
    std::vector<loop::Var> vars = b.NewVars("init.", AxisNames(os.size()));
    nests.push_back(NestDims(vars, odims, loop::Store(acc, Refs(vars), init)));
  }
  {
    // Kept axes outermost (parallel, vectorizable), reduced axes innermost.
    std::vector<loop::Var> vars = b.NewVars("", AxisNames(xs.size()));
    std::vector<Expr> idx = Refs(vars);
    std::vector<loop::Var> order;
    std::vector<Expr> extents;
    std::vector<bool> is_red;
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t d = 0; d < xs.size(); ++d) {
        if (reduced[d] != (pass == 1)) continue;
        order.push_back(vars[d]);
        extents.push_back(xdims[d]);
        is_red.push_back(reduced[d]);
      }
    }
    std::vector<Expr> oidx;
    for (size_t d = 0; d < xs.size(); ++d) {
      if (!reduced[d]) {
        oidx.push_back(idx[d]);
      } else if (keep) {
        oidx.push_back(Idx(0));
      }
    }
    Expr v = loop::Load(x, idx);
    if (v->dtype != acc_dt) v = loop::Cast(acc_dt, v);
    Expr a = loop::Load(acc, oidx);
    Expr r;
    switch (op) {
      case OpKind::kReduceMax: r = loop::Max(a, v); break;
      case OpKind::kReduceMin: r = loop::Min(a, v); break;
      case OpKind::kReduceProd: r = a * v; break;
      case OpKind::kReduceL1: r = a + loop::Unary(UnaryOp::kAbs, v); break;
      case OpKind::kReduceL2: case OpKind::kReduceSumSquare: r = a + v * v; break;
      case OpKind::kReduceLogSumExp: r = a + loop::Unary(UnaryOp::kExp, v); break;
      default: r = a + v; break;
    }
    nests.push_back(NestDims(order, extents, loop::Store(acc, oidx, r), is_red));
  }
  bool post = op == OpKind::kReduceMean || op == OpKind::kReduceL2 ||
              op == OpKind::kReduceLogSum || op == OpKind::kReduceLogSumExp;
  if (post || acc != out || !epi.empty()) {
    std::vector<loop::Var> vars = b.NewVars("epi.", AxisNames(os.size()));
    std::vector<Expr> idx = Refs(vars);
    Expr v = loop::Load(acc, idx);
    switch (op) {
      case OpKind::kReduceMean:
        // count: the static axes' product; count_expr: the symbolic axes' (1 when none).
        v = Bin(BinaryOp::kDiv, v, Const(static_cast<double>(count), acc_dt));
        if (!IsIntImm(count_expr, 1)) v = Bin(BinaryOp::kDiv, v, loop::Cast(acc_dt, count_expr));
        break;
      case OpKind::kReduceL2: v = loop::Unary(UnaryOp::kSqrt, v); break;
      case OpKind::kReduceLogSum: case OpKind::kReduceLogSumExp:
        v = loop::Unary(UnaryOp::kLog, v);
        break;
      default: break;
    }
    if (v->dtype != dt) v = loop::Cast(dt, v);
    KILN_ASSIGN_OR_RETURN(v, epi.Apply(v, idx));
    nests.push_back(NestDims(vars, odims, loop::Store(out, idx, v)));
  }
  return nests;
}

absl::StatusOr<std::vector<Stmt>> LowerArg(KernelBuilder& b, const graph::Node& node,
                                           const Epilogue& epi) {
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  const graph::ArgMaxAttrs a = graph::ArgMaxAttrs::Of(node);
  const int64_t axis = a.axis;
  const bool keep = a.keepdims;
  const bool last = a.select_last_index;
  const bool is_max = node.op() == OpKind::kArgMax;
  if (xs[axis] == 0) return NoLowering(node, "an empty axis");
  loop::BufferRef x = b.Input(xv);
  loop::BufferRef out = b.out();
  loop::BufferRef best = b.Workspace("best", xv->type().dtype, os);
  std::vector<loop::Var> vars = b.NewVars("", AxisNames(os.size()));
  std::vector<Expr> oidx = Refs(vars);
  // Input index with the axis position `k`.
  auto in_index = [&](Expr k) {
    std::vector<Expr> idx;
    size_t o = 0;
    for (int64_t d = 0; d < static_cast<int64_t>(xs.size()); ++d) {
      if (d == axis) {
        idx.push_back(k);
        if (keep) ++o;
      } else {
        idx.push_back(oidx[o++]);
      }
    }
    return idx;
  };
  loop::Var k = b.NewVar("k");
  Expr v = loop::Load(x, in_index(loop::VarRef(k)));
  Expr cur = loop::Load(best, oidx);
  BinaryOp cmp = is_max ? (last ? BinaryOp::kGe : BinaryOp::kGt)
                        : (last ? BinaryOp::kLe : BinaryOp::kLt);
  Expr better = Bin(cmp, v, cur);
  Stmt update = loop::Block({
      loop::Store(out, oidx, loop::Select(better, loop::VarRef(k), loop::Load(out, oidx))),
      loop::Store(best, oidx, loop::Select(better, v, cur)),
  });
  Stmt body = loop::Block({
      loop::Store(best, oidx, loop::Load(x, in_index(Idx(0)))),
      loop::Store(out, oidx, Idx(0)),
      loop::For(k, xs[axis], update, loop::ForKind::kSerial, /*is_reduction=*/true),
  });
  std::vector<Stmt> nests{Nest(vars, os, body)};
  KILN_ASSIGN_OR_RETURN(Stmt tail, epi.FinalNest(nullptr));
  if (tail) nests.push_back(tail);
  return nests;
}

// ---- Injective ops ----------------------------------------------------------------------

/// One nest over the output storing epi(value(idx)).
absl::StatusOr<std::vector<Stmt>> OutputNest(
    KernelBuilder& b, const graph::Node& node, const Epilogue& epi,
    const std::function<absl::StatusOr<Expr>(const std::vector<Expr>&)>& value) {
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  std::vector<loop::Var> vars = b.NewVars("", AxisNames(os.size()));
  std::vector<Expr> idx = Refs(vars);
  KILN_ASSIGN_OR_RETURN(Expr v, value(idx));
  KILN_ASSIGN_OR_RETURN(v, epi.Apply(v, idx));
  return std::vector<Stmt>{NestDims(vars, loop::BufferDims(*b.out()), loop::Store(b.out(), idx, v))};
}

absl::StatusOr<std::vector<Stmt>> LowerInjective(KernelBuilder& b, const graph::Node& node,
                                                 const Epilogue& epi) {
  const TensorType& ot = node.output(0)->type();
  const std::vector<int64_t>& os = ot.shape;
  const graph::Value* xv = node.input(0);
  switch (node.op()) {
    case OpKind::kExpand: case OpKind::kTile: {
      loop::BufferRef x = b.Input(xv);
      const std::vector<int64_t>& xs = xv->type().shape;
      const bool tile = node.op() == OpKind::kTile;
      return OutputNest(b, node, epi, [&](const std::vector<Expr>& idx) -> absl::StatusOr<Expr> {
        if (!tile) return loop::Load(x, BroadcastIndices(xs, idx));
        std::vector<Expr> in;
        for (size_t d = 0; d < xs.size(); ++d) {
          in.push_back(xs[d] == os[d] ? idx[d] : Bin(BinaryOp::kFloorMod, idx[d], Idx(xs[d])));
        }
        return loop::Load(x, in);
      });
    }
    case OpKind::kTrilu: {
      if (os.size() < 2) return NoLowering(node, "rank < 2");
      loop::BufferRef x = b.Input(xv);
      Expr k = node.input(1) ? ScalarOperand(b, node.input(1)) : Idx(0);
      if (k->dtype != DType::kInt64) k = loop::Cast(DType::kInt64, k);
      const bool upper = graph::TriluAttrs::Of(node).upper;
      const DType dt = ot.dtype;
      return OutputNest(b, node, epi, [&](const std::vector<Expr>& idx) -> absl::StatusOr<Expr> {
        Expr diff = idx[os.size() - 1] - idx[os.size() - 2];
        Expr keep = Bin(upper ? BinaryOp::kGe : BinaryOp::kLe, diff, k);
        return loop::Select(keep, loop::Load(x, idx), Const(0, dt));
      });
    }
    case OpKind::kEyeLike: {
      const int64_t k = graph::EyeLikeAttrs::Of(node).k;
      return OutputNest(b, node, epi, [&](const std::vector<Expr>& idx) -> absl::StatusOr<Expr> {
        Expr on = Bin(BinaryOp::kEq, idx[1] - idx[0], Idx(k));
        return loop::Select(on, Const(1, ot.dtype), Const(0, ot.dtype));
      });
    }
    case OpKind::kRange: {
      Expr start = ScalarOperand(b, node.input(0));
      Expr delta = ScalarOperand(b, node.input(2));
      return OutputNest(b, node, epi, [&](const std::vector<Expr>& idx) -> absl::StatusOr<Expr> {
        return start + loop::Cast(ot.dtype, idx[0]) * delta;
      });
    }
    case OpKind::kGatherElements: {
      loop::BufferRef x = b.Input(xv);
      loop::BufferRef ind = b.Input(node.input(1));
      const int64_t axis = graph::Axis0Attrs::Of(node).axis;
      const int64_t n = xv->type().shape[axis];
      return OutputNest(b, node, epi, [&](const std::vector<Expr>& idx) -> absl::StatusOr<Expr> {
        std::vector<Expr> in = idx;
        in[axis] = NormIndex(loop::Load(ind, idx), n);
        return loop::Load(x, in);
      });
    }
    case OpKind::kGatherND: {
      loop::BufferRef x = b.Input(xv);
      const graph::Value* iv = node.input(1);
      loop::BufferRef ind = b.Input(iv);
      const std::vector<int64_t>& xs = xv->type().shape;
      const int64_t bd = graph::GatherNDAttrs::Of(node).batch_dims;
      const int64_t ir = iv->type().rank();
      const int64_t k = iv->type().shape.back();
      return OutputNest(b, node, epi, [&](const std::vector<Expr>& idx) -> absl::StatusOr<Expr> {
        std::vector<Expr> in;
        for (int64_t d = 0; d < bd; ++d) in.push_back(idx[d]);
        std::vector<Expr> ipos(idx.begin(), idx.begin() + (ir - 1));
        ipos.push_back(Idx(0));
        for (int64_t j = 0; j < k; ++j) {
          ipos[ir - 1] = Idx(j);
          in.push_back(NormIndex(loop::Load(ind, ipos), xs[bd + j]));
        }
        for (size_t d = bd + k; d < xs.size(); ++d) in.push_back(idx[ir - 1 + d - bd - k]);
        return loop::Load(x, in);
      });
    }
    case OpKind::kDepthToSpace: case OpKind::kSpaceToDepth: {
      loop::BufferRef x = b.Input(xv);
      const graph::DepthToSpaceAttrs attrs = graph::DepthToSpaceAttrs::Of(node);
      const int64_t bs = attrs.blocksize;  // > 0: the shape rule checks it
      const bool crd = attrs.mode == graph::DepthToSpaceMode::kCRD;
      const int64_t ic = xv->type().shape[1], oc = os[1];
      const bool d2s = node.op() == OpKind::kDepthToSpace;
      auto div = [&](Expr a, int64_t c) { return Bin(BinaryOp::kFloorDiv, a, Idx(c)); };
      auto mod = [&](Expr a, int64_t c) { return Bin(BinaryOp::kFloorMod, a, Idx(c)); };
      return OutputNest(b, node, epi, [&](const std::vector<Expr>& p) -> absl::StatusOr<Expr> {
        if (d2s) {
          Expr bh = mod(p[2], bs), bw = mod(p[3], bs);
          Expr c = crd ? IdxAdd(IdxMul(p[1], bs * bs), IdxAdd(IdxMul(bh, bs), bw))
                       : IdxAdd(IdxMul(IdxAdd(IdxMul(bh, bs), bw), oc), p[1]);
          return loop::Load(x, {p[0], c, div(p[2], bs), div(p[3], bs)});
        }
        Expr blk = div(p[1], ic), c = mod(p[1], ic);
        return loop::Load(x, {p[0], c, IdxAdd(IdxMul(p[2], bs), div(blk, bs)),
                              IdxAdd(IdxMul(p[3], bs), mod(blk, bs))});
      });
    }
    case OpKind::kOneHot: {
      loop::BufferRef ind = b.Input(xv);
      loop::BufferRef values = b.Input(node.input(2));
      const int64_t axis = graph::AxisAttrs::Of(node).axis;
      const int64_t depth = os[axis];
      return OutputNest(b, node, epi, [&](const std::vector<Expr>& p) -> absl::StatusOr<Expr> {
        std::vector<Expr> ip = p;
        ip.erase(ip.begin() + axis);
        Expr v = loop::Load(ind, ip);
        if (v->dtype != DType::kInt64) v = loop::Cast(DType::kInt64, v);
        v = loop::Select(Bin(BinaryOp::kLt, v, Idx(0)), IdxAdd(v, depth), v);
        Expr on = Bin(BinaryOp::kEq, v, p[axis]);
        return loop::Select(on, loop::Load(values, {Idx(1)}), loop::Load(values, {Idx(0)}));
      });
    }
    default:
      return NoLowering(node, "this op");
  }
}

// ---- Scatter, CumSum, Einsum ------------------------------------------------------------

Expr Combine(graph::ScatterReduction red, Expr a, Expr v) {
  switch (red) {
    case graph::ScatterReduction::kAdd:
      return a + v;
    case graph::ScatterReduction::kMul:
      return a * v;
    case graph::ScatterReduction::kMax:
      return loop::Max(a, v);
    case graph::ScatterReduction::kMin:
      return loop::Min(a, v);
    case graph::ScatterReduction::kNone:
      break;
  }
  return v;
}

absl::StatusOr<std::vector<Stmt>> LowerScatter(KernelBuilder& b, const graph::Node& node,
                                               const Epilogue& epi) {
  KILN_RETURN_IF_ERROR(epi.CheckSameDType(node));
  const graph::Value* dv = node.input(0);
  const graph::Value* iv = node.input(1);
  const graph::Value* uv = node.input(2);
  const std::vector<int64_t>& ds = dv->type().shape;
  const graph::ScatterElementsAttrs attrs = graph::ScatterElementsAttrs::Of(node);
  const graph::ScatterReduction red = attrs.reduction;
  loop::BufferRef data = b.Input(dv);
  loop::BufferRef ind = b.Input(iv);
  loop::BufferRef upd = b.Input(uv);
  loop::BufferRef out = b.out();
  std::vector<Stmt> nests;
  {
    std::vector<loop::Var> vars = b.NewVars("copy.", AxisNames(ds.size()));
    nests.push_back(Nest(vars, ds, loop::Store(out, Refs(vars), loop::Load(data, Refs(vars)))));
  }
  const std::vector<int64_t>& us = uv->type().shape;
  std::vector<loop::Var> vars = b.NewVars("s.", AxisNames(us.size()));
  std::vector<Expr> idx = Refs(vars);
  std::vector<Expr> dst;
  if (node.op() == OpKind::kScatterElements) {
    const int64_t axis = attrs.axis;
    dst = idx;
    dst[axis] = NormIndex(loop::Load(ind, idx), ds[axis]);
  } else {
    // ScatterND: updates dims = indices dims [0, ir-1) then data dims [k, rank).
    const int64_t ir = iv->type().rank();
    const int64_t k = iv->type().shape.back();
    std::vector<Expr> ipos(idx.begin(), idx.begin() + (ir - 1));
    ipos.push_back(Idx(0));
    for (int64_t j = 0; j < k; ++j) {
      ipos[ir - 1] = Idx(j);
      dst.push_back(NormIndex(loop::Load(ind, ipos), ds[j]));
    }
    for (size_t d = k; d < ds.size(); ++d) dst.push_back(idx[ir - 1 + d - k]);
  }
  Expr v = Combine(red, loop::Load(out, dst), loop::Load(upd, idx));
  // Data-dependent store indices: every loop stays serial, in order.
  nests.push_back(Nest(vars, us, loop::Store(out, dst, v), std::vector<bool>(us.size(), true)));
  KILN_ASSIGN_OR_RETURN(Stmt tail, epi.FinalNest(nullptr));
  if (tail) nests.push_back(tail);
  return nests;
}

absl::StatusOr<std::vector<Stmt>> LowerCumSum(KernelBuilder& b, const graph::Node& node,
                                              const Epilogue& epi) {
  KILN_RETURN_IF_ERROR(epi.CheckSameDType(node));
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const int64_t rank = static_cast<int64_t>(xs.size());
  const DType dt = xv->type().dtype;
  const DType acc_dt = dt == DType::kFloat16 ? DType::kFloat32 : dt;
  const graph::CumSumAttrs attrs = graph::CumSumAttrs::Of(node);
  const bool excl = attrs.exclusive;
  const bool rev = attrs.reverse;
  if (rank == 0) return NoLowering(node, "a scalar input");
  loop::BufferRef x = b.Input(xv);
  loop::BufferRef out = b.out();
  const graph::Value* av = node.input(1);
  Expr axis_value = ScalarOperand(b, av);
  if (axis_value->dtype != DType::kInt64) axis_value = loop::Cast(DType::kInt64, axis_value);
  std::vector<Stmt> nests;
  for (int64_t axis = 0; axis < rank; ++axis) {
    if (av->is_constant()) {
      int64_t a = av->constant()->GetAsInt64(0);
      if (a != axis && a != axis - rank) continue;
    }
    std::vector<int64_t> ws_shape = xs;
    ws_shape[axis] = 1;
    loop::BufferRef acc = b.Workspace("acc", acc_dt, ws_shape);
    std::vector<loop::Var> outer;
    std::vector<int64_t> extents;
    std::vector<Expr> ws_idx;
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis) {
        ws_idx.push_back(Idx(0));
        continue;
      }
      outer.push_back(b.NewVar(absl::StrCat("a", axis, ".d", d)));
      extents.push_back(xs[d]);
      ws_idx.push_back(loop::VarRef(outer.back()));
    }
    loop::Var t = b.NewVar(absl::StrCat("a", axis, ".t"));
    Expr k = rev ? Idx(xs[axis] - 1) - loop::VarRef(t) : loop::VarRef(t);
    std::vector<Expr> full = ws_idx;
    full[axis] = k;
    Expr a = loop::Load(acc, ws_idx);
    Expr v = loop::Load(x, full);
    if (v->dtype != acc_dt) v = loop::Cast(acc_dt, v);
    auto as_out = [&](Expr e) { return e->dtype == dt ? e : loop::Cast(dt, e); };
    std::vector<Stmt> step;
    if (excl) step.push_back(loop::Store(out, full, as_out(a)));
    step.push_back(loop::Store(acc, ws_idx, a + v));
    if (!excl) step.push_back(loop::Store(out, full, as_out(loop::Load(acc, ws_idx))));
    Stmt body = loop::Block({loop::Store(acc, ws_idx, Const(0, acc_dt)),
                             loop::For(t, xs[axis], loop::Block(step), loop::ForKind::kSerial,
                                       /*is_reduction=*/true)});
    Stmt nest = Nest(outer, extents, body);
    if (!av->is_constant()) {
      Expr is_axis = Bin(BinaryOp::kOr, Bin(BinaryOp::kEq, axis_value, Idx(axis)),
                         Bin(BinaryOp::kEq, axis_value, Idx(axis - rank)));
      nest = loop::IfThenElse(is_axis, nest);
    }
    nests.push_back(nest);
  }
  if (nests.empty()) return NoLowering(node, "an out-of-range axis");
  KILN_ASSIGN_OR_RETURN(Stmt tail, epi.FinalNest(nullptr));
  if (tail) nests.push_back(tail);
  return nests;
}

absl::StatusOr<std::vector<Stmt>> LowerEinsum(KernelBuilder& b, const graph::Node& node,
                                              const Epilogue& epi) {
  KILN_RETURN_IF_ERROR(epi.CheckSameDType(node));
  std::vector<std::vector<int64_t>> shapes;
  for (const graph::Value* v : node.inputs()) shapes.push_back(v->type().shape);
  auto spec = graph::ParseEinsum(graph::EinsumAttrs::Of(node).equation, shapes);
  if (!spec.ok()) return NoLowering(node, std::string(spec.status().message()));
  const TensorType& ot = node.output(0)->type();
  const DType acc_dt = ot.dtype == DType::kFloat16 ? DType::kFloat32 : ot.dtype;
  loop::BufferRef out = b.out();
  loop::BufferRef acc = acc_dt == ot.dtype ? out : b.Workspace("acc", acc_dt, ot.shape);
  std::vector<Stmt> nests;
  {
    std::vector<loop::Var> vars = b.NewVars("init.", AxisNames(ot.shape.size()));
    nests.push_back(Nest(vars, ot.shape, loop::Store(acc, Refs(vars), Const(0, acc_dt))));
  }
  std::string all = spec->output + spec->reduced;
  std::vector<std::string> names;
  std::vector<int64_t> extents;
  std::vector<bool> red;
  for (size_t j = 0; j < all.size(); ++j) {
    char c = all[j];
    names.push_back(std::isalpha(static_cast<unsigned char>(c)) ? std::string(1, c)
                                                                 : absl::StrCat("e", c - '0'));
    extents.push_back(spec->size[static_cast<int>(c)]);
    red.push_back(j >= spec->output.size());
  }
  std::vector<loop::Var> vars = b.NewVars("", names);
  std::vector<Expr> refs = Refs(vars);
  auto ref_of = [&](char c) { return refs[all.find(c)]; };
  Expr prod;
  for (int i = 0; i < node.num_inputs(); ++i) {
    const std::string& l = spec->inputs[i];
    std::vector<Expr> idx;
    for (size_t d = 0; d < l.size(); ++d) {
      idx.push_back(shapes[i][d] == 1 ? Idx(0) : ref_of(l[d]));
    }
    Expr v = loop::Load(b.Input(node.input(i)), idx);
    if (v->dtype != acc_dt) v = loop::Cast(acc_dt, v);
    prod = prod ? prod * v : v;
  }
  std::vector<Expr> oidx(refs.begin(), refs.begin() + spec->output.size());
  nests.push_back(Nest(vars, extents, loop::Store(acc, oidx, loop::Load(acc, oidx) + prod), red));
  if (acc != out || !epi.empty()) {
    std::vector<loop::Var> ev = b.NewVars("epi.", AxisNames(ot.shape.size()));
    std::vector<Expr> idx = Refs(ev);
    Expr v = loop::Load(acc, idx);
    if (v->dtype != ot.dtype) v = loop::Cast(ot.dtype, v);
    KILN_ASSIGN_OR_RETURN(v, epi.Apply(v, idx));
    nests.push_back(Nest(ev, ot.shape, loop::Store(out, idx, v)));
  }
  return nests;
}

}  // namespace

absl::StatusOr<Expr> LowerTensorElementwise(KernelBuilder& b, const graph::Node& node,
                                            const std::vector<Expr>& out_idx,
                                            const ValueExprs& computed) {
  auto in = [&](int i) { return Operand(b, node, i, out_idx, computed); };
  const DType out_dt = node.output(0)->type().dtype;
  switch (node.op()) {
    case OpKind::kEqual: return Bin(BinaryOp::kEq, in(0), in(1));
    case OpKind::kLess: return Bin(BinaryOp::kLt, in(0), in(1));
    case OpKind::kLessOrEqual: return Bin(BinaryOp::kLe, in(0), in(1));
    case OpKind::kGreater: return Bin(BinaryOp::kGt, in(0), in(1));
    case OpKind::kGreaterOrEqual: return Bin(BinaryOp::kGe, in(0), in(1));
    case OpKind::kAnd: return Bin(BinaryOp::kAnd, in(0), in(1));
    case OpKind::kOr: return Bin(BinaryOp::kOr, in(0), in(1));
    case OpKind::kXor: return Bin(BinaryOp::kNe, in(0), in(1));
    case OpKind::kNot: return loop::Unary(UnaryOp::kNot, in(0));
    case OpKind::kIsNaN: {
      Expr x = in(0);
      if (!IsFloat(x->dtype)) return loop::IntImm(0, DType::kBool);
      return Bin(BinaryOp::kNe, x, x);
    }
    case OpKind::kIsInf: {
      Expr x = in(0);
      if (!IsFloat(x->dtype)) return loop::IntImm(0, DType::kBool);
      const double inf = std::numeric_limits<double>::infinity();
      Expr pos = Bin(BinaryOp::kEq, x, Const(inf, x->dtype));
      Expr neg = Bin(BinaryOp::kEq, x, Const(-inf, x->dtype));
      const graph::IsInfAttrs a = graph::IsInfAttrs::Of(node);
      bool dp = a.detect_positive;
      bool dn = a.detect_negative;
      if (dp && dn) return Bin(BinaryOp::kOr, pos, neg);
      if (dp) return pos;
      if (dn) return neg;
      return loop::IntImm(0, DType::kBool);
    }
    case OpKind::kWhere: return loop::Select(in(0), in(1), in(2));
    case OpKind::kMod: {
      Expr a = in(0), c = in(1);
      if (IsFloat(a->dtype)) {
        // fmod: a - trunc(a / c) * c.
        Expr q = Bin(BinaryOp::kDiv, a, c);
        Expr t = loop::Select(Bin(BinaryOp::kLt, q, Const(0, q->dtype)),
                              loop::Unary(UnaryOp::kCeil, q), loop::Unary(UnaryOp::kFloor, q));
        return a - t * c;
      }
      if (graph::ModAttrs::Of(node).fmod) {
        // a - trunc(a / c) * c, and 0 for c = 0 (as the reference evaluator).
        return loop::Select(Bin(BinaryOp::kEq, c, Const(0, c->dtype)), Const(0, a->dtype),
                            a - Bin(BinaryOp::kDiv, a, c) * c);
      }
      return Bin(BinaryOp::kFloorMod, a, c);
    }
    case OpKind::kBitShift: {
      bool left = graph::BitShiftAttrs::Of(node).direction == graph::BitShiftDirection::kLeft;
      return Bin(left ? BinaryOp::kShl : BinaryOp::kShr, in(0), in(1));
    }
    case OpKind::kMean: {
      Expr acc = in(0);
      if (!IsFloat(acc->dtype)) return NoLowering(node, "integer operands");
      for (int i = 1; i < node.num_inputs(); ++i) acc = acc + in(i);
      return Bin(BinaryOp::kDiv, acc, Const(node.num_inputs(), acc->dtype));
    }
    case OpKind::kSign: {
      Expr x = in(0);
      Expr zero = Const(0, x->dtype);
      Expr neg = IsSigned(x->dtype) || IsFloat(x->dtype) ? Const(-1, x->dtype) : zero;
      return loop::Select(Bin(BinaryOp::kGt, x, zero), Const(1, x->dtype),
                          loop::Select(Bin(BinaryOp::kLt, x, zero), neg, x));
    }
    case OpKind::kFloor: return loop::Unary(UnaryOp::kFloor, in(0));
    case OpKind::kCeil: return loop::Unary(UnaryOp::kCeil, in(0));
    case OpKind::kRound: return loop::Unary(UnaryOp::kRound, in(0));
    case OpKind::kSin: return FloatMath(node, UnaryOp::kSin, in(0));
    case OpKind::kCos: return FloatMath(node, UnaryOp::kCos, in(0));
    case OpKind::kTan: return FloatMath(node, UnaryOp::kTan, in(0));
    case OpKind::kAsin: return FloatMath(node, UnaryOp::kAsin, in(0));
    case OpKind::kAcos: return FloatMath(node, UnaryOp::kAcos, in(0));
    case OpKind::kAtan: return FloatMath(node, UnaryOp::kAtan, in(0));
    case OpKind::kSinh: return FloatMath(node, UnaryOp::kSinh, in(0));
    case OpKind::kCosh: return FloatMath(node, UnaryOp::kCosh, in(0));
    case OpKind::kAsinh: return FloatMath(node, UnaryOp::kAsinh, in(0));
    case OpKind::kAcosh: return FloatMath(node, UnaryOp::kAcosh, in(0));
    case OpKind::kAtanh: return FloatMath(node, UnaryOp::kAtanh, in(0));
    default:
      (void)out_dt;
      return NoLowering(node, "this op as an elementwise expression");
  }
}

absl::StatusOr<std::vector<Stmt>> LowerTensorOp(KernelBuilder& b, const graph::Node& node,
                                                const Epilogue& epi) {
  switch (node.op()) {
    case OpKind::kReduceSum: case OpKind::kReduceMean: case OpKind::kReduceMax:
    case OpKind::kReduceMin: case OpKind::kReduceProd: case OpKind::kReduceL1:
    case OpKind::kReduceL2: case OpKind::kReduceLogSum: case OpKind::kReduceLogSumExp:
    case OpKind::kReduceSumSquare:
      return LowerReduce(b, node, epi);
    case OpKind::kArgMax: case OpKind::kArgMin:
      return LowerArg(b, node, epi);
    case OpKind::kScatterElements: case OpKind::kScatterND:
      return LowerScatter(b, node, epi);
    case OpKind::kCumSum:
      return LowerCumSum(b, node, epi);
    case OpKind::kEinsum:
      return LowerEinsum(b, node, epi);
    case OpKind::kDet:
      return LowerDet(b, node, epi);
    case OpKind::kTfIdfVectorizer:
      return LowerTfIdfVectorizer(b, node, epi);
    case OpKind::kNonZero: case OpKind::kCompress: case OpKind::kUnique:
    case OpKind::kNonMaxSuppression:
    case OpKind::kRuntimeCheck:
      return LowerDataDependent(b, node, epi);
    default:
      return LowerInjective(b, node, epi);
  }
}

}  // namespace kiln::lowering
