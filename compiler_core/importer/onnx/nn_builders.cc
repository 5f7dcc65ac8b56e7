// Builders of the NN ops. Canonical forms: activations carry every attribute
// explicitly (ONNX defaults filled in); LayerNormalization/LpNormalization carry a
// non-negative "axis" (LayerNormalization's Mean/InvStdDev outputs become ReduceMean-based
// nodes); MeanVarianceNormalization carries sorted non-negative "axes"; ConvTranspose carries
// explicit kernel_shape/strides/dilations/pads/output_padding/group (auto_pad and output_shape
// resolved into pads); SoftmaxCrossEntropyLoss becomes LogSoftmax(axis 1) followed by
// NegativeLogLikelihoodLoss. Resize/Upsample and the recurrent ops have their own files.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compiler_core/importer/onnx/import_context.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {

using graph::AttrMap;
using graph::AutoPad;
using graph::CoordinateTransform;
using graph::Node;
using graph::OpKind;
using graph::Value;

namespace {

using Ints = std::vector<int64_t>;

bool OutputUsed(const ImportContext& ctx, const OnnxNode& node, int i) {
  return i < node.proto->output_size() && !node.proto->output(i).empty() &&
         ctx.IsUsed(node.proto->output(i));
}

absl::StatusOr<BuiltOutputs> BuildActivation(ImportContext& ctx, const OnnxNode& node) {
  AttrMap a;
  switch (node.op) {
    case OpKind::kElu:
    case OpKind::kCelu:
    case OpKind::kThresholdedRelu: {
      KILN_ASSIGN_OR_RETURN(const graph::EluAttrs e,
                            graph::EluAttrs::Parse(node.attrs, node.Prefix()));
      a.Set("alpha", e.alpha);
      break;
    }
    case OpKind::kSelu: {
      KILN_ASSIGN_OR_RETURN(const graph::SeluAttrs s,
                            graph::SeluAttrs::Parse(node.attrs, node.Prefix()));
      a.Set("alpha", s.alpha);
      a.Set("gamma", s.gamma);
      break;
    }
    case OpKind::kHardSigmoid: {
      KILN_ASSIGN_OR_RETURN(const graph::HardSigmoidAttrs h,
                            graph::HardSigmoidAttrs::Parse(node.attrs, node.Prefix()));
      a.Set("alpha", h.alpha);
      a.Set("beta", h.beta);
      break;
    }
    case OpKind::kGelu: {
      KILN_ASSIGN_OR_RETURN(const graph::GeluAttrs g,
                            graph::GeluAttrs::Parse(node.attrs, node.Prefix()));
      a.Set("approximate", std::string(graph::AttrEnumName(g.approximate)));
      break;
    }
    default:
      break;
  }
  return Single(ctx.Emit(node.op, node.name, node.inputs, a));
}

// Y, and the Mean / InvStdDev outputs (stash type float) as ReduceMean-based nodes when used.
absl::StatusOr<BuiltOutputs> BuildLayerNorm(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  int64_t rank = x->type().rank();
  KILN_ASSIGN_OR_RETURN(const graph::LayerNormalizationAttrs attrs,
                        graph::LayerNormalizationAttrs::Parse(node.attrs, node.Prefix()));
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, attrs.axis, rank));
  float eps = attrs.epsilon;
  if (attrs.stash_type != 1) {
    return absl::UnimplementedError(node.Prefix() + "stash_type other than float");
  }
  AttrMap a;
  a.Set("axis", axis);
  a.Set("epsilon", eps);
  std::vector<Value*> inputs{x, node.input(1)};
  if (node.input(2) != nullptr) inputs.push_back(node.input(2));
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Emit(OpKind::kLayerNormalization, node.name, inputs, a));
  BuiltOutputs outs{y->output(0), nullptr, nullptr};
  if (!OutputUsed(ctx, node, 1) && !OutputUsed(ctx, node, 2)) return outs;
  if (x->type().dtype != DType::kFloat32) {
    return absl::UnimplementedError(node.Prefix() + "Mean/InvStdDev outputs of non-f32 input");
  }
  Ints axes;
  for (int64_t d = axis; d < rank; ++d) axes.push_back(d);
  AttrMap ra;
  ra.Set("axes", axes);
  ra.Set("keepdims", int64_t{1});
  const std::string& n = node.name;
  KILN_ASSIGN_OR_RETURN(Node * mean, ctx.Emit(OpKind::kReduceMean, n + "/mean", {x}, ra));
  outs[1] = mean->output(0);
  if (OutputUsed(ctx, node, 2)) {
    KILN_ASSIGN_OR_RETURN(Node * d, ctx.Emit(OpKind::kSub, n + "/centered", {x, outs[1]}, {}));
    KILN_ASSIGN_OR_RETURN(Node * sq,
                          ctx.Emit(OpKind::kMul, n + "/sq", {d->output(0), d->output(0)}, {}));
    KILN_ASSIGN_OR_RETURN(Node * var, ctx.Emit(OpKind::kReduceMean, n + "/var", {sq->output(0)},
                                               ra));
    KILN_ASSIGN_OR_RETURN(
        Node * ve, ctx.Emit(OpKind::kAdd, n + "/var_eps",
                            {var->output(0), ctx.ConstScalar(n + "/eps", DType::kFloat32, eps)},
                            {}));
    KILN_ASSIGN_OR_RETURN(Node * sd, ctx.Emit(OpKind::kSqrt, n + "/std", {ve->output(0)}, {}));
    KILN_ASSIGN_OR_RETURN(Node * inv,
                          ctx.Emit(OpKind::kReciprocal, n + "/inv_std", {sd->output(0)}, {}));
    outs[2] = inv->output(0);
  }
  return outs;
}

