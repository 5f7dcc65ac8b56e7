// Type and shape rules of the NN ops (the "NN ops" section of ops.def). Rules read
// the canonical forms the ONNX importer produces: non-negative "axis", explicit ConvTranspose
// window attributes (auto_pad and output_shape resolved into "pads").
#include "compiler_core/ir/graph/nn_op_rules.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/ir/graph/shape_rule_util.h"
#include "compiler_core/ir/graph/shape_rules.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::graph {
namespace {

using Shape = std::vector<int64_t>;
using Types = std::vector<TensorType>;
using rules::Add;
using rules::In;
using rules::Invalid;
using rules::Mul;
using rules::Prefix;
using rules::ShapeStr;

absl::Status ExpectFloat(const Node& node, const TensorType& t) {
  if (!IsFloat(t.dtype)) {
    return Invalid(node, absl::StrCat("input 0 has dtype ", DTypeName(t.dtype),
                                      ", expected a float type"));
  }
  return absl::OkStatus();
}

absl::Status ExpectSameDType(const Node& node, int i, const TensorType& t, DType want) {
  if (t.dtype != want) {
    return Invalid(node, absl::StrCat("input ", i, " has dtype ", DTypeName(t.dtype),
                                      ", expected ", DTypeName(want)));
  }
  return absl::OkStatus();
}

// The "axis" of a LayerNormalization, Hardmax or LpNormalization node, decoded as `axis`:
// non-negative (the importer normalizes it), the last axis when absent.
absl::StatusOr<int64_t> AxisAttr(const Node& node, int64_t rank, int64_t axis) {
  if (!node.attrs().Has("axis")) axis = rank - 1;
  if (axis < 0 || axis >= std::max<int64_t>(rank, 1)) {
    return Invalid(node, absl::StrCat("axis ", axis, " is out of range [0, ", rank, ")"));
  }
  return axis;
}

absl::StatusOr<Types> UnaryFloatRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_RETURN_IF_ERROR(ExpectFloat(node, *x));
  return Types{*x};
}

absl::StatusOr<Types> PReluRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_ASSIGN_OR_RETURN(const TensorType* slope, In(node, 1));
  KILN_RETURN_IF_ERROR(ExpectSameDType(node, 1, *slope, x->dtype));
  auto b = BroadcastShapes(x->shape, slope->shape);
  if (!b.ok() || *b != x->shape) {
    return Invalid(node, absl::StrCat("slope shape ", ShapeStr(slope->shape),
                                      " does not broadcast to ", ShapeStr(x->shape)));
  }
  return Types{*x};
}

// LayerNormalization, InstanceNormalization, MeanVarianceNormalization.
absl::StatusOr<Types> NormRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_RETURN_IF_ERROR(ExpectFloat(node, *x));
  if (node.op() == OpKind::kLayerNormalization) {
    KILN_ASSIGN_OR_RETURN(int64_t axis,
                          AxisAttr(node, x->rank(), LayerNormalizationAttrs::Of(node).axis));
    const rules::Dims xd = x->dims();
    rules::Dims normalized(xd.begin() + std::min<int64_t>(axis, x->rank()), xd.end());
    for (int i = 1; i < node.num_inputs(); ++i) {
      const Value* p = node.input(i);
      if (p == nullptr) continue;
      KILN_RETURN_IF_ERROR(ExpectSameDType(node, i, p->type(), x->dtype));
      std::optional<rules::Dims> b = rules::BroadcastDims(normalized, p->type().dims());
      if (!b || *b != normalized) {
        return Invalid(node, absl::StrCat("input ", i, " shape ", rules::DimsStr(p->type().dims()),
                                          " does not broadcast to ", rules::DimsStr(normalized)));
      }
    }
  } else if (node.op() == OpKind::kInstanceNormalization) {
    if (x->rank() < 3) {
      return Invalid(node, absl::StrCat("input 0 has rank ", x->rank(), ", expected >= 3"));
    }
    for (int i = 1; i < 3; ++i) {
      KILN_ASSIGN_OR_RETURN(const TensorType* p, In(node, i));
      KILN_RETURN_IF_ERROR(ExpectSameDType(node, i, *p, x->dtype));
      if (p->shape != Shape{x->shape[1]}) {
        return Invalid(node, absl::StrCat("input ", i, " has shape ", ShapeStr(p->shape),
                                          ", expected [", x->shape[1], "]"));
      }
    }
  } else {
    for (int64_t a : NormalizedAxes(node)) {
      if (a < 0 || a >= x->rank()) {
        return Invalid(node, absl::StrCat("axis ", a, " is out of range for rank ", x->rank()));
      }
    }
  }
  return Types{*x};
}

