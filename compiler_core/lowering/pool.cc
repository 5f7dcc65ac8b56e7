// MaxPool / AveragePool / LpPool (pads, strides, dilations, ceil_mode, count_include_pad, p)
// and GlobalAveragePool / GlobalMaxPool / GlobalLpPool, in NC[spatial] or the blocked
// NC[spatial]<x>c layout (layout attribute: one more innermost output loop "c" over the channel
// lanes; LpPool ops are never blocked). Window positions outside the input are masked with a
// select over a clamped (always in-bounds) load; AveragePool divides by the per-window count;
// LpPool sums |x|^p and takes the 1/p-th power in the final nest.
// MaxPool's optional Indices output (plain layout only) is the extra result "out1": the
// flattened NC[spatial] index of the first maximum, spatial part row-major, or column-major
// with storage_order 1.
#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/lowering/op_lowering.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::lowering {
namespace {

using graph::OpKind;
using loop::BinaryOp;
using loop::Expr;
using loop::Stmt;

/// Number of k in [0, kernel) with lo <= start + k*dil < hi, where start = o*stride - pad_begin
/// (`hi` an i64 expression: a symbolic input dim, plus the end pad when it counts).
Expr WindowCount(Expr o, int64_t stride, int64_t pad_begin, int64_t dil, int64_t kernel,
                 int64_t lo, const Expr& hi) {
  // lo - start = (lo + pad_begin) - o*stride; hi - 1 - start = (hi - 1 + pad_begin) - o*stride.
  Expr os = IdxMul(o, stride);
  Expr below = Idx(lo + pad_begin) - os;
  Expr above = IdxAdd(hi, pad_begin - 1) - os;
  Expr kmin, kmax;
  if (dil == 1) {
    kmin = below;
    kmax = above;
  } else {
    kmin = loop::Binary(BinaryOp::kFloorDiv, IdxAdd(below, dil - 1), Idx(dil));
    kmax = loop::Binary(BinaryOp::kFloorDiv, above, Idx(dil));
  }
  kmin = loop::Max(kmin, Idx(0));
  kmax = loop::Min(kmax, Idx(kernel - 1));
  return loop::Max(IdxAdd(kmax - kmin, 1), Idx(0));
}

/// |v|^p, the term LpPool sums (x*x for p = 2).
Expr LpTerm(Expr v, int64_t p, DType dt) {
  if (p == 2) return v * v;
  Expr a = loop::Unary(loop::UnaryOp::kAbs, v);
  if (p == 1) return a;
  return loop::Binary(BinaryOp::kPow, a, Const(static_cast<double>(p), dt));
}

/// The LpPool finalizer: sum^(1/p) (sqrt for p = 2); null for p = 1 (the identity).
std::function<Expr(Expr, const std::vector<Expr>&)> LpRoot(int64_t p, DType dt) {
  if (p == 1) return nullptr;
  return [p, dt](Expr v, const std::vector<Expr>&) {
    if (p == 2) return loop::Unary(loop::UnaryOp::kSqrt, v);
    return loop::Binary(BinaryOp::kPow, v, Const(1.0 / static_cast<double>(p), dt));
  };
}

absl::StatusOr<std::vector<Stmt>> LowerWindowPool(KernelBuilder& b, const graph::Node& node,
                                                  const Epilogue& epi) {
  const bool is_max = node.op() == OpKind::kMaxPool;
  const bool is_lp = node.op() == OpKind::kLpPool;
  const graph::PoolAttrs a = graph::PoolAttrs::Of(node);
  const int64_t lp = a.p;
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  const DType dt = node.output(0)->type().dtype;
  // Blocked layout: a trailing channel-lane dim "c" after the spatial dims.
  const size_t lane = node.attrs().Has("layout") ? 1 : 0;
  const size_t nsp = xs.size() >= 3 + lane ? xs.size() - 2 - lane : 0;
  if (nsp < 1 || nsp > 3 || os.size() != xs.size()) {
    return NoLowering(node, absl::StrCat("input rank ", xs.size()));
  }
  std::vector<int64_t> kernel = a.kernel_shape;
  std::vector<int64_t> strides = graph::OrFill(a.strides, nsp, 1);
  std::vector<int64_t> dilations = graph::OrFill(a.dilations, nsp, 1);
  std::vector<int64_t> pads = graph::OrFill(a.pads, 2 * nsp, 0);
  const bool include_pad = a.count_include_pad;
  if (kernel.size() != nsp || strides.size() != nsp || dilations.size() != nsp ||
      pads.size() != 2 * nsp) {
    return NoLowering(node, "these kernel_shape/strides/dilations/pads attributes");
  }
  if (is_lp && lp <= 0) return NoLowering(node, absl::StrCat("p = ", lp));
  const graph::Value* indices_value =
      is_max && node.outputs().size() > 1 ? node.output(1) : nullptr;
  if (indices_value != nullptr && (lane || !epi.empty())) {
    return NoLowering(node, "the Indices output in a blocked layout or with fused consumers");
  }
  const bool column_major = a.storage_order != 0;
  // Symbolic batch or spatial dims: the loops run to the dims the kernel receives.
  const bool symbolic = !xv->type().is_static() || !node.output(0)->type().is_static();
  if (symbolic && indices_value != nullptr) {
    return NoLowering(node, "the Indices output with symbolic dims");
  }

  loop::BufferRef x = b.Input(xv);
  loop::BufferRef out = b.out();
  const std::vector<Expr> xd = loop::BufferDims(*x), od = loop::BufferDims(*out);
  // MaxPool's Indices: flattened NC[spatial] index of the (first) maximum.
  loop::BufferRef ind = indices_value != nullptr ? b.ExtraOutput(indices_value) : nullptr;
  Expr identity = is_max ? Lowest(dt) : Const(0, dt);
  std::vector<std::string> onames = {"n", lane ? "cb" : "c"};
  for (const std::string& s : SpatialNames("o", nsp)) onames.push_back(s);
  if (lane) onames.push_back("c");
  std::vector<Stmt> nests;
  {
    std::vector<loop::Var> vars = b.NewVars("init.", onames);
    Stmt init = loop::Store(out, Refs(vars), identity);
    if (ind) init = loop::Block({init, loop::Store(ind, Refs(vars), Idx(0))});
    nests.push_back(NestDims(vars, od, init));
  }
  {
    std::vector<std::string> names = onames;
    for (const std::string& s : SpatialNames("k", nsp)) names.push_back(s);
    std::vector<loop::Var> vars = b.NewVars("", names);
    std::vector<Expr> idx = Refs(vars);
    std::vector<Expr> out_idx(idx.begin(), idx.begin() + os.size());
    std::vector<Expr> in_idx = {idx[0], idx[1]};
    std::vector<Expr> extents = od;
    std::vector<bool> reduction(os.size(), false);
    Expr cond;
    for (size_t d = 0; d < nsp; ++d) {
      Expr k = idx[os.size() + d];
      Expr pos = IdxAdd(IdxAdd(IdxMul(idx[2 + d], strides[d]), IdxMul(k, dilations[d])), -pads[d]);
      in_idx.push_back(InBounds(pos, xd[2 + d], &cond));
      extents.push_back(Idx(kernel[d]));
      reduction.push_back(true);
    }
    if (lane) in_idx.push_back(idx[2 + nsp]);
    Expr value = loop::Select(cond, loop::Load(x, in_idx), identity);
    if (is_lp) value = LpTerm(value, lp, dt);
    Expr acc = loop::Load(out, out_idx);
    Stmt update = loop::Store(out, out_idx, is_max ? loop::Max(acc, value) : acc + value);
    if (ind) {
      // Flat index of the (clamped, so only chosen when in bounds) input position; a strict
      // comparison keeps the first maximum in window order. Stored before `out` changes.
      int64_t plane = 1;
      for (size_t d = 0; d < nsp; ++d) plane *= xs[2 + d];
      Expr flat = IdxMul(IdxAdd(IdxMul(idx[0], xs[1]), idx[1]), plane);
      int64_t stride = 1;
      for (size_t i = 0; i < nsp; ++i) {
        size_t d = column_major ? i : nsp - 1 - i;
        flat = IdxAdd(flat, IdxMul(in_idx[2 + d], stride));
        stride *= xs[2 + d];
      }
      Expr better = loop::Binary(BinaryOp::kGt, value, acc);
      update = loop::Block({loop::Store(ind, out_idx,
                                        loop::Select(better, flat, loop::Load(ind, out_idx))),
                            update});
    }
    nests.push_back(NestDims(vars, extents, update, reduction));
  }
  std::function<Expr(Expr, const std::vector<Expr>&)> divide;
  if (is_lp) {
    divide = LpRoot(lp, dt);
  } else if (!is_max) {
    divide = [&](Expr v, const std::vector<Expr>& idx) {
      Expr count;
      for (size_t d = 0; d < nsp; ++d) {
        int64_t lo = include_pad ? -pads[d] : 0;
        Expr hi = include_pad ? IdxAdd(xd[2 + d], pads[nsp + d]) : xd[2 + d];
        Expr c = WindowCount(idx[2 + d], strides[d], pads[d], dilations[d], kernel[d], lo, hi);
        count = count ? count * c : c;
      }
      // A window wholly outside the counted region sums to 0; divide by 1, never by 0.
      return loop::Binary(BinaryOp::kDiv, v, loop::Cast(dt, loop::Max(count, Idx(1))));
    };
  }
  KILN_ASSIGN_OR_RETURN(Stmt tail, epi.FinalNest(divide));
  if (tail) nests.push_back(tail);
  return nests;
}

absl::StatusOr<std::vector<Stmt>> LowerGlobalPool(KernelBuilder& b, const graph::Node& node,
                                                  const Epilogue& epi) {
  const bool is_max = node.op() == OpKind::kGlobalMaxPool;
  const bool is_lp = node.op() == OpKind::kGlobalLpPool;
  const int64_t lp = is_lp ? graph::GlobalLpPoolAttrs::Of(node).p : 2;
  if (is_lp && lp <= 0) return NoLowering(node, absl::StrCat("p = ", lp));
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const DType dt = node.output(0)->type().dtype;
  // Blocked layout: a trailing channel-lane dim "c" after the spatial dims.
  const size_t lane = node.attrs().Has("layout") ? 1 : 0;
  if (xs.size() < 3 + lane) return NoLowering(node, absl::StrCat("input rank ", xs.size()));
  const size_t nsp = xs.size() - 2 - lane;
  if (xs[1] == kSymbolicDim || (lane && xs.back() == kSymbolicDim)) {
    return NoLowering(node, "a symbolic channel count");
  }
  loop::BufferRef x = b.Input(xv);
  loop::BufferRef out = b.out();
  const std::vector<Expr> xd = loop::BufferDims(*x);
  Expr identity = is_max ? Lowest(dt) : Const(0, dt);
  std::vector<Stmt> nests;
  // `idx` holds n, c(b), then (all loops) the spatial dims and the lane.
  auto out_index = [&](const std::vector<Expr>& idx) {
    std::vector<Expr> o = {idx[0], idx[1]};
    for (size_t d = 0; d < nsp; ++d) o.push_back(Idx(0));
    if (lane) o.push_back(idx.back());
    return o;
  };
  std::vector<std::string> init_names = {"n", lane ? "cb" : "c"};
  std::vector<Expr> init_extents = {xd[0], xd[1]};
  if (lane) {
    init_names.push_back("c");
    init_extents.push_back(xd.back());
  }
  {
    std::vector<loop::Var> vars = b.NewVars("init.", init_names);
    nests.push_back(
        NestDims(vars, init_extents, loop::Store(out, out_index(Refs(vars)), identity)));
  }
  std::vector<Expr> spatial;  // the dims averaged over
  {
    std::vector<std::string> names = {"n", lane ? "cb" : "c"};
    for (const std::string& s : SpatialNames("", nsp)) names.push_back(s);
    if (lane) names.push_back("c");
    std::vector<loop::Var> vars = b.NewVars("", names);
    std::vector<Expr> idx = Refs(vars);
    std::vector<Expr> out_idx = out_index(idx);
    std::vector<bool> reduction = {false, false};
    for (size_t d = 0; d < nsp; ++d) {
      reduction.push_back(true);
      spatial.push_back(xd[2 + d]);
    }
    if (lane) reduction.push_back(false);
    Expr acc = loop::Load(out, out_idx);
    Expr v = loop::Load(x, idx);
    if (is_lp) v = LpTerm(v, lp, dt);
    nests.push_back(NestDims(vars, xd,
                             loop::Store(out, out_idx, is_max ? loop::Max(acc, v) : acc + v),
                             reduction));
  }
  std::function<Expr(Expr, const std::vector<Expr>&)> divide;
  if (is_lp) {
    divide = LpRoot(lp, dt);
  } else if (!is_max) {
    divide = [&](Expr v, const std::vector<Expr>&) {
      Expr count = Idx(1);
      for (const Expr& d : spatial) count = MulDims(count, d);
      return loop::Binary(BinaryOp::kDiv, v,
                          count->kind == loop::ExprKind::kIntImm
                              ? Const(static_cast<double>(count->int_value), dt)
                              : loop::Cast(dt, count));
    };
  }
  KILN_ASSIGN_OR_RETURN(Stmt tail, epi.FinalNest(divide));
  if (tail) nests.push_back(tail);
  return nests;
}

}  // namespace

absl::StatusOr<std::vector<Stmt>> LowerPool(KernelBuilder& b, const graph::Node& node,
                                            const Epilogue& epi) {
  KILN_RETURN_IF_ERROR(epi.CheckSameDType(node));
  if (node.op() == OpKind::kGlobalAveragePool || node.op() == OpKind::kGlobalMaxPool ||
      node.op() == OpKind::kGlobalLpPool) {
    return LowerGlobalPool(b, node, epi);
  }
  return LowerWindowPool(b, node, epi);
}

}  // namespace kiln::lowering
