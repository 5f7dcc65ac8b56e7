// Builders of data-movement ops: axes normalized to non-negative, shape/axes/pads/slice
// parameters as i64 constant inputs, Shape folded to a constant.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compiler_core/importer/onnx/import_context.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {

using graph::AttrMap;
using graph::Node;
using graph::OpKind;
using graph::Value;

namespace {

using Ints = std::vector<int64_t>;

// Axes normalized against `rank`, sorted, without repeats.
absl::StatusOr<Ints> NormalizeAxes(const OnnxNode& node, const Ints& axes, int64_t rank) {
  Ints out;
  for (int64_t a : axes) {
    KILN_ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(node, a, rank));
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    return absl::InvalidArgumentError(node.Prefix() + "axes contain a repeated axis");
  }
  return out;
}

// Integer parameter from constant input `i` (opset >= `since`) or, before, attribute `attr`
// (`value`, its decoded value).
absl::StatusOr<Ints> Param(ImportContext& ctx, const OnnxNode& node, int i, int since,
                           const std::string& attr, const Ints& value, bool* present) {
  if (ctx.opset() < since) {
    *present = node.attrs.Has(attr);
    return value;
  }
  *present = node.input(i) != nullptr;
  if (!*present) return Ints{};
  return ctx.ConstInts(node, i);
}

absl::StatusOr<BuiltOutputs> BuildSqueeze(ImportContext& ctx, const OnnxNode& node, bool un) {
  Value* x = node.input(0);
  KILN_ASSIGN_OR_RETURN(const graph::SqueezeAttrs attrs,
                        graph::SqueezeAttrs::Parse(node.attrs, node.Prefix()));
  bool present = false;
  KILN_ASSIGN_OR_RETURN(Ints axes, Param(ctx, node, 1, 13, "axes", attrs.axes, &present));
  int64_t rank = x->type().rank();
  if (un) {
    if (!present) return absl::InvalidArgumentError(node.Prefix() + "missing axes");
    rank += static_cast<int64_t>(axes.size());
  } else if (!present) {
    if (!x->type().is_static()) {
      return absl::UnimplementedError(
          node.Prefix() + "without axes, which dims a symbolic input drops is known at run time");
    }
    for (int64_t i = 0; i < rank; ++i) {
      if (x->type().shape[i] == 1) axes.push_back(i);
    }
  }
  KILN_ASSIGN_OR_RETURN(axes, NormalizeAxes(node, axes, rank));
  return Single(ctx.Emit(node.op, node.name, {x, ctx.ConstI64(node.name + "/axes", axes)}, {}));
}

bool IsRuntime(const Value* v) { return v != nullptr && !v->is_constant(); }

// The static type of `node`'s output 0 when `what` arrives at run time: what ONNX shape
// inference or the declared graph output gives (the kernel checks it at run time), or
// kUnimplemented saying the output shape is unknown.
absl::StatusOr<TensorType> RuntimeOperandType(const ImportContext& ctx, const OnnxNode& node,
                                              const std::string& what) {
  if (node.proto->output_size() > 0) {
    if (std::optional<TensorType> t = ctx.KnownType(node.proto->output(0))) return *t;
  }
  return absl::UnimplementedError(node.Prefix() +
                                  absl::StrCat(what, " arrive at run time and the output shape "
                                                     "is unknown (give them as constants, or the "
                                                     "graph output a static shape)"));
}

// Slice-10+ whose starts, ends, axes or steps arrive at run time: the operands are kept as
// they are (constant axes normalized; absent axes and steps filled in) and the output shape is
// the known static one, in attribute "shape".
absl::StatusOr<BuiltOutputs> BuildRuntimeSlice(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  Value* starts = node.input(1);
  Value* ends = node.input(2);
  if (starts == nullptr || ends == nullptr) {
    return absl::InvalidArgumentError(node.Prefix() + "missing starts or ends");
  }
  KILN_ASSIGN_OR_RETURN(TensorType out, RuntimeOperandType(ctx, node, "starts/ends/axes/steps"));
  if (out.rank() != x->type().rank()) {
    return absl::InvalidArgumentError(node.Prefix() + "the known output rank differs from the input's");
  }
  const int64_t count = starts->type().NumElements();
  const std::string& n = node.name;
  Value* axes = node.input(3);
  if (axes == nullptr || axes->is_constant()) {
    Ints a;
    if (axes == nullptr) {
      for (int64_t i = 0; i < count; ++i) a.push_back(i);
    } else {
      KILN_ASSIGN_OR_RETURN(a, ctx.ConstInts(node, 3));
      for (int64_t& v : a) {
        KILN_ASSIGN_OR_RETURN(v, NormalizeAxis(node, v, x->type().rank()));
      }
    }
    axes = ctx.ConstI64(n + "/axes", a);
  }
  Value* steps = node.input(4);
  if (steps == nullptr) steps = ctx.ConstI64(n + "/steps", Ints(static_cast<size_t>(count), 1));
  AttrMap a;
  a.Set("shape", out.shape);
  return Single(ctx.Emit(OpKind::kSlice, n, {x, starts, ends, axes, steps}, a));
}