absl::StatusOr<Types> AxisRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_RETURN_IF_ERROR(ExpectFloat(node, *x));
  if (node.op() == OpKind::kLpNormalization) {
    const LpNormalizationAttrs a = LpNormalizationAttrs::Of(node);
    KILN_RETURN_IF_ERROR(AxisAttr(node, x->rank(), a.axis).status());
    if (a.p != 1 && a.p != 2) return Invalid(node, absl::StrCat("p must be 1 or 2, got ", a.p));
  } else {
    KILN_RETURN_IF_ERROR(AxisAttr(node, x->rank(), AxisAttrs::Of(node).axis).status());
  }
  return Types{*x};
}

absl::StatusOr<Types> LrnRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_RETURN_IF_ERROR(ExpectFloat(node, *x));
  if (x->rank() < 2) {
    return Invalid(node, absl::StrCat("input 0 has rank ", x->rank(), ", expected >= 2"));
  }
  if (LRNAttrs::Of(node).size <= 0) {
    return Invalid(node, "attribute 'size' must be > 0");
  }
  return Types{*x};
}

absl::StatusOr<Types> ConvTransposeRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_ASSIGN_OR_RETURN(const TensorType* w, In(node, 1));
  KILN_RETURN_IF_ERROR(ExpectFloat(node, *x));
  KILN_RETURN_IF_ERROR(ExpectSameDType(node, 1, *w, x->dtype));
  if (x->rank() < 3 || w->rank() != x->rank()) {
    return Invalid(node, absl::StrCat("input ranks ", x->rank(), " and ", w->rank(),
                                      " are not equal and >= 3"));
  }
  size_t n = x->shape.size() - 2;
  const ConvAttrs a = ConvAttrs::Of(node);
  const int64_t group = a.group;
  if (group <= 0 || w->shape[0] != x->shape[1] || x->shape[1] % group != 0) {
    return Invalid(node, absl::StrCat("input channels ", x->shape[1], " do not match weight ",
                                      w->ToString(), " with group ", group));
  }
  KILN_ASSIGN_OR_RETURN(int64_t m, Mul(node, w->shape[1], group, "output channels"));
  const Shape kernel =
      a.kernel_shape.empty() ? Shape(w->shape.begin() + 2, w->shape.end()) : a.kernel_shape;
  const Shape strides = OrFill(a.strides, n, 1);
  const Shape dilations = OrFill(a.dilations, n, 1);
  const Shape pads = OrFill(a.pads, 2 * n, 0);
  const Shape out_pad = OrFill(a.output_padding, n, 0);
  if (kernel.size() != n || strides.size() != n || dilations.size() != n ||
      pads.size() != 2 * n || out_pad.size() != n) {
    return Invalid(node, "window attributes have the wrong length");
  }
  if (a.auto_pad != AutoPad::kNotSet) {
    return Invalid(node, "auto_pad must be resolved to explicit pads");
  }
  if (const Value* b = node.input(2)) {
    if (b->type().shape != Shape{m}) {
      return Invalid(node, absl::StrCat("input 2 has shape ", ShapeStr(b->type().shape),
                                        ", expected [", m, "]"));
    }
  }
  Shape out{x->shape[0], m};
  for (size_t i = 0; i < n; ++i) {
    if (kernel[i] != w->shape[2 + i] || strides[i] <= 0 || dilations[i] <= 0) {
      return Invalid(node, "kernel_shape, strides or dilations are invalid");
    }
    // stride (x - 1) + output_padding + (kernel - 1) dilation + 1 - pads, overflow-checked.
    const std::string what = absl::StrCat("output spatial dim ", i);
    KILN_ASSIGN_OR_RETURN(int64_t o, Mul(node, strides[i], x->shape[2 + i] - 1, what));
    KILN_ASSIGN_OR_RETURN(int64_t window, Mul(node, kernel[i] - 1, dilations[i], what));
    for (int64_t term : {out_pad[i], window, int64_t{1}}) {
      KILN_ASSIGN_OR_RETURN(o, Add(node, o, term, what));
    }
    for (int64_t pad : {pads[i], pads[i + n]}) {
      if (pad == INT64_MIN) return Invalid(node, what + " overflows int64");
      KILN_ASSIGN_OR_RETURN(o, Add(node, o, -pad, what));
    }
    if (o < 0) return Invalid(node, absl::StrCat("output spatial dim ", i, " is negative"));
    out.push_back(o);
  }
  return Types{TensorType{x->dtype, out}};
}

