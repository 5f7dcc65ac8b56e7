// Ops imported as compositions of other graph ops, each exact:
// - Scatter (opsets 9..10, deprecated): ScatterElements with the same "axis".
// - MaxUnpool (opsets 9..11): X scattered to its flat Indices in a zero tensor of the unpooled
//   shape (ScatterElements along axis 0 of the flattened tensors), zero-padded at the end of
//   each spatial dim up to output_shape (onnx/backend/test/case/node/maxunpool.py).
// - Shrink: Where(x < -lambd, x + bias, Where(x > lambd, x - bias, 0)).
// - ReverseSequence: GatherElements along time_axis with indices
//   Where(t < len[b], len[b] - 1 - t, t), broadcast to the input's shape.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/importer/onnx/import_context.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {

using graph::AttrMap;
using graph::OpKind;
using graph::Value;

namespace {

using Ints = std::vector<int64_t>;

absl::StatusOr<BuiltOutputs> BuildScatter(ImportContext& ctx, const OnnxNode& node) {
  KILN_ASSIGN_OR_RETURN(const graph::Axis0Attrs attrs,
                        graph::Axis0Attrs::Parse(node.attrs, node.Prefix()));
  KILN_ASSIGN_OR_RETURN(int64_t axis,
                        NormalizeAxis(node, attrs.axis, node.input(0)->type().rank()));
  AttrMap a;
  a.Set("axis", axis);
  a.Set("reduction", std::string("none"));
  return Single(ctx.Emit(OpKind::kScatterElements, node.name, node.inputs, a));
}

// The unpooled shape (in - 1) * stride + kernel - pad_begin - pad_end per spatial dim.
absl::StatusOr<Ints> UnpooledShape(const OnnxNode& node) {
  const Ints& in = node.input(0)->type().shape;
  size_t n = in.size() - 2;
  KILN_ASSIGN_OR_RETURN(const graph::MaxUnpoolAttrs attrs,
                        graph::MaxUnpoolAttrs::Parse(node.attrs, node.Prefix()));
  const Ints& kernel = attrs.kernel_shape;
  Ints strides = graph::OrFill(attrs.strides, n, 1);
  Ints pads = graph::OrFill(attrs.pads, 2 * n, 0);
  if (kernel.size() != n || strides.size() != n || pads.size() != 2 * n) {
    return absl::InvalidArgumentError(node.Prefix() +
                                      absl::StrCat("kernel_shape, strides and pads must have ", n,
                                                   ", ", n, " and ", 2 * n, " values"));
  }
  Ints out{in[0], in[1]};
  for (size_t i = 0; i < n; ++i) {
    out.push_back((in[i + 2] - 1) * strides[i] + kernel[i] - pads[i] - pads[i + n]);
  }
  return out;
}

// The output_shape input: its constant value or the statically known output shape.
absl::StatusOr<Ints> RequestedShape(const ImportContext& ctx, const OnnxNode& node) {
  if (node.input(2)->is_constant()) return ctx.ConstInts(node, 2);
  std::optional<TensorType> known = ctx.KnownType(node.proto->output(0));
  if (!known) {
    return absl::UnimplementedError(
        node.Prefix() + "output_shape arrives at run time and the output shape is unknown");
  }
  return known->shape;
}

// The values scattered to their flat indices in a zero tensor of the unpooled shape, then (with
// output_shape) zero-padded at the end of each spatial dim, as the ONNX reference does.
absl::StatusOr<BuiltOutputs> BuildMaxUnpool(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  Value* indices = node.input(1);
  if (x->type().rank() < 3 || indices->type().shape != x->type().shape) {
    return absl::InvalidArgumentError(node.Prefix() +
                                      "X must have rank >= 3 and I the same shape as X");
  }
  KILN_ASSIGN_OR_RETURN(Ints unpooled, UnpooledShape(node));
  Ints out_shape = unpooled;
  if (node.input(2) != nullptr) {
    KILN_ASSIGN_OR_RETURN(out_shape, RequestedShape(ctx, node));
  }
  int64_t rank = x->type().rank();
  Ints pads(2 * rank, 0);
  bool pad = false;
  for (int64_t d = 0; d < rank && static_cast<int64_t>(out_shape.size()) == rank; ++d) {
    pads[rank + d] = out_shape[d] - unpooled[d];
    pad |= pads[rank + d] != 0;
  }
  if (static_cast<int64_t>(out_shape.size()) != rank || pads[rank] != 0 || pads[rank + 1] != 0 ||
      *std::min_element(pads.begin(), pads.end()) < 0) {
    return absl::InvalidArgumentError(
        node.Prefix() + absl::StrCat("output_shape [", absl::StrJoin(out_shape, ","),
                                     "] is not the unpooled shape [", absl::StrJoin(unpooled, ","),
                                     "] grown in its spatial dims"));
  }
  const std::string& name = node.name;
  TensorType flat{x->type().dtype, {TensorType{x->type().dtype, unpooled}.NumElements()}};
  Value* zeros = ctx.graph().AddConstant(name + "/zeros", Tensor::Zeros(flat));
  int64_t n = x->type().NumElements();
  KILN_ASSIGN_OR_RETURN(Value * flat_x, ctx.EmitReshape(name + "/flat_x", x, {n}));
  KILN_ASSIGN_OR_RETURN(Value * flat_i, ctx.EmitReshape(name + "/flat_i", indices, {n}));
  AttrMap a;
  a.Set("axis", int64_t{0});
  a.Set("reduction", std::string("none"));
  KILN_ASSIGN_OR_RETURN(
      Value * scattered,
      ctx.EmitValue(OpKind::kScatterElements, name + "/scatter", {zeros, flat_i, flat_x}, a));
  KILN_ASSIGN_OR_RETURN(Value * y, ctx.EmitReshape(name + "/unpooled", scattered, unpooled));
  if (!pad) return BuiltOutputs{y};
  AttrMap pa;
  pa.Set("mode", std::string("constant"));
  return Single(ctx.Emit(OpKind::kPad, name, {y, ctx.ConstI64(name + "/pads", pads), nullptr}, pa));
}

absl::StatusOr<BuiltOutputs> BuildShrink(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  DType dt = x->type().dtype;
  KILN_ASSIGN_OR_RETURN(const graph::ShrinkAttrs attrs,
                        graph::ShrinkAttrs::Parse(node.attrs, node.Prefix()));
  double lambd = attrs.lambd;
  double bias = attrs.bias;
  if (!IsFloat(dt) && (!IsSigned(dt) || lambd != static_cast<int64_t>(lambd) ||
                       bias != static_cast<int64_t>(bias))) {
    return absl::UnimplementedError(
        node.Prefix() +
        absl::StrCat("an integer input needs a signed type and integral lambd and bias (got ",
                     DTypeName(dt), ", ", lambd, ", ", bias, ")"));
  }
  const std::string& name = node.name;
  KILN_ASSIGN_OR_RETURN(Value * below,
                        ctx.EmitValue(OpKind::kLess, name + "/below",
                                      {x, ctx.ConstScalar(name + "/-lambd", dt, -lambd)}));
  KILN_ASSIGN_OR_RETURN(Value * above,
                        ctx.EmitValue(OpKind::kGreater, name + "/above",
                                      {x, ctx.ConstScalar(name + "/lambd", dt, lambd)}));
  Value* b = ctx.ConstScalar(name + "/bias", dt, bias);
  KILN_ASSIGN_OR_RETURN(Value * plus, ctx.EmitValue(OpKind::kAdd, name + "/plus", {x, b}));
  KILN_ASSIGN_OR_RETURN(Value * minus, ctx.EmitValue(OpKind::kSub, name + "/minus", {x, b}));
  KILN_ASSIGN_OR_RETURN(Value * upper,
                        ctx.EmitValue(OpKind::kWhere, name + "/upper",
                                      {above, minus, ctx.ConstScalar(name + "/zero", dt, 0)}));
  return Single(ctx.Emit(OpKind::kWhere, name, {below, plus, upper}, {}));
}

absl::StatusOr<BuiltOutputs> BuildReverseSequence(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  Value* lens = node.input(1);
  const Ints& shape = x->type().shape;
  int64_t rank = x->type().rank();
  KILN_ASSIGN_OR_RETURN(const graph::ReverseSequenceAttrs attrs,
                        graph::ReverseSequenceAttrs::Parse(node.attrs, node.Prefix()));
  int64_t batch_axis = attrs.batch_axis;
  int64_t time_axis = attrs.time_axis;
  if (rank < 2 || !((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0))) {
    return absl::InvalidArgumentError(
        node.Prefix() +
        absl::StrCat("batch_axis ", batch_axis, " and time_axis ", time_axis,
                     " must be 0 and 1 (in either order) of an input of rank >= 2"));
  }
  if (lens->type().dtype != DType::kInt64 || lens->type().shape != Ints{shape[batch_axis]}) {
    return absl::InvalidArgumentError(
        node.Prefix() + absl::StrCat("sequence_lens must be i64 [", shape[batch_axis], "]"));
  }
  KILN_ASSIGN_OR_RETURN(Value * y,
                        ReverseWithinLengths(ctx, node.name, x, lens, time_axis, batch_axis));
  return BuiltOutputs{y};
}

}  // namespace

