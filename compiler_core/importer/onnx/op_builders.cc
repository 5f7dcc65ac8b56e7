// The import context helpers and the builders of elementwise, contraction and normalization
// ops; dispatch to the window (conv/pool) and shape (data movement) builders.
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "compiler_core/importer/onnx/import_context.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/ir/graph/shape_rules.h"
#include "compiler_core/ir/graph/sym_values.h"
#include "compiler_core/ir/graph/tensor_size.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {

using graph::AttrMap;
using graph::Node;
using graph::OpKind;
using graph::Value;

std::string OnnxNode::Prefix() const {
  return absl::StrCat("node '", name, "' (", proto->op_type(), "): ");
}

absl::StatusOr<Node*> ImportContext::Emit(OpKind op, const std::string& name,
                                          std::vector<Value*> inputs, AttrMap attrs,
                                          int num_outputs) {
  Node* node = graph_.AddNode(op, name, std::move(inputs),
                              std::vector<TensorType>(num_outputs), std::move(attrs));
  KILN_ASSIGN_OR_RETURN(std::vector<TensorType> types, graph::InferOutputTypes(*node));
  for (int i = 0; i < num_outputs; ++i) {
    KILN_RETURN_IF_ERROR(
        CheckTensorSize(types[i], max_tensor_bytes_,
                        absl::StrCat("node '", name, "' (", graph::OpName(op), "): output ", i)));
    node->output(i)->set_type(types[i]);
  }
  // Shapes as values: what this output holds when it is computed from symbolic dims.
  std::vector<std::optional<std::vector<sym::Expr>>> values = graph::InferSymValues(*node);
  for (int i = 0; i < num_outputs; ++i) {
    if (values[i]) node->output(i)->set_sym_value(std::move(values[i]));
  }
  return node;
}

absl::StatusOr<Value*> ImportContext::EmitValue(OpKind op, const std::string& name,
                                                std::vector<Value*> inputs, AttrMap attrs) {
  KILN_ASSIGN_OR_RETURN(Node * n, Emit(op, name, std::move(inputs), std::move(attrs)));
  return n->output(0);
}

absl::StatusOr<Value*> ImportContext::EmitReshape(const std::string& name, Value* x,
                                                  const std::vector<int64_t>& shape) {
  AttrMap a;
  a.Set("allowzero", int64_t{0});
  return EmitValue(OpKind::kReshape, name, {x, ConstI64(name + "/shape", shape)}, a);
}

Value* ImportContext::ConstI64(const std::string& name, const std::vector<int64_t>& values) {
  auto t = Tensor::Zeros(TensorType{DType::kInt64, {static_cast<int64_t>(values.size())}});
  for (size_t i = 0; i < values.size(); ++i) t->mutable_data<int64_t>()[i] = values[i];
  return graph_.AddConstant(name, std::move(t));
}

Value* ImportContext::ConstScalar(const std::string& name, DType dtype, double value) {
  auto t = Tensor::Zeros(TensorType{dtype, {}});
  switch (dtype) {
    case DType::kFloat32: *t->mutable_data<float>() = static_cast<float>(value); break;
    case DType::kFloat64: *t->mutable_data<double>() = value; break;
    case DType::kFloat16: *t->mutable_data<uint16_t>() = FloatToHalf(static_cast<float>(value)); break;
    case DType::kBFloat16:
      *t->mutable_data<uint16_t>() = FloatToBFloat16(static_cast<float>(value));
      break;
    case DType::kInt8: *t->mutable_data<int8_t>() = static_cast<int8_t>(value); break;
    case DType::kInt16: *t->mutable_data<int16_t>() = static_cast<int16_t>(value); break;
    case DType::kInt32: *t->mutable_data<int32_t>() = static_cast<int32_t>(value); break;
    case DType::kInt64: *t->mutable_data<int64_t>() = static_cast<int64_t>(value); break;
    case DType::kUInt8: *t->mutable_data<uint8_t>() = static_cast<uint8_t>(value); break;
    case DType::kUInt16: *t->mutable_data<uint16_t>() = static_cast<uint16_t>(value); break;
    case DType::kUInt32: *t->mutable_data<uint32_t>() = static_cast<uint32_t>(value); break;
    case DType::kUInt64: *t->mutable_data<uint64_t>() = static_cast<uint64_t>(value); break;
    case DType::kBool: *t->mutable_data<uint8_t>() = value != 0; break;
  }
  return graph_.AddConstant(name, std::move(t));
}

