// ConvTranspose and NegativeLogLikelihoodLoss, and the dispatch of the NN-op anchors
// (graph::IsNnOp) to their lowerings.
//
// ConvTranspose (gather form, NC[D]HW): init nest "init.n", "init.oc", "init.o*" (out = bias or
// 0), update nest "n", "oc", "o*", then reductions "ic", "k*": an input position contributes
// when (o + pad - k*dilation) is a non-negative multiple of the stride inside the input (a
// select over a clamped load), then the epilogue nest when consumers are fused.
// NegativeLogLikelihoodLoss: reduction "none" is one nest over the target ("d0", ...);
// "sum"/"mean" accumulate into the scalar result over reduction loops "r0", ... (and the
// weight total into workspace "wsum" for "mean"), then divide.
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

absl::StatusOr<std::vector<Stmt>> LowerConvTranspose(KernelBuilder& b, const graph::Node& node,
                                                     const Epilogue& epi) {
  KILN_RETURN_IF_ERROR(epi.CheckSameDType(node));
  const graph::Value* xv = node.input(0);
  const graph::Value* wv = node.input(1);
  const graph::Value* bv = node.input(2);
  const std::vector<int64_t>& xs = xv->type().shape;
  const std::vector<int64_t>& ws = wv->type().shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  const DType dt = node.output(0)->type().dtype;
  const size_t nsp = xs.size() - 2;
  if (nsp < 1 || nsp > 3) return NoLowering(node, absl::StrCat("input rank ", xs.size()));
  const graph::ConvAttrs a = graph::ConvAttrs::Of(node);
  std::vector<int64_t> strides = graph::OrFill(a.strides, nsp, 1);
  std::vector<int64_t> dilations = graph::OrFill(a.dilations, nsp, 1);
  std::vector<int64_t> pads = graph::OrFill(a.pads, 2 * nsp, 0);
  const int64_t group = a.group;
  const int64_t cin_g = xs[1] / group, cout_g = ws[1];

  loop::BufferRef x = b.Input(xv);
  loop::BufferRef w = b.Input(wv);
  loop::BufferRef bias = bv != nullptr ? b.Input(bv) : nullptr;
  loop::BufferRef out = b.out();
  std::vector<Stmt> nests;

  std::vector<std::string> onames = {"n", "oc"};
  for (const std::string& s : SpatialNames("o", nsp)) onames.push_back(s);
  {
    std::vector<loop::Var> vars = b.NewVars("init.", onames);
    std::vector<Expr> idx = Refs(vars);
    Expr value = bias ? loop::Load(bias, {idx[1]}) : Const(0, dt);
    nests.push_back(Nest(vars, os, loop::Store(out, idx, value)));
  }
  {
    std::vector<std::string> names = onames;
    names.push_back("ic");
    for (const std::string& s : SpatialNames("k", nsp)) names.push_back(s);
    std::vector<loop::Var> vars = b.NewVars("", names);
    std::vector<Expr> idx = Refs(vars);
    std::vector<int64_t> extents = os;
    extents.push_back(cin_g);
    std::vector<bool> reduction(os.size(), false);
    reduction.push_back(true);
    for (size_t d = 0; d < nsp; ++d) {
      extents.push_back(ws[2 + d]);
      reduction.push_back(true);
    }
    Expr oc = idx[1], ic = idx[os.size()];
    Expr in_c = ic, w_oc = oc;
    if (group > 1) {
      Expr g = loop::Binary(BinaryOp::kFloorDiv, oc, Idx(cout_g));
      in_c = IdxAdd(IdxMul(g, cin_g), ic);
      w_oc = loop::Binary(BinaryOp::kFloorMod, oc, Idx(cout_g));
    }
    std::vector<Expr> out_idx(idx.begin(), idx.begin() + os.size());
    std::vector<Expr> x_idx = {idx[0], in_c};
    std::vector<Expr> w_idx = {in_c, w_oc};
    Expr cond;
    for (size_t d = 0; d < nsp; ++d) {
      Expr k = idx[os.size() + 1 + d];
      Expr t = IdxAdd(idx[2 + d], pads[d]) - IdxMul(k, dilations[d]);
      Expr i = strides[d] == 1 ? t : loop::Binary(BinaryOp::kFloorDiv, t, Idx(strides[d]));
      cond = AndCond(cond, loop::Binary(BinaryOp::kGe, t, Idx(0)));
      cond = AndCond(cond, loop::Binary(BinaryOp::kLt, i, Idx(xs[2 + d])));
      if (strides[d] != 1) {
        cond = AndCond(cond, loop::Binary(BinaryOp::kEq,
                                          loop::Binary(BinaryOp::kFloorMod, t, Idx(strides[d])),
                                          Idx(0)));
      }
      x_idx.push_back(IdxClamp(i, xs[2 + d]));
      w_idx.push_back(k);
    }
    Expr term = loop::Select(cond, loop::Load(x, x_idx) * loop::Load(w, w_idx), Const(0, dt));
    Expr value = loop::Load(out, out_idx) + term;
    nests.push_back(Nest(vars, extents, loop::Store(out, out_idx, value), reduction));
  }
  KILN_ASSIGN_OR_RETURN(Stmt tail, epi.FinalNest(nullptr));
  if (tail) nests.push_back(tail);
  return nests;
}