absl::StatusOr<Types> NllRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_ASSIGN_OR_RETURN(const TensorType* t, In(node, 1));
  KILN_RETURN_IF_ERROR(ExpectFloat(node, *x));
  if (IsFloat(t->dtype)) return Invalid(node, "target must be an integer tensor");
  if (x->rank() < 2 || t->rank() != x->rank() - 1) {
    return Invalid(node, absl::StrCat("input ", x->ToString(), " and target ", t->ToString(),
                                      " have incompatible ranks"));
  }
  for (int64_t d = 0; d < t->rank(); ++d) {
    int64_t xd = d == 0 ? x->shape[0] : x->shape[d + 1];
    if (t->shape[d] != xd) {
      return Invalid(node, absl::StrCat("target shape ", ShapeStr(t->shape),
                                        " does not match input ", ShapeStr(x->shape)));
    }
  }
  if (const Value* w = node.input(2)) {
    KILN_RETURN_IF_ERROR(ExpectSameDType(node, 2, w->type(), x->dtype));
    if (w->type().shape != Shape{x->shape[1]}) {
      return Invalid(node, absl::StrCat("weight shape ", ShapeStr(w->type().shape),
                                        ", expected [", x->shape[1], "]"));
    }
  }
  if (LossAttrs::Of(node).reduction == LossReduction::kNone) {
    return Types{TensorType{x->dtype, t->shape}};
  }
  return Types{TensorType{x->dtype, {}}};
}

// GridSample: X [N, C, H, W], grid [N, Ho, Wo, 2] → [N, C, Ho, Wo].
absl::StatusOr<Types> GridSampleRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_ASSIGN_OR_RETURN(const TensorType* grid, In(node, 1));
  KILN_RETURN_IF_ERROR(ExpectFloat(node, *x));
  KILN_RETURN_IF_ERROR(ExpectSameDType(node, 1, *grid, x->dtype));
  if (x->rank() != 4 || grid->rank() != 4 || grid->shape[0] != x->shape[0] || grid->shape[3] != 2) {
    return Invalid(node, absl::StrCat("X ", ShapeStr(x->shape), " and grid ", ShapeStr(grid->shape),
                                      " are not [N, C, H, W] and [N, Ho, Wo, 2]"));
  }
  return Types{TensorType{x->dtype, {x->shape[0], x->shape[1], grid->shape[1], grid->shape[2]}}};
}

// RoiAlign: X [N, C, H, W], rois [R, 4], batch_indices [R] (i64) → [R, C, oh, ow].
absl::StatusOr<Types> RoiAlignRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_ASSIGN_OR_RETURN(const TensorType* rois, In(node, 1));
  KILN_ASSIGN_OR_RETURN(const TensorType* batch, In(node, 2));
  KILN_RETURN_IF_ERROR(ExpectFloat(node, *x));
  KILN_RETURN_IF_ERROR(ExpectSameDType(node, 1, *rois, x->dtype));
  KILN_RETURN_IF_ERROR(ExpectSameDType(node, 2, *batch, DType::kInt64));
  if (x->rank() != 4 || rois->rank() != 2 || rois->shape[1] != 4 ||
      batch->shape != Shape{rois->shape[0]}) {
    return Invalid(node, absl::StrCat("X ", ShapeStr(x->shape), ", rois ", ShapeStr(rois->shape),
                                      " and batch_indices ", ShapeStr(batch->shape),
                                      " are not [N, C, H, W], [R, 4] and [R]"));
  }
  const RoiAlignAttrs a = RoiAlignAttrs::Of(node);
  const int64_t oh = a.output_height, ow = a.output_width;
  if (oh <= 0 || ow <= 0) return Invalid(node, "output_height and output_width must be positive");
  return Types{TensorType{x->dtype, {rois->shape[0], x->shape[1], oh, ow}}};
}

