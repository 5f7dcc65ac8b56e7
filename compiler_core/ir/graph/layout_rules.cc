// Shape rules of the channel-blocked layout: LayoutTransform and blocked Conv/pool nodes.
#include "compiler_core/ir/graph/layout_rules.h"

#include <cctype>
#include <optional>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/ir/graph/shape_rule_util.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::graph {
namespace {

using Shape = std::vector<int64_t>;
using Types = std::vector<TensorType>;

using rules::Invalid;
using rules::ShapeStr;

/// Output spatial sizes of a 2-D window (explicit pads) over `in` (static or symbolic dims);
/// `ceil_mode` a pool's.
absl::StatusOr<rules::Dims> Window2d(const Node& node, const SlidingWindowAttrs& a,
                                     const rules::Dims& in, const Shape& kernel, bool ceil_mode) {
  if (a.auto_pad != AutoPad::kNotSet || OrFill(a.strides, 2, 1).size() != 2 ||
      OrFill(a.dilations, 2, 1).size() != 2 || OrFill(a.pads, 4, 0).size() != 4 ||
      kernel.size() != 2) {
    return Invalid(node, "a blocked layout needs 2-D explicit strides/dilations/pads");
  }
  return rules::WindowOutput(node, a, in, kernel, ceil_mode);
}

absl::StatusOr<int64_t> NodeBlock(const Node& node) {
  int64_t x = LayoutBlock(CommonAttrs::Of(node).layout);
  if (x <= 0) return Invalid(node, "attribute 'layout' must be \"NCHW<x>c\"");
  return x;
}

absl::StatusOr<Types> TransformRule(const Node& node) {
  const TensorType& in = node.input(0)->type();
  const LayoutTransformAttrs a = LayoutTransformAttrs::Of(node);
  int64_t src = LayoutBlock(a.src_layout);
  int64_t dst = LayoutBlock(a.dst_layout);
  if (src < 0 || dst < 0 || (src == 0) == (dst == 0)) {
    return Invalid(node, "expected src_layout/dst_layout \"NCHW\" and \"NCHW<x>c\"");
  }
  if (src == 0) {
    if (in.rank() < 3) return Invalid(node, "expected an input of rank >= 3");
    return Types{BlockedType(in, dst)};
  }
  int64_t c = a.channels;
  if (in.rank() < 4 || in.shape.back() != src || c <= (in.shape[1] - 1) * src ||
      c > in.shape[1] * src) {
    return Invalid(node, absl::StrCat("input ", in.ToString(), " does not hold ", c,
                                      " channels blocked by ", src));
  }
  return Types{UnblockedType(in, c)};
}

absl::StatusOr<Types> BitcastRule(const Node& node) {
  const TensorType& in = node.input(0)->type();
  const int64_t to_code = CastAttrs::Of(node).to;
  std::optional<DType> to = DTypeFromOnnx(static_cast<int>(to_code));
  if (!to || *to == DType::kBool || in.dtype == DType::kBool || in.rank() < 1) {
    return Invalid(node,
                   absl::StrCat("cannot bitcast ", in.ToString(), " to dtype code ", to_code));
  }
  const int64_t from_size = DTypeSize(in.dtype), to_size = DTypeSize(*to);
  Shape s = in.shape;
  if ((s.back() * from_size) % to_size != 0) {
    return Invalid(node, absl::StrCat("the last dim of ", in.ToString(),
                                      " is not a whole number of ", DTypeName(*to), " elements"));
  }
  s.back() = s.back() * from_size / to_size;
  return Types{TensorType{*to, s}};
}

/// The i32 [N, OCb, OH, OW, x] output of a quantized blocked conv of `in` with packed weights
/// `w` ([OCb, ...]), after checking its optional bias (i32 [OCb * x]).
absl::StatusOr<Types> QuantConvOutput(const Node& node, const ConvAttrs& a, const TensorType& in,
                                      const Shape& w, int64_t x) {
  if (const Value* b = node.input(2);
      b != nullptr && (b->type().shape != Shape{w[0] * x} || b->type().dtype != DType::kInt32)) {
    return Invalid(node,
                   absl::StrCat("bias ", b->type().ToString(), ", expected i32[", w[0] * x, "]"));
  }
  KILN_ASSIGN_OR_RETURN(rules::Dims sp, Window2d(node, SlidingWindowAttrs::From(a),
                                                 {in.dim(2), in.dim(3)}, {w[2], w[3]}, false));
  return Types{TensorType::WithDims(DType::kInt32, {in.dim(0), w[0], sp[0], sp[1], x})};
}

/// A "quant"="u8s8" blocked conv: x i32 words [N, ICb, H, W, ICW], w i32 words
/// [OCb, ICb, KH, KW, ICW, x], group 1; output i32.
absl::StatusOr<Types> ConvU8S8Rule(const Node& node, const ConvAttrs& a, int64_t x) {
  const TensorType& in = node.input(0)->type();
  const TensorType& wt = node.input(1)->type();
  const Shape& w = wt.shape;
  if (a.quant != Quant::kU8S8 || a.group != 1 || in.dtype != DType::kInt32 ||
      wt.dtype != DType::kInt32 || in.rank() != 5 || w.size() != 6 || w[5] != x ||
      w[1] != in.shape[1] || w[4] != in.shape[4]) {
    return Invalid(node,
                   absl::StrCat("a quant=\"u8s8\" conv needs i32 words [N, ICb, H, W, ICW] "
                                "and [OCb, ICb, KH, KW, ICW, ",
                                x, "] with group 1, got ", in.ToString(), " and ", wt.ToString()));
  }
  return QuantConvOutput(node, a, in, w, x);
}

/// A "quant"="u8" blocked depthwise conv: x uint8 [N, Cb, H, W, x], w i32 [Cb, 1, KH, KW, 1, x];
/// output i32.
absl::StatusOr<Types> ConvU8DepthwiseRule(const Node& node, const ConvAttrs& a, int64_t x) {
  const TensorType& in = node.input(0)->type();
  const TensorType& wt = node.input(1)->type();
  const Shape& w = wt.shape;
  if (a.group == 1 || in.dtype != DType::kUInt8 || wt.dtype != DType::kInt32 || in.rank() != 5 ||
      in.shape[4] != x || w.size() != 6 || w[0] != in.shape[1] || w[1] != 1 || w[4] != 1 ||
      w[5] != x) {
    return Invalid(node, absl::StrCat("a quant=\"u8\" conv needs uint8 [N, Cb, H, W, ", x,
                                      "] and depthwise i32 weights [Cb, 1, KH, KW, 1, ", x,
                                      "], got ", in.ToString(), " and ", wt.ToString()));
  }
  return QuantConvOutput(node, a, in, w, x);
}

absl::StatusOr<Types> ConvRule(const Node& node, int64_t x) {
  if (node.input(1) == nullptr) return Invalid(node, "input 1 is missing");
  const ConvAttrs a = ConvAttrs::Of(node);
  if (a.quant == Quant::kU8) return ConvU8DepthwiseRule(node, a, x);
  // Any other "quant", "" included, must be u8s8.
  if (node.attrs().Has("quant")) return ConvU8S8Rule(node, a, x);
  const TensorType& in = node.input(0)->type();
  const Shape& w = node.input(1)->type().shape;
  const int64_t group = a.group;
  const bool blocked = in.rank() == 5;
  if ((in.rank() != 4 && !blocked) || (blocked && in.shape[4] != x) || w.size() != 6 ||
      w[5] != x) {
    return Invalid(node, absl::StrCat("input ", in.ToString(), " and packed weight ",
                                      ShapeStr(w), " do not match layout ", BlockedLayoutName(x)));
  }
  bool ok;
  if (group == 1) {
    ok = blocked ? w[1] == in.shape[1] && w[4] == x : w[1] == 1 && w[4] == in.shape[1];
  } else {
    ok = blocked && w[0] == in.shape[1] && w[1] == 1 && w[4] == 1;
  }
  if (!ok) {
    return Invalid(node, absl::StrCat("packed weight ", ShapeStr(w), " does not match input ",
                                      in.ToString(), " with group ", group));
  }
  if (const Value* b = node.input(2); b != nullptr && b->type().shape != Shape{w[0] * x}) {
    return Invalid(node, absl::StrCat("bias ", b->type().ToString(), ", expected [", w[0] * x,
                                      "]"));
  }
  KILN_ASSIGN_OR_RETURN(rules::Dims sp, Window2d(node, SlidingWindowAttrs::From(a),
                                                 {in.dim(2), in.dim(3)}, {w[2], w[3]}, false));
  return Types{TensorType::WithDims(in.dtype, {in.dim(0), w[0], sp[0], sp[1], x})};
}

absl::StatusOr<Types> PoolRule(const Node& node, int64_t x) {
  const TensorType& in = node.input(0)->type();
  if (in.rank() != 5 || in.shape[4] != x) {
    return Invalid(node, absl::StrCat("input ", in.ToString(), " is not in layout ",
                                      BlockedLayoutName(x)));
  }
  rules::Dims out = in.dims();
  if (node.op() == OpKind::kGlobalAveragePool || node.op() == OpKind::kGlobalMaxPool) {
    out[2] = out[3] = 1;
  } else {
    const PoolAttrs a = PoolAttrs::Of(node);
    KILN_ASSIGN_OR_RETURN(rules::Dims sp,
                          Window2d(node, SlidingWindowAttrs::From(a), {in.dim(2), in.dim(3)},
                                   a.kernel_shape, a.ceil_mode));
    out[2] = sp[0];
    out[3] = sp[1];
  }
  return Types{TensorType::WithDims(in.dtype, out)};
}

}  // namespace