absl::StatusOr<BuiltOutputs> BuildNorm(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  int64_t rank = x->type().rank();
  AttrMap a;
  switch (node.op) {
    case OpKind::kInstanceNormalization: {
      KILN_ASSIGN_OR_RETURN(const graph::InstanceNormalizationAttrs in,
                            graph::InstanceNormalizationAttrs::Parse(node.attrs, node.Prefix()));
      a.Set("epsilon", in.epsilon);
      break;
    }
    case OpKind::kLRN: {
      KILN_ASSIGN_OR_RETURN(const graph::LRNAttrs lrn,
                            graph::LRNAttrs::Parse(node.attrs, node.Prefix()));
      a.Set("size", lrn.size);
      a.Set("alpha", lrn.alpha);
      a.Set("beta", lrn.beta);
      a.Set("bias", lrn.bias);
      break;
    }
    case OpKind::kLpNormalization: {
      KILN_ASSIGN_OR_RETURN(const graph::LpNormalizationAttrs lp,
                            graph::LpNormalizationAttrs::Parse(node.attrs, node.Prefix()));
      KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, lp.axis, rank));
      a.Set("axis", axis);
      a.Set("p", lp.p);
      break;
    }
    case OpKind::kMeanVarianceNormalization: {
      KILN_ASSIGN_OR_RETURN(
          const graph::MeanVarianceNormalizationAttrs mvn,
          graph::MeanVarianceNormalizationAttrs::Parse(node.attrs, node.Prefix()));
      Ints axes;
      for (int64_t ax : mvn.axes) {
        KILN_ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(node, ax, rank));
        axes.push_back(n);
      }
      std::sort(axes.begin(), axes.end());
      axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
      a.Set("axes", axes);
      break;
    }
    default:
      break;
  }
  return Single(ctx.Emit(node.op, node.name, node.inputs, a));
}

