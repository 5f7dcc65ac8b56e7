// Builders of the tensor, reduction and logic ops. Canonical forms: reductions carry sorted,
// non-negative "axes" and "keepdims" (an empty reduction is an Identity); ArgMax/ArgMin,
// Gather*/Scatter*/CumSum/TopK/OneHot/Split carry a non-negative "axis"; CastLike becomes Cast;
// Size and ConstantOfShape fold to constants; Split becomes one Slice per output.
//
// Operands that only determine an output's shape (Expand's shape, Tile's repeats, TopK's k,
// OneHot's depth, Split's sizes, ConstantOfShape's shape, Range's count, ReduceSum's axes) may
// arrive at run time when ONNX shape inference (or the declared graph output) knows the
// output's static type: the builder then derives the operand from that type.
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/importer/onnx/import_context.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/ir/graph/tensor_size.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {

using graph::AttrMap;
using graph::Node;
using graph::OpKind;
using graph::Value;

namespace {

using Ints = std::vector<int64_t>;

bool IsConst(const Value* v) { return v != nullptr && v->is_constant(); }

// The static type of ONNX output `i`, or kUnimplemented naming `what` arrives at run time.
absl::StatusOr<TensorType> OutputType(const ImportContext& ctx, const OnnxNode& node, int i,
                                      const std::string& what) {
  if (i < node.proto->output_size()) {
    if (std::optional<TensorType> t = ctx.KnownType(node.proto->output(i))) return *t;
  }
  return absl::UnimplementedError(
      node.Prefix() + absl::StrCat(what, " arrives at run time and the output shape is unknown"));
}

// The integer values of input `i`: its constant values, or nullopt when it is a runtime value.
absl::StatusOr<std::optional<Ints>> MaybeConstInts(const ImportContext& ctx,
                                                   const OnnxNode& node, int i) {
  if (!IsConst(node.input(i))) return std::optional<Ints>();
  KILN_ASSIGN_OR_RETURN(Ints v, ctx.ConstInts(node, i));
  return std::optional<Ints>(std::move(v));
}

// The axis sets (bit masks over the rank-r input) whose reduction turns shape `in` into `out`
// (with or without keepdims); empty past rank 16.
std::vector<uint32_t> AxisSetsFromShapes(const Ints& in, const Ints& out, bool keep) {
  const int64_t r = static_cast<int64_t>(in.size());
  std::vector<uint32_t> sets;
  if (r > 16) return sets;
  for (uint32_t mask = 1; mask < (1u << r); ++mask) {
    Ints shape;
    for (int64_t d = 0; d < r; ++d) {
      if (!(mask & (1u << d))) {
        shape.push_back(in[d]);
      } else if (keep) {
        shape.push_back(1);
      }
    }
    if (shape == out) sets.push_back(mask);
  }
  return sets;
}

// A reduction whose axes arrive at run time (their count is static, their values are not): one
// reduction per axis set the static input and output shapes allow (sets that differ only in
// size-1 dims compute the same values, so once), selected at run time by the axes' bit mask
// (negative axes count from the end); a RuntimeCheck refuses axes that are none of the sets.
absl::StatusOr<BuiltOutputs> BuildRuntimeAxesReduce(ImportContext& ctx, const OnnxNode& node,
                                                    bool keep) {
  Value* x = node.input(0);
  const Ints& in = x->type().shape;
  const int64_t rank = x->type().rank();
  KILN_ASSIGN_OR_RETURN(TensorType out, OutputType(ctx, node, 0, "axes"));
  const std::vector<uint32_t> sets = AxisSetsFromShapes(in, out.shape, keep);
  // One reduction per set of non-1 axes.
  std::map<Ints, std::vector<uint32_t>> by_big;
  std::vector<std::string> allowed;
  for (uint32_t mask : sets) {
    Ints big, all;
    for (int64_t d = 0; d < rank; ++d) {
      if (!(mask & (1u << d))) continue;
      all.push_back(d);
      if (in[d] != 1) big.push_back(d);
    }
    by_big[big].push_back(mask);
    allowed.push_back(absl::StrCat("{", absl::StrJoin(all, ","), "} = ", mask));
  }
  if (sets.empty() || by_big.size() > 8) {
    return absl::UnimplementedError(
        node.Prefix() +
        absl::StrCat("axes arrive at run time and the static shapes allow ", sets.size(),
                     " axis sets (Kiln compiles one reduction per set, at most 8)"));
  }
  const std::string& n = node.name;
  // mask = sum over the given axes of 2^axis (normalized).
  AttrMap cast_i64, cast_f32;
  cast_i64.Set("to", static_cast<int64_t>(DTypeToOnnx(DType::kInt64)));
  cast_f32.Set("to", static_cast<int64_t>(DTypeToOnnx(DType::kFloat32)));
  KILN_ASSIGN_OR_RETURN(Value * axes,
                        ctx.EmitValue(OpKind::kCast, n + "/axes", {node.input(1)}, cast_i64));
  Value* zero = ctx.ConstScalar(n + "/zero", DType::kInt64, 0);
  Value* rank_v = ctx.ConstScalar(n + "/rank", DType::kInt64, static_cast<double>(rank));
  KILN_ASSIGN_OR_RETURN(Value * negative,
                        ctx.EmitValue(OpKind::kLess, n + "/negative", {axes, zero}));
  KILN_ASSIGN_OR_RETURN(Value * shifted,
                        ctx.EmitValue(OpKind::kAdd, n + "/shifted", {axes, rank_v}));
  KILN_ASSIGN_OR_RETURN(
      Value * norm, ctx.EmitValue(OpKind::kWhere, n + "/normalized", {negative, shifted, axes}));
  // An axis outside [0, rank) after normalizing counts as bit `rank`, which no allowed set has.
  KILN_ASSIGN_OR_RETURN(Value * low, ctx.EmitValue(OpKind::kLess, n + "/below", {norm, zero}));
  KILN_ASSIGN_OR_RETURN(Value * high,
                        ctx.EmitValue(OpKind::kGreaterOrEqual, n + "/above", {norm, rank_v}));
  KILN_ASSIGN_OR_RETURN(Value * outside, ctx.EmitValue(OpKind::kOr, n + "/outside", {low, high}));
  KILN_ASSIGN_OR_RETURN(norm,
                        ctx.EmitValue(OpKind::kWhere, n + "/in_range", {outside, rank_v, norm}));
  KILN_ASSIGN_OR_RETURN(Value * normf,
                        ctx.EmitValue(OpKind::kCast, n + "/normalized_f32", {norm}, cast_f32));
  KILN_ASSIGN_OR_RETURN(Value * bits,
                        ctx.EmitValue(OpKind::kPow, n + "/bits",
                                      {ctx.ConstScalar(n + "/two", DType::kFloat32, 2), normf}));
  KILN_ASSIGN_OR_RETURN(bits, ctx.EmitValue(OpKind::kCast, n + "/bits_i64", {bits}, cast_i64));
  AttrMap sum;
  sum.Set("axes", Ints{0});
  sum.Set("keepdims", int64_t{0});
  KILN_ASSIGN_OR_RETURN(Value * mask, ctx.EmitValue(OpKind::kReduceSum, n + "/mask", {bits}, sum));
  Value* result = nullptr;
  Value* known = nullptr;  // the mask is one of `sets`
  int k = 0;
  for (const auto& [big, masks] : by_big) {
    AttrMap a;
    Ints axes_k = big;
    if (axes_k.empty()) {  // only size-1 dims reduced: the values are x's, reshaped
      for (int64_t d = 0; d < rank; ++d) {
        if (masks[0] & (1u << d)) axes_k.push_back(d);
      }
    }
    a.Set("axes", axes_k);
    a.Set("keepdims", int64_t{keep ? 1 : 0});
    const std::string kn = absl::StrCat(n, "/axes_set", k++);
    KILN_ASSIGN_OR_RETURN(Value * reduced, ctx.EmitValue(node.op, kn, {x}, a));
    if (reduced->type().shape != out.shape) {
      KILN_ASSIGN_OR_RETURN(reduced, ctx.EmitReshape(kn + "/shape", reduced, out.shape));
    }
    Value* hit = nullptr;
    for (uint32_t m : masks) {
      KILN_ASSIGN_OR_RETURN(
          Value * eq,
          ctx.EmitValue(OpKind::kEqual, absl::StrCat(kn, "/is", m),
                        {mask, ctx.ConstScalar(absl::StrCat(kn, "/m", m), DType::kInt64, m)}));
      if (hit != nullptr) {
        KILN_ASSIGN_OR_RETURN(eq,
                              ctx.EmitValue(OpKind::kOr, absl::StrCat(kn, "/or", m), {hit, eq}));
      }
      hit = eq;
    }
    if (result == nullptr) {
      result = reduced;
    } else {
      KILN_ASSIGN_OR_RETURN(result,
                            ctx.EmitValue(OpKind::kWhere, kn + "/select", {hit, reduced, result}));
    }
    if (known != nullptr) {
      KILN_ASSIGN_OR_RETURN(hit, ctx.EmitValue(OpKind::kOr, kn + "/known", {known, hit}));
    }
    known = hit;
  }
  // The check's value: the given axes' bit mask, or the first allowed one when they fit.
  KILN_ASSIGN_OR_RETURN(
      Value * shown,
      ctx.EmitValue(OpKind::kWhere, n + "/shown",
                    {known, ctx.ConstScalar(n + "/first", DType::kInt64, sets[0]), mask}));
  AttrMap check;
  check.Set("expected", Ints{static_cast<int64_t>(sets[0])});
  check.Set("what", node.Prefix() + absl::StrCat("the axes given at run time, as a bit mask (the "
                                                 "sum of 2^axis; ",
                                                 1u << rank,
                                                 " for an axis "
                                                 "out of range), must be one of the sets the "
                                                 "static shapes allow (",
                                                 absl::StrJoin(allowed, ", "), ")"));
  return Single(ctx.Emit(OpKind::kRuntimeCheck, n, {result, shown}, check));
}

absl::StatusOr<BuiltOutputs> BuildReduce(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  int64_t rank = x->type().rank();
  KILN_ASSIGN_OR_RETURN(const graph::ReduceAttrs attrs,
                        graph::ReduceAttrs::Parse(node.attrs, node.Prefix()));
  bool keep = attrs.keepdims;
  bool noop = attrs.noop_with_empty_axes;
  Ints axes = attrs.axes;
  if (node.input(1) != nullptr) {
    KILN_ASSIGN_OR_RETURN(std::optional<Ints> c, MaybeConstInts(ctx, node, 1));
    if (c) {
      axes = *c;
    } else {
      // An empty axes tensor is known to be empty whatever arrives.
      if (node.input(1)->type().NumElements() != 0) return BuildRuntimeAxesReduce(ctx, node, keep);
      axes.clear();
    }
  }
  if (axes.empty()) {
    if (noop) return Single(ctx.Emit(OpKind::kIdentity, node.name, {x}, {}));
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  for (int64_t& a : axes) {
    KILN_ASSIGN_OR_RETURN(a, NormalizeAxis(node, a, rank));
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  AttrMap a;
  a.Set("axes", axes);
  a.Set("keepdims", int64_t{keep ? 1 : 0});
  return Single(ctx.Emit(node.op, node.name, {x}, a));
}

absl::StatusOr<BuiltOutputs> BuildSplit(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  int64_t n = node.proto->output_size();
  KILN_ASSIGN_OR_RETURN(const graph::SplitAttrs attrs,
                        graph::SplitAttrs::Parse(node.attrs, node.Prefix()));
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, attrs.axis, x->type().rank()));
  Ints split = attrs.split;
  if (ctx.opset() >= 13 && node.input(1) != nullptr) {
    KILN_ASSIGN_OR_RETURN(std::optional<Ints> c, MaybeConstInts(ctx, node, 1));
    if (c) {
      split = *c;
    } else {
      split.clear();
      for (int i = 0; i < n; ++i) {
        KILN_ASSIGN_OR_RETURN(TensorType t, OutputType(ctx, node, i, "split"));
        split.push_back(t.shape[axis]);
      }
    }
  }
  int64_t dim = x->type().shape[axis];
  if (split.empty()) {
    if (n == 0 || dim % n != 0) {
      return absl::InvalidArgumentError(node.Prefix() +
                                        absl::StrCat("cannot split ", dim, " into ", n, " parts"));
    }
    split.assign(n, dim / n);
  }
  if (static_cast<int64_t>(split.size()) != n) {
    return absl::InvalidArgumentError(node.Prefix() + "split has the wrong number of sizes");
  }
  BuiltOutputs outs;
  int64_t offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::string name = absl::StrCat(node.name, "/", i);
    KILN_ASSIGN_OR_RETURN(
        Node * s, ctx.Emit(OpKind::kSlice, name,
                           {x, ctx.ConstI64(name + "/starts", {offset}),
                            ctx.ConstI64(name + "/ends", {offset + split[i]}),
                            ctx.ConstI64(name + "/axes", {axis}), ctx.ConstI64(name + "/steps", {1})},
                           {}));
    outs.push_back(s->output(0));
    offset += split[i];
  }
  if (offset != dim) {
    return absl::InvalidArgumentError(node.Prefix() + "split sizes do not sum to the axis size");
  }
  return outs;
}

/// Filled results up to this size become constants at import; larger ones are an Expand of
/// the scalar computed at run time (a folded 2^40-element constant would exhaust memory).
constexpr int64_t kMaxFilledConstantBytes = int64_t{64} << 20;

// A tensor of the static `type` whose every element is element 0 of `value` (zeros when null).
std::shared_ptr<Tensor> FillTensor(const TensorType& type,
                                   const std::shared_ptr<const Tensor>& value) {
  auto t = Tensor::Zeros(type);
  if (value != nullptr && value->type.NumElements() > 0) {
    size_t size = DTypeSize(type.dtype);
    for (int64_t i = 0; i < type.NumElements(); ++i) {
      std::memcpy(t->bytes.data() + i * size, value->bytes.data(), size);
    }
  }
  return t;
}

// A value of `type` whose every element is element 0 of `value` (f32 0 when null): a constant,
// or for large types an Expand of it. Errors: kInvalidArgument (CheckTensorSize) for a negative
// dim or a size past int64 or the import's max_tensor_bytes, before anything is allocated.
absl::StatusOr<Value*> Filled(ImportContext& ctx, const OnnxNode& node, const TensorType& type,
                              const std::shared_ptr<const Tensor>& value) {
  const std::string& name = node.proto->output(0);
  KILN_RETURN_IF_ERROR(CheckTensorSize(type, ctx.max_tensor_bytes(), node.Prefix() + "output 0"));
  const int64_t bytes = type.NumBytes();
  auto fill = [&](const TensorType& t_type) { return FillTensor(t_type, value); };
  if (bytes <= kMaxFilledConstantBytes) return ctx.graph().AddConstant(name, fill(type));
  Value* scalar = ctx.graph().AddConstant(name + "/value", fill(TensorType{type.dtype, {}}));
  return ctx.EmitValue(OpKind::kExpand, name, {scalar, ctx.ConstI64(name + "/shape", type.shape)});
}

absl::StatusOr<BuiltOutputs> BuildConstantOfShape(ImportContext& ctx, const OnnxNode& node) {
  KILN_ASSIGN_OR_RETURN(const graph::ConstantOfShapeAttrs attrs,
                        graph::ConstantOfShapeAttrs::Parse(node.attrs, node.Prefix()));
  const std::shared_ptr<const Tensor>& value = attrs.value;
  TensorType type{value ? value->type.dtype : DType::kFloat32, {}};
  KILN_ASSIGN_OR_RETURN(std::optional<Ints> c, MaybeConstInts(ctx, node, 0));
  if (!c && node.input(0)->sym_value()) {
    // A shape computed from symbolic dims: an Expand of the scalar to it (its shape rule
    // reads the shape value).
    const std::string& name = node.proto->output(0);
    Value* v = ctx.graph().AddConstant(name + "/value",
                                       FillTensor(TensorType{type.dtype, {}}, value));
    return Single(ctx.Emit(OpKind::kExpand, name, {v, node.input(0)}, {}));
  }
  if (c) {
    type.shape = *c;
  } else {
    KILN_ASSIGN_OR_RETURN(TensorType t, OutputType(ctx, node, 0, "the shape"));
    type.shape = t.shape;
  }
  KILN_ASSIGN_OR_RETURN(Value * filled, Filled(ctx, node, type, value));
  return BuiltOutputs{filled};
}

// Replaces input `i` with an i64 constant: its constant value, or `derive(output type)`; an
// input whose value shape arithmetic knows (Value::sym_value) stays, for the shape rule.
absl::StatusOr<Value*> ShapeOperand(ImportContext& ctx, const OnnxNode& node, int i,
                                    const std::string& what,
                                    const std::function<Ints(const TensorType&)>& derive) {
  KILN_ASSIGN_OR_RETURN(std::optional<Ints> c, MaybeConstInts(ctx, node, i));
  // A shape computed from symbolic dims (Value::sym_value): the node's shape rule reads it.
  if (!c && node.input(i) != nullptr && node.input(i)->sym_value()) return node.input(i);
  if (!c) {
    KILN_ASSIGN_OR_RETURN(TensorType t, OutputType(ctx, node, 0, what));
    c = derive(t);
  }
  return ctx.ConstI64(absl::StrCat(node.name, "/", what), *c);
}

}  // namespace