Value* ImportContext::ConstFloats(const std::string& name, DType dtype,
                                  const std::vector<int64_t>& shape,
                                  const std::vector<double>& values) {
  auto t = Tensor::Zeros(TensorType{dtype, shape});
  for (size_t i = 0; i < values.size(); ++i) {
    switch (dtype) {
      case DType::kFloat64: t->mutable_data<double>()[i] = values[i]; break;
      case DType::kFloat16:
        t->mutable_data<uint16_t>()[i] = FloatToHalf(static_cast<float>(values[i]));
        break;
      case DType::kBFloat16:
        t->mutable_data<uint16_t>()[i] = FloatToBFloat16(static_cast<float>(values[i]));
        break;
      default: t->mutable_data<float>()[i] = static_cast<float>(values[i]); break;
    }
  }
  return graph_.AddConstant(name, std::move(t));
}

absl::StatusOr<std::vector<int64_t>> ImportContext::ConstInts(const OnnxNode& node,
                                                              int i) const {
  const Value* v = node.input(i);
  if (v == nullptr || !v->is_constant()) {
    return absl::UnimplementedError(
        node.Prefix() + absl::StrCat("input ", i, " must be a constant (static shapes only)"));
  }
  if (IsFloat(v->type().dtype)) {
    return absl::InvalidArgumentError(node.Prefix() +
                                      absl::StrCat("input ", i, " must be an integer tensor"));
  }
  std::vector<int64_t> out;
  for (int64_t k = 0; k < v->type().NumElements(); ++k) {
    out.push_back(v->constant()->GetAsInt64(k));
  }
  return out;
}

absl::StatusOr<BuiltOutputs> Single(absl::StatusOr<Node*> node) {
  KILN_ASSIGN_OR_RETURN(Node * n, std::move(node));
  return BuiltOutputs{n->output(0)};
}