absl::StatusOr<BuiltOutputs> BuildConvTranspose(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  Value* w = node.input(1);
  int64_t rank = x->type().rank();
  if (rank < 3 || w->type().rank() != rank) {
    return absl::InvalidArgumentError(node.Prefix() + "input and weight must have equal rank >= 3");
  }
  size_t n = static_cast<size_t>(rank - 2);
  KILN_ASSIGN_OR_RETURN(const graph::ConvAttrs c,
                        graph::ConvAttrs::Parse(node.attrs, node.Prefix()));
  Ints kernel = c.kernel_shape.empty() ? Ints(w->type().shape.begin() + 2, w->type().shape.end())
                                       : c.kernel_shape;
  Ints strides = graph::OrFill(c.strides, n, 1);
  Ints dilations = graph::OrFill(c.dilations, n, 1);
  Ints out_pad = graph::OrFill(c.output_padding, n, 0);
  Ints pads = graph::OrFill(c.pads, 2 * n, 0);
  if (kernel.size() != n || strides.size() != n || dilations.size() != n ||
      out_pad.size() != n || pads.size() != 2 * n) {
    return absl::InvalidArgumentError(node.Prefix() + "window attributes have the wrong length");
  }
  const AutoPad auto_pad = c.auto_pad;
  bool has_output_shape = node.attrs.Has("output_shape");
  if (has_output_shape || auto_pad == AutoPad::kSameUpper || auto_pad == AutoPad::kSameLower) {
    Ints target = c.output_shape;
    if (target.size() > n) target.erase(target.begin(), target.end() - n);  // full NCHW form
    if (!has_output_shape) {
      target.clear();
      for (size_t i = 0; i < n; ++i) target.push_back(x->type().shape[2 + i] * strides[i]);
    }
    if (target.size() != n) {
      return absl::InvalidArgumentError(node.Prefix() + "output_shape has the wrong length");
    }
    for (size_t i = 0; i < n; ++i) {
      int64_t total = strides[i] * (x->type().shape[2 + i] - 1) + out_pad[i] +
                      (kernel[i] - 1) * dilations[i] + 1 - target[i];
      // Floor division, as the ONNX reference: SAME_UPPER puts the extra padding at the end.
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      int64_t begin = auto_pad == AutoPad::kSameUpper ? half : total - half;
      int64_t end = total - begin;
      if (end < 0) {  // negative end padding extends the output: output_padding
        out_pad[i] -= end;
        end = 0;
      }
      if (begin < 0) {
        return absl::UnimplementedError(node.Prefix() + "output_shape larger than the full "
                                                        "transposed convolution at the start");
      }
      pads[i] = begin;
      pads[i + n] = end;
    }
  } else if (auto_pad == AutoPad::kValid) {
    pads.assign(2 * n, 0);
  }
  AttrMap a;
  a.Set("kernel_shape", kernel);
  a.Set("strides", strides);
  a.Set("dilations", dilations);
  a.Set("pads", pads);
  a.Set("output_padding", out_pad);
  a.Set("group", c.group);
  std::vector<Value*> inputs{x, w};
  if (node.input(2) != nullptr) inputs.push_back(node.input(2));
  return Single(ctx.Emit(OpKind::kConvTranspose, node.name, inputs, a));
}

absl::StatusOr<AttrMap> LossNodeAttrs(const OnnxNode& node) {
  KILN_ASSIGN_OR_RETURN(const graph::LossAttrs l,
                        graph::LossAttrs::Parse(node.attrs, node.Prefix()));
  AttrMap a;
  a.Set("reduction", std::string(graph::AttrEnumName(l.reduction)));
  if (l.ignore_index) a.Set("ignore_index", *l.ignore_index);
  return a;
}

