// Normalizations.
//
// LayerNormalization / InstanceNormalization / MeanVarianceNormalization: one nest over the
// kept dims ("d<k>") whose body runs three passes over the normalized dims: "mean.r<k>"
// (reduction) into workspace "mean", "var.r<k>" (reduction) into workspace "rstd" (then turned
// into the reciprocal standard deviation), and "norm.r<k>" writing the result, with the scale,
// bias and fused consumers applied at that store.
// LRN: one nest over the output ("d0", ...) whose value sums the squares of the channel window
// as an unrolled expression of clamped loads under selects.
// Hardmax / LpNormalization: one nest over the non-axis dims with axis passes "max.a" /
// "arg.a" / "out.a" (Hardmax) or "norm.a" / "out.a" (LpNormalization) and small workspaces.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/nn_op_rules.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/lowering/op_lowering.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::lowering {
namespace {

using graph::OpKind;
using loop::BinaryOp;
using loop::Expr;
using loop::Stmt;
using loop::UnaryOp;

Expr Div(Expr a, Expr b) { return loop::Binary(BinaryOp::kDiv, std::move(a), std::move(b)); }

/// Splits the dims of a rank-`rank` tensor into kept loops (named "d<k>") and reduced dims.
struct Split {
  std::vector<loop::Var> outer;
  std::vector<int64_t> outer_extents;
  std::vector<Expr> ws_idx;  // full-rank index into a workspace with reduced dims of size 1
  std::vector<int64_t> ws_shape;
  std::vector<int64_t> reduced;  // reduced dims, ascending
};

Split SplitDims(KernelBuilder& b, const std::vector<int64_t>& shape,
                const std::vector<int64_t>& reduced_dims) {
  Split s;
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t a : reduced_dims) reduced[a] = true;
  s.ws_shape = shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d]) {
      s.ws_idx.push_back(Idx(0));
      s.ws_shape[d] = 1;
      s.reduced.push_back(static_cast<int64_t>(d));
      continue;
    }
    s.outer.push_back(b.NewVar(absl::StrCat("d", d)));
    s.outer_extents.push_back(shape[d]);
    s.ws_idx.push_back(loop::VarRef(s.outer.back()));
  }
  return s;
}

/// Loops "<stage>.r<k>" over the reduced dims around make_body(full index).
template <typename F>
Stmt ReducedLoops(KernelBuilder& b, const Split& s, const std::vector<int64_t>& shape,
                  const std::string& stage, bool reduction, F make_body) {
  std::vector<loop::Var> vars;
  std::vector<int64_t> extents;
  std::vector<Expr> full = s.ws_idx;
  for (int64_t d : s.reduced) {
    vars.push_back(b.NewVar(absl::StrCat(stage, ".r", d)));
    extents.push_back(shape[d]);
    full[d] = loop::VarRef(vars.back());
  }
  return Nest(vars, extents, make_body(full), std::vector<bool>(vars.size(), reduction));
}

/// The epsilon of a LayerNormalization or InstanceNormalization; MeanVarianceNormalization has
/// none and uses the common 1e-5.
double Epsilon(const graph::Node& node) {
  switch (node.op()) {
    case OpKind::kLayerNormalization:
      return graph::LayerNormalizationAttrs::Of(node).epsilon;
    case OpKind::kInstanceNormalization:
      return graph::InstanceNormalizationAttrs::Of(node).epsilon;
    default:
      return 1e-5f;
  }
}