absl::StatusOr<Value*> ReverseWithinLengths(ImportContext& ctx, const std::string& name, Value* x,
                                            Value* lens, int64_t time_axis, int64_t batch_axis) {
  const Ints& shape = x->type().shape;
  const int64_t rank = x->type().rank();
  // t varies along time_axis, len along batch_axis; both broadcast over the other dims.
  Ints t_shape(rank, 1), len_shape(rank, 1);
  t_shape[time_axis] = shape[time_axis];
  len_shape[batch_axis] = shape[batch_axis];
  auto t_values = Tensor::Zeros({DType::kInt64, t_shape});
  for (int64_t t = 0; t < shape[time_axis]; ++t) t_values->mutable_data<int64_t>()[t] = t;
  Value* t = ctx.graph().AddConstant(name + "/t", std::move(t_values));
  KILN_ASSIGN_OR_RETURN(Value * len, ctx.EmitReshape(name + "/len", lens, len_shape));
  KILN_ASSIGN_OR_RETURN(Value * inside, ctx.EmitValue(OpKind::kLess, name + "/inside", {t, len}));
  KILN_ASSIGN_OR_RETURN(Value * last,
                        ctx.EmitValue(OpKind::kSub, name + "/last",
                                      {len, ctx.ConstScalar(name + "/one", DType::kInt64, 1)}));
  KILN_ASSIGN_OR_RETURN(Value * rev, ctx.EmitValue(OpKind::kSub, name + "/reversed", {last, t}));
  KILN_ASSIGN_OR_RETURN(Value * idx,
                        ctx.EmitValue(OpKind::kWhere, name + "/index", {inside, rev, t}));
  KILN_ASSIGN_OR_RETURN(Value * full, ctx.EmitValue(OpKind::kExpand, name + "/full_index",
                                                    {idx, ctx.ConstI64(name + "/shape", shape)}));
  AttrMap a;
  a.Set("axis", time_axis);
  return ctx.EmitValue(OpKind::kGatherElements, name, {x, full}, a);
}

absl::StatusOr<BuiltOutputs> BuildComposite(ImportContext& ctx, const OnnxNode& node) {
  switch (node.op) {
    case OpKind::kScatter:
      return BuildScatter(ctx, node);
    case OpKind::kMaxUnpool:
      return BuildMaxUnpool(ctx, node);
    case OpKind::kShrink:
      return BuildShrink(ctx, node);
    case OpKind::kReverseSequence:
      return BuildReverseSequence(ctx, node);
    default:
      return absl::InternalError(node.Prefix() + "is not a composite op");
  }
}

}  // namespace kiln::importer