int64_t LayoutBlock(const std::string& layout) {
  if (layout == "NCHW") return 0;
  if (layout.size() < 6 || layout.compare(0, 4, "NCHW") != 0 || layout.back() != 'c') return -1;
  int64_t x = 0;
  for (size_t i = 4; i + 1 < layout.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(layout[i])) || x > 4096) return -1;
    x = x * 10 + (layout[i] - '0');
  }
  return x >= 1 ? x : -1;
}

std::string BlockedLayoutName(int64_t block) { return absl::StrCat("NCHW", block, "c"); }

TensorType BlockedType(const TensorType& plain, int64_t block) {
  std::vector<sym::Expr> d = plain.dims();
  d[1] = (plain.shape[1] + block - 1) / block;
  d.push_back(block);
  return TensorType::WithDims(plain.dtype, d);
}

TensorType UnblockedType(const TensorType& blocked, int64_t channels) {
  std::vector<sym::Expr> d = blocked.dims();
  d.pop_back();
  d[1] = channels;
  return TensorType::WithDims(blocked.dtype, d);
}

bool IsLayoutNode(const Node& node) {
  switch (node.op()) {
    case OpKind::kLayoutTransform:
    case OpKind::kBitcast:
      return true;
    case OpKind::kConv: case OpKind::kMaxPool: case OpKind::kAveragePool:
    case OpKind::kGlobalAveragePool: case OpKind::kGlobalMaxPool:
      return node.attrs().Has("layout");
    default:
      return false;
  }
}

absl::StatusOr<std::vector<TensorType>> InferLayoutTypes(const Node& node) {
  if (node.input(0) == nullptr) return Invalid(node, "input 0 is missing");
  if (node.op() == OpKind::kLayoutTransform) return TransformRule(node);
  if (node.op() == OpKind::kBitcast) return BitcastRule(node);
  KILN_ASSIGN_OR_RETURN(int64_t x, NodeBlock(node));
  if (node.op() == OpKind::kConv) return ConvRule(node, x);
  return PoolRule(node, x);
}

}  // namespace kiln::graph
