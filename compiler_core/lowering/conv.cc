// Conv (1-D/2-D/3-D, NC[D]HW, groups incl. depthwise, strides, dilations, pads) as three or
// four nests: pad the input into a workspace (only when pads are non-zero, so the update nest
// never loads out of bounds), init out with the bias, accumulate, then the fused epilogue.
// Blocked convs (layout="NCHW<x>c") use the same nests over blocked shapes, with the output
// channel lane "oc" innermost among the output loops so the schedule can vectorize it.
#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/lowering/op_lowering.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::lowering {

using loop::BinaryOp;
using loop::Expr;
using loop::Stmt;

namespace {

/// A 2-D blocked conv (graph/layout_rules.h): x is blocked [N, ICb, H, W, x] or plain
/// [N, C, H, W], w packed [OCb, ICb, KH, KW, ICI, x], out [N, OCb, OH, OW, x]. Update nest
/// "n", "ocb", "oh", "ow", "oc", then reductions "icb" (blocked input, group 1), "kh", "kw",
/// "ic" (group 1):
///   out[n, ocb, oh, ow, oc] += x[n, icb, ih, iw, ic] * w[ocb, icb, kh, kw, ic, oc]
/// (plain input: x[n, ic, ih, iw]; depthwise: x[n, ocb, ih, iw, oc] * w[ocb, 0, kh, kw, 0, oc]).
/// With "quant"="u8s8" the operands are i32 words of four 8-bit channels, "ic" iterates words,
/// the product is dot4_u8s8(x word, w word), and padding reads attribute "pad_value". An
/// epilogue that changes the dtype reads the sums from an accumulator workspace "acc". A
/// depthwise "quant"="u8" conv reads uint8 inputs (padded with "pad_value") widened to i32.
absl::StatusOr<std::vector<Stmt>> LowerBlockedConv(KernelBuilder& b, const graph::Node& node,
                                                   const Epilogue& epi) {
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const std::vector<int64_t>& ws = node.input(1)->type().shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  const DType dt = node.output(0)->type().dtype;
  if (os.size() != 5 || ws.size() != 6) return NoLowering(node, "this blocked layout");
  const bool blocked_in = xs.size() == 5;
  const graph::ConvAttrs a = graph::ConvAttrs::Of(node);
  const bool depthwise = a.group != 1;
  const bool u8s8 = a.quant == graph::Quant::kU8S8;
  const bool u8 = a.quant == graph::Quant::kU8;
  if ((u8s8 && (!blocked_in || depthwise || dt != DType::kInt32)) ||
      (u8 && (!blocked_in || !depthwise || dt != DType::kInt32))) {
    return NoLowering(node, absl::StrCat("a quant=\"", std::string(graph::AttrEnumName(a.quant)),
                                         "\" conv of these operands"));
  }
  // Symbolic batch or spatial dims: the loops run to the dims the kernel receives, and padding
  // is a select in the update nest (a workspace has a static size).
  const bool symbolic = !xv->type().is_static() || !node.output(0)->type().is_static();
  if (symbolic && b.out()->dtype != dt) {
    return NoLowering(node, "a requantizing epilogue with symbolic dims");
  }
  const DType xt = xv->type().dtype;  // the input's (and padded workspace's) dtype
  const Expr pad_value = Const(static_cast<double>(a.pad_value), xt);
  std::vector<int64_t> strides = graph::OrFill(a.strides, 2, 1);
  std::vector<int64_t> dilations = graph::OrFill(a.dilations, 2, 1);
  std::vector<int64_t> pads = graph::OrFill(a.pads, 4, 0);
  const graph::Value* bv = node.input(2);
  loop::BufferRef x = b.Input(xv);
  loop::BufferRef w = b.Input(node.input(1));
  loop::BufferRef bias = bv != nullptr ? b.Input(bv) : nullptr;
  // The epilogue may change the dtype (an int8 conv's requantization to uint8): the conv then
  // accumulates into a workspace of its own dtype that the epilogue nest reads.
  loop::BufferRef out = b.out()->dtype == dt ? b.out() : b.Workspace("acc", dt, os);
  const std::vector<Expr> xd = loop::BufferDims(*x), od = loop::BufferDims(*out);
  std::vector<Stmt> nests;

  // Pad nest over the padded input: xpad[n, c, ph, pw(, cv)] = in bounds ? x[...] : 0.
  loop::BufferRef src = x;
  const bool padded = pads[0] != 0 || pads[1] != 0 || pads[2] != 0 || pads[3] != 0;
  if (padded && !symbolic) {
    std::vector<int64_t> ps = xs;
    ps[2] += pads[0] + pads[2];
    ps[3] += pads[1] + pads[3];
    src = b.Workspace("xpad", xt, ps);
    std::vector<std::string> names = {"n", "c", "h", "w"};
    if (blocked_in) names.push_back("cv");
    std::vector<loop::Var> vars = b.NewVars("pad.", names);
    std::vector<Expr> idx = Refs(vars);
    std::vector<Expr> in_idx = idx;
    Expr cond;
    for (size_t d = 0; d < 2; ++d) {
      in_idx[2 + d] = InBounds(IdxAdd(idx[2 + d], -pads[d]), Idx(xs[2 + d]), &cond);
    }
    Expr value = loop::Select(cond, loop::Load(x, in_idx), pad_value);
    nests.push_back(Nest(vars, ps, loop::Store(src, idx, value)));
  }

  const std::vector<std::string> onames = {"n", "ocb", "oh", "ow", "oc"};
  {
    std::vector<loop::Var> vars = b.NewVars("init.", onames);
    std::vector<Expr> idx = Refs(vars);
    Expr value = bias ? loop::Load(bias, {IdxAdd(IdxMul(idx[1], os[4]), idx[4])}) : Const(0, dt);
    nests.push_back(NestDims(vars, od, loop::Store(out, idx, value)));
  }
  // A 1x1, stride-1, unpadded conv over symbolic dims is a matmul over the image's pixels: its
  // update nest runs one loop "ow" over all OH*OW of them ("oh" has extent 1), so that a
  // register block's run-time tail comes once per image and channel block, not once per row
  // (each tail block reads all the weights again: 3 passes per row of 7 on squeezenet's last
  // conv at 96x128).
  const bool flat = symbolic && blocked_in && !depthwise && !u8s8 && !u8 && ws[2] == 1 &&
                    ws[3] == 1 && strides[0] == 1 && strides[1] == 1 && !padded;
  {
    std::vector<std::string> names = onames;
    std::vector<Expr> extents = od;
    if (flat) {
      extents[2] = Idx(1);
      extents[3] = MulDims(od[2], od[3]);
    }
    std::vector<bool> reduction(5, false);
    auto add_red = [&](const std::string& name, int64_t extent) {
      names.push_back(name);
      extents.push_back(Idx(extent));
      reduction.push_back(true);
    };
    const bool has_icb = blocked_in && !depthwise;
    if (has_icb) add_red("icb", ws[1]);
    add_red("kh", ws[2]);
    add_red("kw", ws[3]);
    if (!depthwise) add_red("ic", ws[4]);
    std::vector<loop::Var> vars = b.NewVars("", names);
    std::vector<Expr> idx = Refs(vars);
    const size_t r = 5;
    Expr icb = has_icb ? idx[r] : Idx(0);
    Expr kh = idx[r + (has_icb ? 1 : 0)], kw = idx[r + (has_icb ? 2 : 1)];
    Expr ic = depthwise ? Idx(0) : idx.back();
    Expr oh = idx[2], ow = idx[3];
    if (flat) {
      const std::vector<Expr> pixel = Unflatten({od[2], od[3]}, idx[3]);
      oh = pixel[0];
      ow = pixel[1];
    }
    Expr ih = IdxAdd(IdxMul(oh, strides[0]), IdxMul(kh, dilations[0]));
    Expr iw = IdxAdd(IdxMul(ow, strides[1]), IdxMul(kw, dilations[1]));
    // Symbolic with pads: x at the unpadded position where in bounds, else the pad value.
    Expr cond;
    if (padded && symbolic) {
      Expr* pos[2] = {&ih, &iw};
      for (size_t d = 0; d < 2; ++d) {
        if (pads[d] == 0 && pads[2 + d] == 0) continue;
        *pos[d] = InBounds(IdxAdd(*pos[d], -pads[d]), xd[2 + d], &cond);
      }
    }
    std::vector<Expr> out_idx = {idx[0], idx[1], oh, ow, idx[4]};
    std::vector<Expr> in_idx;
    if (depthwise) {
      in_idx = {idx[0], idx[1], ih, iw, idx[4]};
    } else if (blocked_in) {
      in_idx = {idx[0], icb, ih, iw, ic};
    } else {
      in_idx = {idx[0], ic, ih, iw};
    }
    std::vector<Expr> w_idx = {idx[1], icb, kh, kw, ic, idx[4]};
    Expr in_value = loop::Load(src, in_idx);
    if (cond) in_value = loop::Select(cond, in_value, pad_value);
    if (u8) in_value = loop::Cast(DType::kInt32, in_value);
    Expr product = u8s8 ? loop::Binary(BinaryOp::kDot4U8S8, in_value, loop::Load(w, w_idx))
                        : in_value * loop::Load(w, w_idx);
    Expr value = loop::Load(out, out_idx) + product;
    nests.push_back(NestDims(vars, extents, loop::Store(out, out_idx, value), reduction));
  }
  KILN_ASSIGN_OR_RETURN(Stmt tail, epi.FinalNest(nullptr, out));
  if (tail) nests.push_back(tail);
  return nests;
}

}  // namespace

