// Builders of the ops whose output shape depends on the data (NonZero, Compress, Unique,
// NonMaxSuppression). What is constant is resolved here: NonZero of a constant folds, Compress
// with a constant condition becomes a Gather of the selected positions. Otherwise the node is
// compiled for the output's static shape (ONNX shape inference or the declared graph output;
// attribute "shape") and the kernel checks at run time that the data give that shape. Without
// a static shape the node is kUnimplemented, naming the data-dependent dim.
#include "absl/strings/str_cat.h"
#include "compiler_core/importer/onnx/import_context.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {
namespace {

using graph::AttrMap;
using graph::OpKind;
using graph::Value;
using Ints = std::vector<int64_t>;

// kUnimplemented: the output shape of `node` depends on `depends` and is not known.
absl::Status Unknown(const OnnxNode& node, const std::string& depends) {
  return absl::UnimplementedError(
      node.Prefix() +
      absl::StrCat(
          "the output shape depends on the data (", depends,
          ") and is not known statically; Kiln "
          "compiles such ops for a static output shape (declare the graph output's shape, or make "
          "the input a constant), or with an upper bound when the output is a graph output that "
          "no node reads"));
}

// Output 0's static shape in attribute "shape"; without one, when output 0 is a graph output
// that no node reads, `bound` (its upper bound) with attribute "bounded": the run returns the
// output with the shape its data give.
absl::Status SetOutputShape(const ImportContext& ctx, const OnnxNode& node, AttrMap& a,
                            const Ints& bound, const std::string& depends) {
  if (std::optional<TensorType> t = ctx.KnownType(node.proto->output(0))) {
    a.Set("shape", t->shape);
    return absl::OkStatus();
  }
  if (!ctx.IsUnreadGraphOutput(node.proto->output(0))) return Unknown(node, depends);
  a.Set("shape", bound);
  a.Set("bounded", int64_t{1});
  return absl::OkStatus();
}

// `axis` (the node's, when it has one), normalized; without one (Compress, Unique), 0 with `x`
// flattened to [numel].
absl::StatusOr<int64_t> AxisOrFlatten(ImportContext& ctx, const OnnxNode& node,
                                      std::optional<int64_t> axis, Value*& x) {
  if (axis) return NormalizeAxis(node, *axis, x->type().rank());
  if (x->type().rank() != 1) {
    KILN_ASSIGN_OR_RETURN(x, ctx.EmitReshape(node.name + "/flat", x, {x->type().NumElements()}));
  }
  return 0;
}

absl::StatusOr<BuiltOutputs> BuildNonZero(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  const int64_t rank = x->type().rank();
  if (rank == 0) return absl::UnimplementedError(node.Prefix() + "a scalar input");
  if (x->is_constant()) {
    // Row-major positions of the non-zero elements, one column each.
    const auto& t = *x->constant();
    Ints flat;
    for (int64_t i = 0; i < x->type().NumElements(); ++i) {
      if (t.GetAsDouble(i) != 0) flat.push_back(i);
    }
    const int64_t k = static_cast<int64_t>(flat.size());
    Ints table(static_cast<size_t>(rank * k));
    for (int64_t j = 0; j < k; ++j) {
      int64_t rest = flat[j];
      for (int64_t d = rank - 1; d >= 0; --d) {
        table[d * k + j] = rest % x->type().shape[d];
        rest /= x->type().shape[d];
      }
    }
    KILN_ASSIGN_OR_RETURN(
        Value * out,
        ctx.EmitReshape(node.name, ctx.ConstI64(node.name + "/indices", table), {rank, k}));
    return BuiltOutputs{out};
  }
  AttrMap a;
  KILN_RETURN_IF_ERROR(SetOutputShape(ctx, node, a, {rank, x->type().NumElements()},
                                      "the number of non-zero elements"));
  return Single(ctx.Emit(OpKind::kNonZero, node.name, {x}, a));
}

absl::StatusOr<BuiltOutputs> BuildCompress(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  Value* cond = node.input(1);
  if (cond == nullptr || cond->type().dtype != DType::kBool || cond->type().rank() != 1) {
    return absl::InvalidArgumentError(node.Prefix() + "condition must be a 1-D bool tensor");
  }
  KILN_ASSIGN_OR_RETURN(const graph::Axis0Attrs attrs,
                        graph::Axis0Attrs::Parse(node.attrs, node.Prefix()));
  // The schema's axis defaults to 0; Compress without one flattens the input.
  std::optional<int64_t> given_axis;
  if (node.attrs.Has("axis")) given_axis = attrs.axis;
  KILN_ASSIGN_OR_RETURN(int64_t axis, AxisOrFlatten(ctx, node, given_axis, x));
  const int64_t n = std::min(x->type().shape[axis], cond->type().shape[0]);
  AttrMap a;
  a.Set("axis", axis);
  if (cond->is_constant()) {
    Ints picked;
    for (int64_t p = 0; p < n; ++p) {
      if (cond->constant()->GetAsDouble(p) != 0) picked.push_back(p);
    }
    if (picked.empty()) {
      return absl::UnimplementedError(node.Prefix() +
                                      "the constant condition selects nothing "
                                      "(an empty output)");
    }
    return Single(
        ctx.Emit(OpKind::kGather, node.name, {x, ctx.ConstI64(node.name + "/picked", picked)}, a));
  }
  Ints bound = x->type().shape;
  bound[axis] = n;
  KILN_RETURN_IF_ERROR(SetOutputShape(ctx, node, a, bound, "the number of true conditions"));
  const Ints shape = graph::CommonAttrs::From(a).shape;
  if (shape.size() != bound.size()) {
    return absl::InvalidArgumentError(node.Prefix() + absl::StrCat("the output has rank ",
                                                                   shape.size(), ", the input ",
                                                                   bound.size()));
  }
  return Single(ctx.Emit(OpKind::kCompress, node.name, {x, cond}, a));
}

absl::StatusOr<BuiltOutputs> BuildUnique(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  KILN_ASSIGN_OR_RETURN(const graph::UniqueAttrs attrs,
                        graph::UniqueAttrs::Parse(node.attrs, node.Prefix()));
  KILN_ASSIGN_OR_RETURN(int64_t axis, AxisOrFlatten(ctx, node, attrs.axis, x));
  // Y's shape, or the U of any other output (indices and counts are [U]).
  std::optional<TensorType> y = ctx.KnownType(node.proto->output(0));
  Ints shape = x->type().shape;
  if (y && y->rank() == x->type().rank()) {
    shape = y->shape;
  } else {
    bool found = false;
    for (int i : {1, 3}) {
      if (node.proto->output_size() <= i || node.proto->output(i).empty()) continue;
      if (std::optional<TensorType> t = ctx.KnownType(node.proto->output(i)); t && t->rank() == 1) {
        shape[axis] = t->shape[0];
        found = true;
        break;
      }
    }
    if (!found) {
      return Unknown(node, "the number of distinct slices");
    }
  }
  AttrMap a;
  a.Set("axis", axis);
  a.Set("sorted", int64_t{attrs.sorted});
  a.Set("shape", shape);
  KILN_ASSIGN_OR_RETURN(graph::Node * u, ctx.Emit(OpKind::kUnique, node.name, {x}, a, 4));
  return BuiltOutputs{u->output(0), u->output(1), u->output(2), u->output(3)};
}

absl::StatusOr<BuiltOutputs> BuildNonMaxSuppression(ImportContext& ctx, const OnnxNode& node) {
  Value* boxes = node.input(0);
  Value* scores = node.input(1);
  if (boxes == nullptr || scores == nullptr || boxes->type().rank() != 3 ||
      scores->type().rank() != 3) {
    return absl::InvalidArgumentError(node.Prefix() + "boxes and scores must be rank 3");
  }
  KILN_ASSIGN_OR_RETURN(const graph::NonMaxSuppressionAttrs attrs,
                        graph::NonMaxSuppressionAttrs::Parse(node.attrs, node.Prefix()));
  AttrMap a;
  a.Set("center_point_box", attrs.center_point_box);
  // At most every box of every batch and class.
  const Ints bound = {boxes->type().shape[0] * scores->type().shape[1] * boxes->type().shape[1], 3};
  KILN_RETURN_IF_ERROR(SetOutputShape(ctx, node, a, bound, "the number of selected boxes"));
  return Single(ctx.Emit(OpKind::kNonMaxSuppression, node.name, node.inputs, a));
}

}  // namespace

absl::StatusOr<BuiltOutputs> BuildDataDependentOp(ImportContext& ctx, const OnnxNode& node) {
  switch (node.op) {
    case OpKind::kNonZero:
      return BuildNonZero(ctx, node);
    case OpKind::kCompress:
      return BuildCompress(ctx, node);
    case OpKind::kUnique:
      return BuildUnique(ctx, node);
    case OpKind::kNonMaxSuppression:
      return BuildNonMaxSuppression(ctx, node);
    default:
      return absl::InternalError(node.Prefix() + "not a data-dependent op");
  }
}

}  // namespace kiln::importer