absl::StatusOr<BuiltOutputs> BuildReshapeToKnownType(ImportContext& ctx, const OnnxNode& node) {
  KILN_ASSIGN_OR_RETURN(TensorType t, OutputType(ctx, node, 0, "the shape-determining input"));
  AttrMap a;
  a.Set("allowzero", int64_t{1});
  return Single(ctx.Emit(OpKind::kReshape, node.name,
                         {node.input(0), ctx.ConstI64(node.name + "/shape", t.shape)}, a));
}

absl::StatusOr<BuiltOutputs> BuildTensorOp(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  int64_t rank = x != nullptr ? x->type().rank() : 0;
  AttrMap a;
  switch (node.op) {
    case OpKind::kCastLike: {
      a.Set("to", static_cast<int64_t>(DTypeToOnnx(node.input(1)->type().dtype)));
      return Single(ctx.Emit(OpKind::kCast, node.name, {x}, a));
    }
    case OpKind::kMod: {
      KILN_ASSIGN_OR_RETURN(const graph::ModAttrs m,
                            graph::ModAttrs::Parse(node.attrs, node.Prefix()));
      a.Set("fmod", int64_t{m.fmod});
      if (IsFloat(x->type().dtype) && !m.fmod) {
        return absl::InvalidArgumentError(node.Prefix() + "fmod must be 1 for float inputs");
      }
      return Single(ctx.Emit(node.op, node.name, node.inputs, a));
    }
    case OpKind::kBitShift: {
      KILN_ASSIGN_OR_RETURN(const graph::BitShiftAttrs b,
                            graph::BitShiftAttrs::Parse(node.attrs, node.Prefix()));
      a.Set("direction", std::string(graph::AttrEnumName(b.direction)));
      return Single(ctx.Emit(node.op, node.name, node.inputs, a));
    }
    case OpKind::kIsInf: {
      KILN_ASSIGN_OR_RETURN(const graph::IsInfAttrs inf,
                            graph::IsInfAttrs::Parse(node.attrs, node.Prefix()));
      a.Set("detect_negative", int64_t{inf.detect_negative});
      a.Set("detect_positive", int64_t{inf.detect_positive});
      return Single(ctx.Emit(node.op, node.name, node.inputs, a));
    }
    case OpKind::kReduceSum: case OpKind::kReduceMean: case OpKind::kReduceMax:
    case OpKind::kReduceMin: case OpKind::kReduceProd: case OpKind::kReduceL1:
    case OpKind::kReduceL2: case OpKind::kReduceLogSum: case OpKind::kReduceLogSumExp:
    case OpKind::kReduceSumSquare:
      return BuildReduce(ctx, node);
    case OpKind::kArgMax: case OpKind::kArgMin: {
      KILN_ASSIGN_OR_RETURN(const graph::ArgMaxAttrs arg,
                            graph::ArgMaxAttrs::Parse(node.attrs, node.Prefix()));
      KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, arg.axis, rank));
      a.Set("axis", axis);
      a.Set("keepdims", int64_t{arg.keepdims});
      a.Set("select_last_index", int64_t{arg.select_last_index});
      return Single(ctx.Emit(node.op, node.name, {x}, a));
    }
    case OpKind::kSize: {
      auto t = Tensor::Zeros(TensorType{DType::kInt64, {}});
      *t->mutable_data<int64_t>() = x->type().NumElements();
      return BuiltOutputs{ctx.graph().AddConstant(node.proto->output(0), std::move(t))};
    }
    case OpKind::kConstantOfShape:
      return BuildConstantOfShape(ctx, node);
    case OpKind::kRange: {
      bool all_const = IsConst(node.input(0)) && IsConst(node.input(1)) && IsConst(node.input(2));
      // Bounds known from symbolic shapes: the shape rule counts the elements.
      bool from_shapes = (node.input(0)->sym_value() || node.input(1)->sym_value()) &&
                         IsConst(node.input(2));
      if (!all_const && !from_shapes) {
        KILN_ASSIGN_OR_RETURN(TensorType t, OutputType(ctx, node, 0, "start/limit/delta"));
        if (t.rank() != 1) return absl::InvalidArgumentError(node.Prefix() + "output not 1-D");
        a.Set("count", t.shape[0]);
      }
      return Single(ctx.Emit(node.op, node.name, node.inputs, a));
    }
    case OpKind::kEyeLike: {
      KILN_ASSIGN_OR_RETURN(const graph::EyeLikeAttrs eye,
                            graph::EyeLikeAttrs::Parse(node.attrs, node.Prefix()));
      a.Set("k", eye.k);
      if (eye.dtype) a.Set("dtype", *eye.dtype);
      return Single(ctx.Emit(node.op, node.name, {x}, a));
    }
    case OpKind::kExpand: {
      KILN_ASSIGN_OR_RETURN(Value * shape, ShapeOperand(ctx, node, 1, "shape",
                                                         [](const TensorType& t) {
                                                           return t.shape;
                                                         }));
      return Single(ctx.Emit(node.op, node.name, {x, shape}, a));
    }
    case OpKind::kTile: {
      const Ints& in = x->type().shape;
      KILN_ASSIGN_OR_RETURN(Value * reps,
                            ShapeOperand(ctx, node, 1, "repeats", [&](const TensorType& t) {
                              Ints r;
                              for (size_t d = 0; d < in.size(); ++d) {
                                r.push_back(in[d] == 0 ? 1 : t.shape[d] / in[d]);
                              }
                              return r;
                            }));
      return Single(ctx.Emit(node.op, node.name, {x, reps}, a));
    }
    case OpKind::kSplit:
      return BuildSplit(ctx, node);
    case OpKind::kTrilu: {
      KILN_ASSIGN_OR_RETURN(const graph::TriluAttrs t,
                            graph::TriluAttrs::Parse(node.attrs, node.Prefix()));
      a.Set("upper", int64_t{t.upper});
      return Single(ctx.Emit(node.op, node.name, node.inputs, a));
    }
    case OpKind::kGatherElements: {
      KILN_ASSIGN_OR_RETURN(const graph::Axis0Attrs g,
                            graph::Axis0Attrs::Parse(node.attrs, node.Prefix()));
      KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, g.axis, rank));
      a.Set("axis", axis);
      return Single(ctx.Emit(node.op, node.name, node.inputs, a));
    }
    case OpKind::kScatterElements:
    case OpKind::kScatterND: {
      KILN_ASSIGN_OR_RETURN(const graph::ScatterElementsAttrs sc,
                            graph::ScatterElementsAttrs::Parse(node.attrs, node.Prefix()));
      if (node.op == OpKind::kScatterElements) {
        KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, sc.axis, rank));
        a.Set("axis", axis);
      }
      a.Set("reduction", std::string(graph::AttrEnumName(sc.reduction)));
      return Single(ctx.Emit(node.op, node.name, node.inputs, a));
    }
    case OpKind::kGatherND: {
      KILN_ASSIGN_OR_RETURN(const graph::GatherNDAttrs g,
                            graph::GatherNDAttrs::Parse(node.attrs, node.Prefix()));
      a.Set("batch_dims", g.batch_dims);
      return Single(ctx.Emit(node.op, node.name, node.inputs, a));
    }
    case OpKind::kDepthToSpace:
    case OpKind::kSpaceToDepth: {
      KILN_ASSIGN_OR_RETURN(const graph::DepthToSpaceAttrs d,
                            graph::DepthToSpaceAttrs::Parse(node.attrs, node.Prefix()));
      a.Set("blocksize", d.blocksize);
      if (node.op == OpKind::kDepthToSpace) a.Set("mode", std::string(graph::AttrEnumName(d.mode)));
      return Single(ctx.Emit(node.op, node.name, {x}, a));
    }
    case OpKind::kOneHot: {
      KILN_ASSIGN_OR_RETURN(const graph::AxisAttrs oh,
                            graph::AxisAttrs::Parse(node.attrs, node.Prefix()));
      KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, oh.axis, rank + 1));
      a.Set("axis", axis);
      Value* depth = node.input(1);
      if (!IsConst(depth)) {
        KILN_ASSIGN_OR_RETURN(TensorType t, OutputType(ctx, node, 0, "depth"));
        depth = ctx.ConstI64(node.name + "/depth", {t.shape[axis]});
      }
      return Single(ctx.Emit(node.op, node.name, {x, depth, node.input(2)}, a));
    }
    case OpKind::kCumSum: {
      KILN_ASSIGN_OR_RETURN(const graph::CumSumAttrs c,
                            graph::CumSumAttrs::Parse(node.attrs, node.Prefix()));
      a.Set("exclusive", int64_t{c.exclusive});
      a.Set("reverse", int64_t{c.reverse});
      return Single(ctx.Emit(node.op, node.name, node.inputs, a));
    }
    case OpKind::kTopK: {
      KILN_ASSIGN_OR_RETURN(const graph::TopKAttrs topk,
                            graph::TopKAttrs::Parse(node.attrs, node.Prefix()));
      KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, topk.axis, rank));
      a.Set("axis", axis);
      a.Set("largest", int64_t{topk.largest});
      a.Set("sorted", int64_t{topk.sorted});
      KILN_ASSIGN_OR_RETURN(Value * k, ShapeOperand(ctx, node, 1, "k", [&](const TensorType& t) {
                              return Ints{t.shape[axis]};
                            }));
      KILN_ASSIGN_OR_RETURN(Node * n, ctx.Emit(node.op, node.name, {x, k}, a, 2));
      return BuiltOutputs{n->output(0), n->output(1)};
    }
    case OpKind::kScatter: case OpKind::kMaxUnpool: case OpKind::kShrink:
    case OpKind::kReverseSequence:
      return BuildComposite(ctx, node);
    case OpKind::kHannWindow: case OpKind::kHammingWindow: case OpKind::kBlackmanWindow:
    case OpKind::kDFT: case OpKind::kSTFT: case OpKind::kMelWeightMatrix:
      return BuildSignalOp(ctx, node);
    case OpKind::kTfIdfVectorizer:
      return BuildTfIdfVectorizer(ctx, node);
    case OpKind::kNonZero: case OpKind::kCompress: case OpKind::kUnique:
    case OpKind::kNonMaxSuppression:
      return BuildDataDependentOp(ctx, node);
    case OpKind::kEinsum: {
      KILN_ASSIGN_OR_RETURN(const graph::EinsumAttrs e,
                            graph::EinsumAttrs::Parse(node.attrs, node.Prefix()));
      a.Set("equation", e.equation);
      return Single(ctx.Emit(node.op, node.name, node.inputs, a));
    }
    default:
      return Single(ctx.Emit(node.op, node.name, node.inputs, node.attrs));
  }
}

}  // namespace kiln::importer