absl::StatusOr<std::vector<Stmt>> LowerMeanVarNorm(KernelBuilder& b, const graph::Node& node,
                                                   const Epilogue& epi) {
  KILN_RETURN_IF_ERROR(epi.CheckSameDType(node));
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const DType dt = node.output(0)->type().dtype;
  if (!IsFloat(dt)) return NoLowering(node, "integer operands");
  Split s = SplitDims(b, xs, graph::NormalizedAxes(node));
  int64_t count = 1;
  for (int64_t d : s.reduced) count *= xs[d];
  // Symbolic dims among the kept ones: the mean and rstd are scalars local to each row.
  const bool symbolic = !xv->type().is_static();
  for (int64_t d : s.reduced) {
    if (xs[d] == kSymbolicDim) return NoLowering(node, "normalizing over a symbolic dim");
  }
  loop::BufferRef x = b.Input(xv);
  auto param = [&](int i) -> loop::BufferRef {
    return node.input(i) != nullptr ? b.Input(node.input(i)) : nullptr;
  };
  loop::BufferRef scale = param(1), bias = param(2);
  loop::BufferRef out = b.out();
  loop::BufferRef mean, rstd;
  std::vector<Expr> stat_idx = s.ws_idx;
  if (symbolic) {
    mean = loop::MakeBuffer("mean", dt, {1}, loop::Buffer::Scope::kLocal);
    rstd = loop::MakeBuffer("rstd", dt, {1}, loop::Buffer::Scope::kLocal);
    stat_idx = {Idx(0)};
  } else {
    mean = b.Workspace("mean", dt, s.ws_shape);
    rstd = b.Workspace("rstd", dt, s.ws_shape);
  }
  Expr mean_v = loop::Load(mean, stat_idx), rstd_v = loop::Load(rstd, stat_idx);
  const double eps = Epsilon(node);
  const double inv_count = count > 0 ? 1.0 / static_cast<double>(count) : 0.0;

  std::vector<Stmt> body;
  body.push_back(loop::Store(mean, stat_idx, Const(0, dt)));
  body.push_back(ReducedLoops(b, s, xs, "mean", true, [&](const std::vector<Expr>& i) {
    return loop::Store(mean, stat_idx, mean_v + loop::Load(x, i));
  }));
  body.push_back(loop::Store(mean, stat_idx, mean_v * Const(inv_count, dt)));
  body.push_back(loop::Store(rstd, stat_idx, Const(0, dt)));
  body.push_back(ReducedLoops(b, s, xs, "var", true, [&](const std::vector<Expr>& i) {
    Expr d = loop::Load(x, i) - mean_v;
    return loop::Store(rstd, stat_idx, rstd_v + d * d);
  }));
  Expr var = rstd_v * Const(inv_count, dt);
  Expr inv = node.op() == OpKind::kMeanVarianceNormalization
                 ? Div(Const(1, dt), loop::Unary(UnaryOp::kSqrt, var) + Const(1e-9, dt))
                 : Div(Const(1, dt), loop::Unary(UnaryOp::kSqrt, var + Const(eps, dt)));
  body.push_back(loop::Store(rstd, stat_idx, inv));
  absl::Status status;
  body.push_back(ReducedLoops(b, s, xs, "norm", false, [&](const std::vector<Expr>& i) -> Stmt {
    Expr v = (loop::Load(x, i) - mean_v) * rstd_v;
    auto affine = [&](const loop::BufferRef& p, const graph::Value* pv) -> Expr {
      if (node.op() == OpKind::kInstanceNormalization) return loop::Load(p, {i[1]});
      return loop::Load(p, BroadcastIndices(pv->type().shape, i));
    };
    if (scale) v = v * affine(scale, node.input(1));
    if (bias) v = v + affine(bias, node.input(2));
    absl::StatusOr<Expr> e = epi.Apply(v, i);
    if (!e.ok()) status = e.status();
    return loop::Store(out, i, e.ok() ? *e : v);
  }));
  KILN_RETURN_IF_ERROR(status);
  Stmt row = loop::Block(std::move(body));
  if (symbolic) row = loop::Allocate(mean, loop::Allocate(rstd, row));
  std::vector<Expr> outer_dims;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (std::find(s.reduced.begin(), s.reduced.end(), static_cast<int64_t>(d)) != s.reduced.end()) {
      continue;
    }
    outer_dims.push_back(loop::BufferDim(*x, d));
  }
  return std::vector<Stmt>{NestDims(s.outer, outer_dims, row)};
}

absl::StatusOr<std::vector<Stmt>> LowerLrn(KernelBuilder& b, const graph::Node& node,
                                           const Epilogue& epi) {
  KILN_RETURN_IF_ERROR(epi.CheckSameDType(node));
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const DType dt = node.output(0)->type().dtype;
  if (!IsFloat(dt) || xs.size() < 2) return NoLowering(node, "this input");
  const graph::LRNAttrs a = graph::LRNAttrs::Of(node);
  const int64_t size = a.size;
  const double alpha = a.alpha;
  const double beta = a.beta;
  const double bias = a.bias;
  if (size > 64) return NoLowering(node, "a window wider than 64 channels");
  loop::BufferRef x = b.Input(xv);
  std::vector<loop::Var> vars = b.NewVars("", AxisNames(xs.size()));
  std::vector<Expr> idx = Refs(vars);
  const int64_t lo = (size - 1) / 2;
  Expr sum;
  for (int64_t k = 0; k < size; ++k) {
    Expr c = IdxAdd(idx[1], k - lo);
    std::vector<Expr> at = idx;
    at[1] = IdxClamp(c, xs[1]);
    Expr v = loop::Load(x, at);
    Expr term = v * v;
    if (k != lo) {
      Expr inside = AndCond(loop::Binary(BinaryOp::kGe, c, Idx(0)),
                            loop::Binary(BinaryOp::kLt, c, Idx(xs[1])));
      term = loop::Select(inside, term, Const(0, dt));
    }
    sum = sum ? sum + term : term;
  }
  Expr denom = loop::Binary(BinaryOp::kPow,
                            Const(bias, dt) + Const(alpha / static_cast<double>(size), dt) * sum,
                            Const(beta, dt));
  Expr value = Div(loop::Load(x, idx), denom);
  KILN_ASSIGN_OR_RETURN(value, epi.Apply(value, idx));
  return std::vector<Stmt>{Nest(vars, xs, loop::Store(b.out(), idx, value))};
}