absl::StatusOr<std::vector<Stmt>> LowerNll(KernelBuilder& b, const graph::Node& node,
                                           const Epilogue& epi) {
  KILN_RETURN_IF_ERROR(epi.CheckSameDType(node));
  const graph::Value* xv = node.input(0);
  const graph::Value* tv = node.input(1);
  const graph::Value* wv = node.input(2);
  const std::vector<int64_t>& xs = xv->type().shape;
  const std::vector<int64_t>& ts = tv->type().shape;
  const DType dt = node.output(0)->type().dtype;
  const int64_t classes = xs[1];
  const graph::LossAttrs a = graph::LossAttrs::Of(node);
  const graph::LossReduction reduction = a.reduction;
  loop::BufferRef x = b.Input(xv);
  loop::BufferRef target = b.Input(tv);
  loop::BufferRef weight = wv != nullptr ? b.Input(wv) : nullptr;
  loop::BufferRef out = b.out();

  const bool none = reduction == graph::LossReduction::kNone;
  std::vector<std::string> names;
  for (size_t i = 0; i < ts.size(); ++i) names.push_back(absl::StrCat(none ? "d" : "r", i));
  std::vector<loop::Var> vars = b.NewVars("", names);
  std::vector<Expr> idx = Refs(vars);
  Expr t = loop::Load(target, idx);
  if (t->dtype != DType::kInt64) t = loop::Cast(DType::kInt64, t);
  Expr valid = AndCond(loop::Binary(BinaryOp::kGe, t, Idx(0)),
                       loop::Binary(BinaryOp::kLt, t, Idx(classes)));
  if (a.ignore_index) {
    valid = AndCond(valid, loop::Binary(BinaryOp::kNe, t, Idx(*a.ignore_index)));
  }
  Expr tc = IdxClamp(t, classes);
  std::vector<Expr> x_idx = {idx[0], tc};
  x_idx.insert(x_idx.end(), idx.begin() + 1, idx.end());
  Expr w = weight ? loop::Load(weight, {tc}) : Const(1, dt);
  Expr loss = loop::Select(valid, loop::Unary(loop::UnaryOp::kNeg, loop::Load(x, x_idx)) * w,
                           Const(0, dt));
  if (none) {
    KILN_ASSIGN_OR_RETURN(Expr value, epi.Apply(loss, idx));
    return std::vector<Stmt>{Nest(vars, ts, loop::Store(out, idx, value))};
  }
  std::vector<Stmt> nests;
  std::vector<bool> red(vars.size(), true);
  nests.push_back(loop::Store(out, {}, Const(0, dt)));
  if (reduction == graph::LossReduction::kMean) {
    loop::BufferRef wsum = b.Workspace("wsum", dt, {});
    nests.push_back(loop::Store(wsum, {}, Const(0, dt)));
    nests.push_back(Nest(vars, ts,
                         loop::Block({loop::Store(out, {}, loop::Load(out, {}) + loss),
                                      loop::Store(wsum, {}, loop::Load(wsum, {}) +
                                                                loop::Select(valid, w, Const(0, dt)))}),
                         red));
    Expr mean = loop::Binary(BinaryOp::kDiv, loop::Load(out, {}), loop::Load(wsum, {}));
    KILN_ASSIGN_OR_RETURN(mean, epi.Apply(mean, {}));
    nests.push_back(loop::Store(out, {}, mean));
    return nests;
  }
  nests.push_back(Nest(vars, ts, loop::Store(out, {}, loop::Load(out, {}) + loss), red));
  KILN_ASSIGN_OR_RETURN(Stmt tail, epi.FinalNest(nullptr));
  if (tail) nests.push_back(tail);
  return nests;
}

}  // namespace

absl::StatusOr<std::vector<Stmt>> LowerNnOp(KernelBuilder& b, const graph::Node& node,
                                            const Epilogue& epi) {
  switch (node.op()) {
    case OpKind::kLayerNormalization: case OpKind::kInstanceNormalization: case OpKind::kLRN:
    case OpKind::kHardmax: case OpKind::kLpNormalization:
    case OpKind::kMeanVarianceNormalization:
      return LowerNormalization(b, node, epi);
    case OpKind::kConvTranspose:
      return LowerConvTranspose(b, node, epi);
    case OpKind::kNegativeLogLikelihoodLoss:
      return LowerNll(b, node, epi);
    case OpKind::kGridSample: case OpKind::kRoiAlign: case OpKind::kResizeTap:
      return LowerSampling(b, node, epi);
    default:
      if (node.info().fusion_class == graph::FusionClass::kElementwise ||
          node.info().fusion_class == graph::FusionClass::kBroadcast) {
        return LowerElementwiseAnchor(b, node, epi);
      }
      return NoLowering(node, "this op");
  }
}

}  // namespace kiln::lowering