absl::StatusOr<int64_t> NormalizeAxis(const OnnxNode& node, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) {
    return absl::InvalidArgumentError(
        node.Prefix() + absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

namespace {

absl::Status RejectUsedOutputs(const ImportContext& ctx, const OnnxNode& node, int from,
                               const char* what) {
  for (int i = from; i < node.proto->output_size(); ++i) {
    const std::string& out = node.proto->output(i);
    if (!out.empty() && ctx.IsUsed(out)) {
      return absl::UnimplementedError(node.Prefix() + absl::StrCat("output ", i, " ('", out,
                                                                   "', ", what,
                                                                   ") is not supported"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<BuiltOutputs> BuildGemm(ImportContext& ctx, const OnnxNode& node) {
  KILN_ASSIGN_OR_RETURN(const graph::GemmAttrs g,
                        graph::GemmAttrs::Parse(node.attrs, node.Prefix()));
  AttrMap a;
  a.Set("alpha", g.alpha);
  a.Set("beta", g.beta);
  a.Set("transA", int64_t{g.transA});
  a.Set("transB", int64_t{g.transB});
  return Single(ctx.Emit(OpKind::kGemm, node.name, {node.input(0), node.input(1), node.input(2)},
                         a));
}

absl::StatusOr<BuiltOutputs> BuildClip(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  Value* lo = node.input(1);
  Value* hi = node.input(2);
  if (ctx.opset() < 11) {
    KILN_ASSIGN_OR_RETURN(const graph::ClipAttrs c,
                          graph::ClipAttrs::Parse(node.attrs, node.Prefix()));
    lo = hi = nullptr;
    if (node.attrs.Has("min")) lo = ctx.ConstScalar(node.name + "/min", x->type().dtype, c.min);
    if (node.attrs.Has("max")) hi = ctx.ConstScalar(node.name + "/max", x->type().dtype, c.max);
  }
  Node* n = nullptr;
  KILN_ASSIGN_OR_RETURN(n, ctx.Emit(OpKind::kClip, node.name, {x, lo, hi}, {}));
  // Canonical Clip always has three inputs (nullptr for an absent bound).
  return BuiltOutputs{n->output(0)};
}

// BatchNormalization with training_mode=1 (opset 14+): normalizes with the batch's statistics
// (mean and population variance over every axis but 1) and also returns the updated running
// statistics, input * momentum + batch statistic * (1 - momentum) (ONNX operator spec).
absl::StatusOr<BuiltOutputs> BuildBatchNormTraining(ImportContext& ctx, const OnnxNode& node,
                                                    const graph::BatchNormalizationAttrs& attrs) {
  Value* x = node.input(0);
  const int64_t rank = x->type().rank();
  if (rank < 2 || x->type().dtype != DType::kFloat32) {
    return absl::UnimplementedError(node.Prefix() +
                                    "training_mode=1 needs a float32 input of rank 2 or more");
  }
  int step = 0;
  auto emit = [&](OpKind op, std::vector<Value*> in, AttrMap a = {}) -> absl::StatusOr<Value*> {
    KILN_ASSIGN_OR_RETURN(Node * n, ctx.Emit(op, absl::StrCat(node.name, "/train", ++step),
                                             std::move(in), std::move(a)));
    return n->output(0);
  };
  std::vector<int64_t> axes = {0};
  for (int64_t d = 2; d < rank; ++d) axes.push_back(d);
  AttrMap reduce;
  reduce.Set("axes", axes);
  reduce.Set("keepdims", int64_t{1});
  std::vector<int64_t> channel_shape = {x->type().shape[1]};
  AttrMap reshape;
  reshape.Set("allowzero", int64_t{0});
  KILN_ASSIGN_OR_RETURN(Value * mean_kept, emit(OpKind::kReduceMean, {x}, reduce));
  KILN_ASSIGN_OR_RETURN(Value * centered, emit(OpKind::kSub, {x, mean_kept}));
  KILN_ASSIGN_OR_RETURN(Value * squared, emit(OpKind::kMul, {centered, centered}));
  KILN_ASSIGN_OR_RETURN(Value * var_kept, emit(OpKind::kReduceMean, {squared}, reduce));
  Value* shape = ctx.ConstI64(node.name + "/channels", channel_shape);
  KILN_ASSIGN_OR_RETURN(Value * mean, emit(OpKind::kReshape, {mean_kept, shape}, reshape));
  KILN_ASSIGN_OR_RETURN(Value * var, emit(OpKind::kReshape, {var_kept, shape}, reshape));
  AttrMap bn;
  bn.Set("epsilon", attrs.epsilon);
  KILN_ASSIGN_OR_RETURN(Value * y, emit(OpKind::kBatchNormalization,
                                        {x, node.input(1), node.input(2), mean, var}, bn));
  const float momentum = attrs.momentum;
  Value* keep = ctx.ConstScalar(node.name + "/momentum", DType::kFloat32, momentum);
  Value* take = ctx.ConstScalar(node.name + "/one_minus_momentum", DType::kFloat32, 1 - momentum);
  BuiltOutputs outs{y};
  for (auto [running, batch] : {std::pair{node.input(3), mean}, std::pair{node.input(4), var}}) {
    KILN_ASSIGN_OR_RETURN(Value * kept, emit(OpKind::kMul, {running, keep}));
    KILN_ASSIGN_OR_RETURN(Value * added, emit(OpKind::kMul, {batch, take}));
    KILN_ASSIGN_OR_RETURN(Value * updated, emit(OpKind::kAdd, {kept, added}));
    outs.push_back(updated);
  }
  return outs;
}

absl::StatusOr<BuiltOutputs> BuildBatchNorm(ImportContext& ctx, const OnnxNode& node) {
  KILN_ASSIGN_OR_RETURN(const graph::BatchNormalizationAttrs attrs,
                        graph::BatchNormalizationAttrs::Parse(node.attrs, node.Prefix()));
  if (attrs.training_mode) {
    if (!attrs.spatial) {
      return absl::UnimplementedError(node.Prefix() + "spatial=0 is not supported");
    }
    return BuildBatchNormTraining(ctx, node, attrs);
  }
  if (!attrs.spatial) {
    return absl::UnimplementedError(node.Prefix() + "spatial=0 is not supported");
  }
  KILN_RETURN_IF_ERROR(RejectUsedOutputs(ctx, node, 1, "training statistics"));
  AttrMap a;
  a.Set("epsilon", attrs.epsilon);
  std::vector<Value*> in(node.inputs.begin(), node.inputs.end());
  return Single(ctx.Emit(OpKind::kBatchNormalization, node.name, in, a));
}

// Inference Dropout is the identity and its mask a constant of ones; training mode is
// supported only with a constant ratio of 0 (the same result).
absl::StatusOr<BuiltOutputs> BuildDropout(ImportContext& ctx, const OnnxNode& node) {
  if (const Value* training = node.input(2)) {
    if (!training->is_constant() || training->constant()->GetAsInt64(0) != 0) {
      const Value* ratio = node.input(1);
      if (ratio == nullptr || !ratio->is_constant() || ratio->constant()->GetAsDouble(0) != 0) {
        return absl::UnimplementedError(node.Prefix() +
                                        "training mode with a non-zero ratio is not supported");
      }
    }
  }
  KILN_ASSIGN_OR_RETURN(Node * y, ctx.Emit(OpKind::kIdentity, node.name, {node.input(0)}, {}));
  BuiltOutputs outs{y->output(0)};
  if (node.proto->output_size() > 1 && !node.proto->output(1).empty()) {
    if (!node.input(0)->type().is_static()) {
      return absl::UnimplementedError(node.Prefix() + "the mask output of a symbolic input");
    }
    TensorType mask_type{DType::kBool, node.input(0)->type().shape};
    if (auto known = ctx.KnownType(node.proto->output(1))) mask_type = *known;
    auto mask = Tensor::Zeros(mask_type);
    for (int64_t i = 0; i < mask_type.NumElements(); ++i) {
      if (mask_type.dtype == DType::kBool) {
        mask->mutable_data<uint8_t>()[i] = 1;
      } else if (mask_type.dtype == DType::kFloat32) {
        mask->mutable_data<float>()[i] = 1.0f;
      } else {
        return absl::UnimplementedError(node.Prefix() + "dropout mask of this dtype");
      }
    }
    outs.push_back(ctx.graph().AddConstant(node.proto->output(1), std::move(mask)));
  }
  return outs;
}

// Softmax/LogSoftmax/Hardmax with opset-13 semantics; pre-13 coerces to 2-D at `axis`.
absl::StatusOr<BuiltOutputs> BuildSoftmax(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  int64_t rank = x->type().rank();
  KILN_ASSIGN_OR_RETURN(const graph::AxisAttrs attrs,
                        graph::AxisAttrs::Parse(node.attrs, node.Prefix()));
  // The schema's default is opset 13's; before, the axis defaults to 1.
  int64_t axis = node.attrs.Has("axis") || ctx.opset() >= 13 ? attrs.axis : 1;
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) {
    return absl::InvalidArgumentError(node.Prefix() +
                                      absl::StrCat("axis ", axis, " is out of range for rank ",
                                                   rank));
  }
  if (axis < 0) axis += rank;
  AttrMap a;
  if (ctx.opset() >= 13 || axis == rank - 1 || rank == 0) {
    a.Set("axis", axis);
    return Single(ctx.Emit(node.op, node.name, {x}, a));
  }
  if (!x->type().is_static()) {
    return absl::UnimplementedError(node.Prefix() +
                                    "before opset 13, an axis other than the last over a "
                                    "symbolic input");
  }
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= x->type().shape[i];
  AttrMap ra;
  ra.Set("allowzero", int64_t{0});
  KILN_ASSIGN_OR_RETURN(
      Node * to2d, ctx.Emit(OpKind::kReshape, node.name + "/to_2d",
                            {x, ctx.ConstI64(node.name + "/shape_2d", {outer, inner})}, ra));
  a.Set("axis", int64_t{1});
  KILN_ASSIGN_OR_RETURN(Node * sm, ctx.Emit(node.op, node.name, {to2d->output(0)}, a));
  return Single(ctx.Emit(OpKind::kReshape, node.name + "/from_2d",
                         {sm->output(0), ctx.ConstI64(node.name + "/shape_nd", x->type().shape)},
                         ra));
}

absl::StatusOr<BuiltOutputs> BuildGeneric(ImportContext& ctx, const OnnxNode& node) {
  AttrMap a = node.attrs;
  if (node.op == OpKind::kLeakyRelu) {
    KILN_ASSIGN_OR_RETURN(const graph::LeakyReluAttrs l,
                          graph::LeakyReluAttrs::Parse(node.attrs, node.Prefix()));
    a.Set("alpha", l.alpha);
  }
  return Single(ctx.Emit(node.op, node.name, node.inputs, a));
}

}  // namespace

// kUnimplemented naming the first input of `node` with symbolic dims or a shape value, when
// its op's builder does not handle them; OK otherwise.
absl::Status CheckSymbolicInputs(const OnnxNode& node) {
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Value* v = node.inputs[i];
    if (v == nullptr || (v->type().is_static() && !v->sym_value().has_value())) continue;
    if (graph::SupportsSymbolic(node.op, graph::kSymBuild)) return absl::OkStatus();
    return absl::UnimplementedError(
        node.Prefix() + absl::StrCat("input ", i, " has symbolic dims (", v->type().ToString(),
                                     v->type().is_static() ? ", computed from symbolic dims" : "",
                                     "), which the importer's ", graph::OpName(node.op),
                                     " does not support yet"));
  }
  return absl::OkStatus();
}

absl::StatusOr<BuiltOutputs> BuildNode(ImportContext& ctx, const OnnxNode& node) {
  // Every op built here reads its first input (found by fuzz/onnx_import: an omitted one
  // reached the builders as null).
  if (node.proto->input_size() > 0 && node.input(0) == nullptr) {
    return absl::InvalidArgumentError(node.Prefix() + "input 0 is required but omitted");
  }
  KILN_RETURN_IF_ERROR(CheckSymbolicInputs(node));
  // Hardmax is an NN op whose pre-13 axis semantics the generic path below handles.
  if (graph::IsNnOp(node.op) && node.op != OpKind::kHardmax) return BuildNnOp(ctx, node);
  if (graph::IsTensorOp(node.op)) return BuildTensorOp(ctx, node);
  switch (node.op) {
    case OpKind::kConv:
    case OpKind::kMaxPool:
    case OpKind::kAveragePool:
    case OpKind::kLpPool:
      return BuildWindowOp(ctx, node);
    case OpKind::kFlatten:
    case OpKind::kReshape:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
    case OpKind::kTranspose:
    case OpKind::kConcat:
    case OpKind::kPad:
    case OpKind::kShape:
    case OpKind::kGather:
    case OpKind::kSlice:
      return BuildShapeOp(ctx, node);
    case OpKind::kGemm:
      return BuildGemm(ctx, node);
    case OpKind::kClip:
      return BuildClip(ctx, node);
    case OpKind::kBatchNormalization:
      return BuildBatchNorm(ctx, node);
    case OpKind::kDropout:
      return BuildDropout(ctx, node);
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
    case OpKind::kHardmax:
      return BuildSoftmax(ctx, node);
    default:
      return BuildGeneric(ctx, node);
  }
}

}  // namespace kiln::importer