absl::StatusOr<BuiltOutputs> BuildSoftmaxCrossEntropy(ImportContext& ctx, const OnnxNode& node) {
  Value* scores = node.input(0);
  if (scores->type().rank() < 2) {
    return absl::InvalidArgumentError(node.Prefix() + "scores must have rank >= 2");
  }
  AttrMap la;
  la.Set("axis", int64_t{1});
  KILN_ASSIGN_OR_RETURN(Node * log_prob,
                        ctx.Emit(OpKind::kLogSoftmax, node.name + "/log_prob", {scores}, la));
  std::vector<Value*> inputs{log_prob->output(0), node.input(1)};
  if (node.input(2) != nullptr) inputs.push_back(node.input(2));
  KILN_ASSIGN_OR_RETURN(AttrMap loss_attrs, LossNodeAttrs(node));
  KILN_ASSIGN_OR_RETURN(
      Node * loss, ctx.Emit(OpKind::kNegativeLogLikelihoodLoss, node.name, inputs, loss_attrs));
  return BuiltOutputs{loss->output(0), log_prob->output(0)};
}

// GridSample-16 and RoiAlign-10/16 with every attribute explicit.
absl::StatusOr<BuiltOutputs> BuildSampling(ImportContext& ctx, const OnnxNode& node) {
  AttrMap a;
  if (node.op == OpKind::kGridSample) {
    KILN_ASSIGN_OR_RETURN(const graph::GridSampleAttrs g,
                          graph::GridSampleAttrs::Parse(node.attrs, node.Prefix()));
    a.Set("mode", std::string(graph::AttrEnumName(g.mode)));
    a.Set("padding_mode", std::string(graph::AttrEnumName(g.padding_mode)));
    a.Set("align_corners", int64_t{g.align_corners});
  } else {
    KILN_ASSIGN_OR_RETURN(const graph::RoiAlignAttrs r,
                          graph::RoiAlignAttrs::Parse(node.attrs, node.Prefix()));
    // RoiAlign-10 had no such attribute and behaved as output_half_pixel.
    const CoordinateTransform coord =
        node.attrs.Has("coordinate_transformation_mode") || ctx.opset() >= 16
            ? r.coordinate_transformation_mode
            : CoordinateTransform::kOutputHalfPixel;
    if (coord != CoordinateTransform::kHalfPixel &&
        coord != CoordinateTransform::kOutputHalfPixel) {
      return absl::InvalidArgumentError(node.Prefix() +
                                        absl::StrCat("unknown coordinate_transformation_mode '",
                                                     std::string(graph::AttrEnumName(coord)), "'"));
    }
    a.Set("mode", std::string(graph::AttrEnumName(r.mode)));
    a.Set("coordinate_transformation_mode", std::string(graph::AttrEnumName(coord)));
    a.Set("output_height", r.output_height);
    a.Set("output_width", r.output_width);
    a.Set("sampling_ratio", r.sampling_ratio);
    a.Set("spatial_scale", r.spatial_scale);
  }
  return Single(ctx.Emit(node.op, node.name, node.inputs, a));
}

}  // namespace

absl::StatusOr<BuiltOutputs> BuildNnOp(ImportContext& ctx, const OnnxNode& node) {
  switch (node.op) {
    case OpKind::kLayerNormalization:
      return BuildLayerNorm(ctx, node);
    case OpKind::kInstanceNormalization: case OpKind::kLRN: case OpKind::kLpNormalization:
    case OpKind::kMeanVarianceNormalization:
      return BuildNorm(ctx, node);
    case OpKind::kConvTranspose:
      return BuildConvTranspose(ctx, node);
    case OpKind::kNegativeLogLikelihoodLoss: {
      KILN_ASSIGN_OR_RETURN(AttrMap a, LossNodeAttrs(node));
      return Single(ctx.Emit(node.op, node.name, node.inputs, a));
    }
    case OpKind::kSoftmaxCrossEntropyLoss:
      return BuildSoftmaxCrossEntropy(ctx, node);
    case OpKind::kResize: case OpKind::kUpsample:
      return BuildResize(ctx, node);
    case OpKind::kRNN: case OpKind::kGRU: case OpKind::kLSTM:
      return BuildRecurrent(ctx, node);
    case OpKind::kGridSample: case OpKind::kRoiAlign:
      return BuildSampling(ctx, node);
    default:
      return BuildActivation(ctx, node);
  }
}

}  // namespace kiln::importer