absl::StatusOr<BuiltOutputs> BuildSlice(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  // Starts or ends computed from symbolic dims (Value::sym_value) stay operands, for the shape
  // rule to read; any other operand arriving at run time makes a runtime slice.
  auto shape_value = [](const Value* v) { return v != nullptr && v->sym_value().has_value(); };
  auto known = [&](int i) { return !IsRuntime(node.input(i)) || shape_value(node.input(i)); };
  if (ctx.opset() >= 10 && !(known(1) && known(2) && !IsRuntime(node.input(3)) &&
                             !IsRuntime(node.input(4)))) {
    return BuildRuntimeSlice(ctx, node);
  }
  KILN_ASSIGN_OR_RETURN(const graph::SliceAttrs attrs,
                        graph::SliceAttrs::Parse(node.attrs, node.Prefix()));
  bool has_starts = false, has_ends = false, has_axes = false, has_steps = false;
  // Starts or ends as constants, or the shape value kept as the operand (its length in `ints`).
  auto bounds = [&](int i, const char* attr, const Ints& attr_value, bool* present,
                    Value** operand) -> absl::StatusOr<Ints> {
    if (ctx.opset() >= 10 && shape_value(node.input(i))) {
      *present = true;
      *operand = node.input(i);
      return Ints(node.input(i)->sym_value()->size(), 0);
    }
    return Param(ctx, node, i, 10, attr, attr_value, present);
  };
  Value* starts_operand = nullptr;
  Value* ends_operand = nullptr;
  KILN_ASSIGN_OR_RETURN(Ints starts,
                        bounds(1, "starts", attrs.starts, &has_starts, &starts_operand));
  KILN_ASSIGN_OR_RETURN(Ints ends, bounds(2, "ends", attrs.ends, &has_ends, &ends_operand));
  KILN_ASSIGN_OR_RETURN(Ints axes, Param(ctx, node, 3, 10, "axes", attrs.axes, &has_axes));
  Ints steps;
  if (ctx.opset() >= 10 && node.input(4) != nullptr) {
    KILN_ASSIGN_OR_RETURN(steps, ctx.ConstInts(node, 4));
    has_steps = true;
  }
  if (!has_starts || !has_ends || starts.size() != ends.size()) {
    return absl::InvalidArgumentError(node.Prefix() + "starts and ends must have equal length");
  }
  if (!has_axes) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (!has_steps) steps.assign(starts.size(), 1);
  for (int64_t& a : axes) {
    KILN_ASSIGN_OR_RETURN(a, NormalizeAxis(node, a, x->type().rank()));
  }
  const std::string& n = node.name;
  if (starts_operand == nullptr) starts_operand = ctx.ConstI64(n + "/starts", starts);
  if (ends_operand == nullptr) ends_operand = ctx.ConstI64(n + "/ends", ends);
  return Single(ctx.Emit(OpKind::kSlice, n,
                         {x, starts_operand, ends_operand, ctx.ConstI64(n + "/axes", axes),
                          ctx.ConstI64(n + "/steps", steps)},
                         {}));
}

absl::StatusOr<BuiltOutputs> BuildPad(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  KILN_ASSIGN_OR_RETURN(const graph::PadAttrs attrs,
                        graph::PadAttrs::Parse(node.attrs, node.Prefix()));
  AttrMap a;
  a.Set("mode", std::string(graph::AttrEnumName(attrs.mode)));
  Ints pads;
  Value* value = nullptr;
  if (ctx.opset() < 11) {
    pads = attrs.pads;
    if (node.attrs.Has("value")) {
      value = ctx.ConstScalar(node.name + "/value", x->type().dtype, attrs.value);
    }
  } else if (IsRuntime(node.input(1))) {
    // Pads that arrive at run time: the known static output shape, checked by the kernel.
    KILN_ASSIGN_OR_RETURN(TensorType out, RuntimeOperandType(ctx, node, "pads"));
    a.Set("shape", out.shape);
    return Single(ctx.Emit(OpKind::kPad, node.name, {x, node.input(1), node.input(2)}, a));
  } else {
    KILN_ASSIGN_OR_RETURN(pads, ctx.ConstInts(node, 1));
    value = node.input(2);
  }
  return Single(ctx.Emit(OpKind::kPad, node.name,
                         {x, ctx.ConstI64(node.name + "/pads", pads), value}, a));
}

}  // namespace