absl::StatusOr<std::vector<Stmt>> LowerConv(KernelBuilder& b, const graph::Node& node,
                                            const Epilogue& epi) {
  if (node.attrs().Has("layout")) return LowerBlockedConv(b, node, epi);
  KILN_RETURN_IF_ERROR(epi.CheckSameDType(node));
  const graph::Value* xv = node.input(0);
  const graph::Value* wv = node.input(1);
  const graph::Value* bv = node.input(2);
  const std::vector<int64_t>& xs = xv->type().shape;
  const std::vector<int64_t>& ws = wv->type().shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  const DType dt = node.output(0)->type().dtype;
  const size_t nsp = xs.size() >= 2 ? xs.size() - 2 : 0;
  if (nsp < 1 || nsp > 3 || ws.size() != xs.size() || os.size() != xs.size()) {
    return NoLowering(node, absl::StrCat("input rank ", xs.size()));
  }
  const graph::ConvAttrs a = graph::ConvAttrs::Of(node);
  std::vector<int64_t> strides = graph::OrFill(a.strides, nsp, 1);
  std::vector<int64_t> dilations = graph::OrFill(a.dilations, nsp, 1);
  std::vector<int64_t> pads = graph::OrFill(a.pads, 2 * nsp, 0);
  int64_t group = a.group;
  // Symbolic batch or spatial dims (the channels come from the weights): the loops run to the
  // dims the kernel receives, and padding is a select in the update nest (a workspace has a
  // static size).
  const bool symbolic = !xv->type().is_static() || !node.output(0)->type().is_static();
  if (symbolic && (xs[1] == kSymbolicDim || os[1] == kSymbolicDim)) {
    return NoLowering(node, "a symbolic channel count");
  }
  if (strides.size() != nsp || dilations.size() != nsp || pads.size() != 2 * nsp || group < 1 ||
      os[1] % group != 0 || ws[1] * group != xs[1]) {
    return NoLowering(node, "these strides/dilations/pads/group attributes");
  }
  const int64_t cpg = ws[1];           // input channels per group
  const int64_t ocpg = os[1] / group;  // output channels per group

  loop::BufferRef x = b.Input(xv);
  loop::BufferRef w = b.Input(wv);
  loop::BufferRef bias = bv != nullptr ? b.Input(bv) : nullptr;
  loop::BufferRef out = b.out();
  const std::vector<Expr> xd = loop::BufferDims(*x), od = loop::BufferDims(*out);
  std::vector<Stmt> nests;

  // Pad nest: xpad[n, c, p...] = in bounds ? x[n, c, clamp(p - pad)...] : 0.
  loop::BufferRef src = x;
  std::vector<int64_t> ps = xs;
  bool padded = false;
  for (size_t d = 0; d < nsp; ++d) {
    ps[2 + d] += pads[d] + pads[nsp + d];
    padded |= pads[d] != 0 || pads[nsp + d] != 0;
  }
  for (size_t d = 0; d < nsp && !symbolic; ++d) {
    if ((os[2 + d] - 1) * strides[d] + (ws[2 + d] - 1) * dilations[d] >= ps[2 + d]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", node.name(), "' (Conv): output spatial dim ", d, " reads past the input"));
    }
  }
  const bool inline_pad = padded && symbolic;
  if (padded && !symbolic) {
    src = b.Workspace("xpad", dt, ps);
    std::vector<std::string> names = {"n", "c"};
    for (const std::string& s : SpatialNames("", nsp)) names.push_back(s);
    std::vector<loop::Var> vars = b.NewVars("pad.", names);
    std::vector<Expr> idx = Refs(vars);
    std::vector<Expr> in_idx = {idx[0], idx[1]};
    Expr cond;
    for (size_t d = 0; d < nsp; ++d) {
      in_idx.push_back(InBounds(IdxAdd(idx[2 + d], -pads[d]), Idx(xs[2 + d]), &cond));
    }
    Expr value = loop::Select(cond, loop::Load(x, in_idx), Const(0, dt));
    nests.push_back(Nest(vars, ps, loop::Store(src, idx, value)));
  }

  // Init nest: out = bias[oc] or 0.
  std::vector<std::string> onames = {"n", "oc"};
  for (const std::string& s : SpatialNames("o", nsp)) onames.push_back(s);
  {
    std::vector<loop::Var> vars = b.NewVars("init.", onames);
    std::vector<Expr> idx = Refs(vars);
    Expr value = bias ? loop::Load(bias, {idx[1]}) : Const(0, dt);
    nests.push_back(NestDims(vars, od, loop::Store(out, idx, value)));
  }

  // Update nest: out[n, oc, o...] += src[n, g*cpg + ic, o*s + k*d ...] * w[oc, ic, k...]
  // (symbolic with pads: x at o*s + k*d - pad where in bounds, else 0).
  {
    std::vector<std::string> names = onames;
    names.push_back("ic");
    for (const std::string& s : SpatialNames("k", nsp)) names.push_back(s);
    std::vector<loop::Var> vars = b.NewVars("", names);
    std::vector<Expr> idx = Refs(vars);
    std::vector<Expr> extents = od;
    extents.push_back(Idx(cpg));
    std::vector<bool> reduction(os.size(), false);
    reduction.push_back(true);
    for (size_t d = 0; d < nsp; ++d) {
      extents.push_back(Idx(ws[2 + d]));
      reduction.push_back(true);
    }
    Expr oc = idx[1], ic = idx[os.size()];
    Expr in_c = ic;
    if (group > 1) {
      Expr g = ocpg == 1 ? oc : loop::Binary(BinaryOp::kFloorDiv, oc, Idx(ocpg));
      in_c = IdxAdd(IdxMul(g, cpg), ic);
    }
    std::vector<Expr> out_idx(idx.begin(), idx.begin() + os.size());
    std::vector<Expr> in_idx = {idx[0], in_c};
    std::vector<Expr> w_idx = {oc, ic};
    Expr cond;
    for (size_t d = 0; d < nsp; ++d) {
      Expr k = idx[os.size() + 1 + d];
      Expr pos = IdxAdd(IdxMul(idx[2 + d], strides[d]), IdxMul(k, dilations[d]));
      if (inline_pad && (pads[d] != 0 || pads[nsp + d] != 0)) {
        pos = InBounds(IdxAdd(pos, -pads[d]), xd[2 + d], &cond);
      }
      in_idx.push_back(pos);
      w_idx.push_back(k);
    }
    Expr in_value = loop::Load(src, in_idx);
    if (cond) in_value = loop::Select(cond, in_value, Const(0, dt));
    Expr value = loop::Load(out, out_idx) + in_value * loop::Load(w, w_idx);
    nests.push_back(NestDims(vars, extents, loop::Store(out, out_idx, value), reduction));
  }

  KILN_ASSIGN_OR_RETURN(Stmt tail, epi.FinalNest(nullptr));
  if (tail) nests.push_back(tail);
  return nests;
}

}  // namespace kiln::lowering