// ResizeTap: scales f32 [R] → i64 [out] (part index) or f32 [1,..,out,..,1] (part coeff).
absl::StatusOr<Types> ResizeTapRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* scales, In(node, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(node, 0, *scales, DType::kFloat32));
  const int64_t rank = scales->rank() == 1 ? scales->shape[0] : -1;
  // Every attribute but the sampling ones is required; an absent one reads (and prints) as a
  // value no tap has, not as the schema's placeholder default.
  const ResizeTapAttrs a = ResizeTapAttrs::Of(node);
  const auto given = [&node](const char* name) { return node.attrs().Has(name); };
  const int64_t axis = given("axis") ? a.axis : -1, in = given("in") ? a.in : 0;
  const int64_t out = given("out") ? a.out : 0, tap = given("tap") ? a.tap : -1;
  const std::string mode = given("mode") ? std::string(AttrEnumName(a.mode)) : "";
  const std::string part = given("part") ? std::string(AttrEnumName(a.part)) : "";
  int64_t taps = 0;
  if (given("mode")) {
    taps = a.mode == ResizeMode::kNearest ? 1 : a.mode == ResizeMode::kLinear ? 2 : 4;
  }
  if (rank < 1 || axis < 0 || axis >= rank || in < 1 || out < 1 || taps == 0 || tap < 0 ||
      tap >= taps || !given("part")) {
    return Invalid(node, absl::StrCat("scales ", scales->ToString(), ", axis ", axis, ", in ", in,
                                      ", out ", out, ", mode '", mode, "', tap ", tap, ", part '",
                                      part, "' do not describe a tap"));
  }
  if (a.part == TapPart::kIndex) return Types{TensorType{DType::kInt64, {out}}};
  Shape shape(static_cast<size_t>(rank), 1);
  shape[axis] = out;
  return Types{TensorType{DType::kFloat32, shape}};
}

}  // namespace

std::vector<int64_t> NormalizedAxes(const Node& node) {
  int64_t rank = node.input(0) ? node.input(0)->type().rank() : 0;
  std::vector<int64_t> axes;
  switch (node.op()) {
    case OpKind::kLayerNormalization: {
      const int64_t axis =
          node.attrs().Has("axis") ? LayerNormalizationAttrs::Of(node).axis : rank - 1;
      for (int64_t a = axis; a < rank; ++a) axes.push_back(a);
      break;
    }
    case OpKind::kInstanceNormalization:
      for (int64_t a = 2; a < rank; ++a) axes.push_back(a);
      break;
    default:
      axes = MeanVarianceNormalizationAttrs::Of(node).axes;
      std::sort(axes.begin(), axes.end());
  }
  return axes;
}

absl::StatusOr<std::vector<TensorType>> InferNnOpTypes(const Node& node) {
  switch (node.op()) {
    case OpKind::kElu: case OpKind::kSelu: case OpKind::kCelu: case OpKind::kHardSigmoid:
    case OpKind::kHardSwish: case OpKind::kSoftplus: case OpKind::kSoftsign:
    case OpKind::kThresholdedRelu: case OpKind::kMish: case OpKind::kGelu:
      return UnaryFloatRule(node);
    case OpKind::kPRelu:
      return PReluRule(node);
    case OpKind::kLayerNormalization: case OpKind::kInstanceNormalization:
    case OpKind::kMeanVarianceNormalization:
      return NormRule(node);
    case OpKind::kHardmax: case OpKind::kLpNormalization:
      return AxisRule(node);
    case OpKind::kLRN:
      return LrnRule(node);
    case OpKind::kConvTranspose:
      return ConvTransposeRule(node);
    case OpKind::kNegativeLogLikelihoodLoss:
      return NllRule(node);
    case OpKind::kGridSample:
      return GridSampleRule(node);
    case OpKind::kRoiAlign:
      return RoiAlignRule(node);
    case OpKind::kResizeTap:
      return ResizeTapRule(node);
    default:
      return absl::UnimplementedError(
          Prefix(node) + "no shape rule (the importer decomposes this op into other ops)");
  }
}

}  // namespace kiln::graph