absl::StatusOr<BuiltOutputs> BuildShapeOp(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  int64_t rank = x->type().rank();
  AttrMap a;
  if ((node.op == OpKind::kReshape || node.op == OpKind::kSqueeze ||
       node.op == OpKind::kUnsqueeze) &&
      node.input(1) != nullptr && !node.input(1)->is_constant()) {
    if (node.op == OpKind::kReshape && node.input(1)->sym_value()) {
      // A target computed from symbolic dims (Value::sym_value): the shape rule reads it.
      KILN_ASSIGN_OR_RETURN(const graph::ReshapeAttrs attrs,
                            graph::ReshapeAttrs::Parse(node.attrs, node.Prefix()));
      a.Set("allowzero", int64_t{attrs.allowzero});
      return Single(ctx.Emit(OpKind::kReshape, node.name, {x, node.input(1)}, a));
    }
    return BuildReshapeToKnownType(ctx, node);
  }
  switch (node.op) {
    case OpKind::kFlatten: {
      KILN_ASSIGN_OR_RETURN(const graph::FlattenAttrs attrs,
                            graph::FlattenAttrs::Parse(node.attrs, node.Prefix()));
      int64_t axis = attrs.axis;
      if (axis < -rank || axis > rank) {
        return absl::InvalidArgumentError(
            node.Prefix() + absl::StrCat("axis ", axis, " is out of range for rank ", rank));
      }
      a.Set("axis", axis < 0 ? axis + rank : axis);
      return Single(ctx.Emit(OpKind::kFlatten, node.name, {x}, a));
    }
    case OpKind::kReshape: {
      KILN_ASSIGN_OR_RETURN(const graph::ReshapeAttrs attrs,
                            graph::ReshapeAttrs::Parse(node.attrs, node.Prefix()));
      Value* shape = node.input(1);
      if (ctx.opset() < 5) {
        // Reshape-1 gives the shape as an attribute: an ONNX-level read (the graph op's Reshape
        // set has no such attribute; the common "shape" is the static output shape).
        shape = ctx.ConstI64(node.name + "/shape", node.attrs.GetInts("shape"));
      } else {
        KILN_ASSIGN_OR_RETURN(Ints s, ctx.ConstInts(node, 1));
        if (shape->type().dtype != DType::kInt64) shape = ctx.ConstI64(node.name + "/shape", s);
      }
      a.Set("allowzero", int64_t{attrs.allowzero});
      return Single(ctx.Emit(OpKind::kReshape, node.name, {x, shape}, a));
    }
    case OpKind::kSqueeze:
      return BuildSqueeze(ctx, node, /*un=*/false);
    case OpKind::kUnsqueeze:
      return BuildSqueeze(ctx, node, /*un=*/true);
    case OpKind::kTranspose: {
      KILN_ASSIGN_OR_RETURN(const graph::TransposeAttrs attrs,
                            graph::TransposeAttrs::Parse(node.attrs, node.Prefix()));
      Ints perm = attrs.perm;
      if (!node.attrs.Has("perm")) {
        for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
      }
      a.Set("perm", perm);
      return Single(ctx.Emit(OpKind::kTranspose, node.name, {x}, a));
    }
    case OpKind::kConcat:
    case OpKind::kGather: {
      int64_t given = 0;
      if (node.op == OpKind::kConcat) {
        KILN_ASSIGN_OR_RETURN(const graph::ConcatAttrs c,
                              graph::ConcatAttrs::Parse(node.attrs, node.Prefix()));
        given = c.axis;
      } else {
        KILN_ASSIGN_OR_RETURN(const graph::Axis0Attrs g,
                              graph::Axis0Attrs::Parse(node.attrs, node.Prefix()));
        given = g.axis;
      }
      KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, given, rank));
      a.Set("axis", axis);
      return Single(ctx.Emit(node.op, node.name, node.inputs, a));
    }
    case OpKind::kPad:
      return BuildPad(ctx, node);
    case OpKind::kSlice:
      return BuildSlice(ctx, node);
    case OpKind::kShape: {
      KILN_ASSIGN_OR_RETURN(const graph::ShapeAttrs attrs,
                            graph::ShapeAttrs::Parse(node.attrs, node.Prefix()));
      int64_t start = attrs.start, end = attrs.end.value_or(rank);
      if (start < 0) start += rank;
      if (end < 0) end += rank;
      start = std::clamp<int64_t>(start, 0, rank);
      end = std::clamp<int64_t>(end, start, rank);
      if (!x->type().is_static()) {
        // The dims as a shape value (Value::sym_value), folded to a constant when the sliced
        // dims are static.
        AttrMap sa;
        sa.Set("start", start);
        sa.Set("end", end);
        return Single(ctx.Emit(OpKind::kShape, node.name, {x}, sa));
      }
      Ints dims(x->type().shape.begin() + start, x->type().shape.begin() + end);
      return BuiltOutputs{ctx.ConstI64(node.proto->output(0), dims)};
    }
    default:
      return absl::InternalError(node.Prefix() + "not a shape op");
  }
}

}  // namespace kiln::importer