absl::StatusOr<std::vector<Stmt>> LowerAlongAxis(KernelBuilder& b, const graph::Node& node,
                                                 const Epilogue& epi) {
  KILN_RETURN_IF_ERROR(epi.CheckSameDType(node));
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const DType dt = node.output(0)->type().dtype;
  const int64_t rank = static_cast<int64_t>(xs.size());
  const bool hardmax = node.op() == OpKind::kHardmax;
  const graph::LpNormalizationAttrs lp =
      hardmax ? graph::LpNormalizationAttrs{} : graph::LpNormalizationAttrs::Of(node);
  // An absent axis is the last (ONNX's -1); the importer normalizes a present one.
  int64_t axis = rank - 1;
  if (node.attrs().Has("axis")) axis = hardmax ? graph::AxisAttrs::Of(node).axis : lp.axis;
  if (!IsFloat(dt) || rank == 0 || axis < 0 || axis >= rank) return NoLowering(node, "this axis");
  Split s = SplitDims(b, xs, {axis});
  loop::BufferRef x = b.Input(xv);
  loop::BufferRef out = b.out();
  std::vector<Stmt> body;
  absl::Status status;
  auto store_out = [&](const std::vector<Expr>& i, Expr v) -> Stmt {
    absl::StatusOr<Expr> e = epi.Apply(v, i);
    if (!e.ok()) status = e.status();
    return loop::Store(out, i, e.ok() ? *e : v);
  };
  if (hardmax) {
    loop::BufferRef max = b.Workspace("max", dt, s.ws_shape);
    loop::BufferRef arg = b.Workspace("arg", DType::kInt64, s.ws_shape);
    Expr max_v = loop::Load(max, s.ws_idx), arg_v = loop::Load(arg, s.ws_idx);
    body.push_back(loop::Store(max, s.ws_idx, Lowest(dt)));
    body.push_back(ReducedLoops(b, s, xs, "max", true, [&](const std::vector<Expr>& i) {
      return loop::Store(max, s.ws_idx, loop::Max(max_v, loop::Load(x, i)));
    }));
    // The first index holding the maximum: min over the axis of (x == max ? a : len).
    body.push_back(loop::Store(arg, s.ws_idx, Idx(xs[axis])));
    body.push_back(ReducedLoops(b, s, xs, "arg", true, [&](const std::vector<Expr>& i) {
      Expr hit = loop::Binary(BinaryOp::kEq, loop::Load(x, i), max_v);
      return loop::Store(arg, s.ws_idx, loop::Min(arg_v, loop::Select(hit, i[axis], Idx(xs[axis]))));
    }));
    body.push_back(ReducedLoops(b, s, xs, "out", false, [&](const std::vector<Expr>& i) {
      Expr one = loop::Binary(BinaryOp::kEq, i[axis], arg_v);
      return store_out(i, loop::Select(one, Const(1, dt), Const(0, dt)));
    }));
  } else {
    const int64_t p = lp.p;
    loop::BufferRef norm = b.Workspace("norm", dt, s.ws_shape);
    Expr norm_v = loop::Load(norm, s.ws_idx);
    body.push_back(loop::Store(norm, s.ws_idx, Const(0, dt)));
    body.push_back(ReducedLoops(b, s, xs, "norm", true, [&](const std::vector<Expr>& i) {
      Expr v = loop::Load(x, i);
      return loop::Store(norm, s.ws_idx, norm_v + (p == 1 ? loop::Unary(UnaryOp::kAbs, v) : v * v));
    }));
    if (p == 2) body.push_back(loop::Store(norm, s.ws_idx, loop::Unary(UnaryOp::kSqrt, norm_v)));
    body.push_back(ReducedLoops(b, s, xs, "out", false, [&](const std::vector<Expr>& i) {
      return store_out(i, Div(loop::Load(x, i), norm_v));
    }));
  }
  KILN_RETURN_IF_ERROR(status);
  return std::vector<Stmt>{Nest(s.outer, s.outer_extents, loop::Block(std::move(body)))};
}

}  // namespace

absl::StatusOr<std::vector<Stmt>> LowerNormalization(KernelBuilder& b, const graph::Node& node,
                                                     const Epilogue& epi) {
  switch (node.op()) {
    case OpKind::kLayerNormalization:
    case OpKind::kInstanceNormalization:
    case OpKind::kMeanVarianceNormalization:
      return LowerMeanVarNorm(b, node, epi);
    case OpKind::kLRN:
      return LowerLrn(b, node, epi);
    case OpKind::kHardmax:
    case OpKind::kLpNormalization:
      return LowerAlongAxis(b, node, epi);
    default:
      return NoLowering(node, "this op as a normalization");
  }
}

}  // namespace kiln::lowering
