// Type and shape rules of the tensor, reduction and logic ops (their section of ops.def).
// Rules read the canonical forms the ONNX importer produces: reductions carry sorted,
// non-negative "axes"; Range carries its element count "count" when its inputs are not
// constant; shape-like operands (Expand's shape, Tile's repeats, TopK's k, OneHot's depth) are
// constant inputs.
#include "compiler_core/ir/graph/tensor_op_rules.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

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
using rules::BroadcastDims;
using rules::Dims;
using rules::DimsStr;
using rules::In;
using rules::Invalid;
using rules::Mul;
using rules::Prefix;
using rules::ShapeStr;

absl::StatusOr<int64_t> Axis(const Node& node, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) {
    return Invalid(node, absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

// The integer values of constant input `i`.
absl::StatusOr<Shape> ConstInts(const Node& node, int i) {
  const Value* v = node.input(i);
  if (v == nullptr) return Invalid(node, absl::StrCat("input ", i, " is missing"));
  if (!v->is_constant()) {
    return absl::UnimplementedError(Prefix(node) +
                                    absl::StrCat("input ", i, " must be a constant"));
  }
  if (IsFloat(v->type().dtype)) {
    return Invalid(node, absl::StrCat("input ", i, " must be an integer tensor"));
  }
  Shape out;
  for (int64_t k = 0; k < v->type().NumElements(); ++k) {
    out.push_back(v->constant()->GetAsInt64(k));
  }
  return out;
}

// Integer input `i` as dims: its sym_value (shapes as values), else its constant values.
absl::StatusOr<Dims> ConstDims(const Node& node, int i) {
  if (const Dims* d = rules::ShapeValue(node.input(i))) return *d;
  KILN_ASSIGN_OR_RETURN(Shape ints, ConstInts(node, i));
  return Dims(ints.begin(), ints.end());
}

absl::StatusOr<Dims> Broadcast(const Node& node, int first, int last) {
  Dims shape;
  for (int i = first; i <= last; ++i) {
    KILN_ASSIGN_OR_RETURN(const TensorType* t, In(node, i));
    std::optional<Dims> b = BroadcastDims(shape, t->dims());
    if (!b) {
      return Invalid(node, absl::StrCat("input shapes ", DimsStr(shape), " and ",
                                        DimsStr(t->dims()), " are not broadcastable"));
    }
    shape = *std::move(b);
  }
  return shape;
}

absl::Status SameDTypes(const Node& node, int first, int last) {
  KILN_ASSIGN_OR_RETURN(const TensorType* a, In(node, first));
  for (int i = first + 1; i <= last; ++i) {
    KILN_ASSIGN_OR_RETURN(const TensorType* t, In(node, i));
    if (t->dtype != a->dtype) {
      return Invalid(node, absl::StrCat("input ", i, " has dtype ", DTypeName(t->dtype),
                                        ", expected ", DTypeName(a->dtype)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Types> CompareRule(const Node& node, bool bool_inputs) {
  KILN_RETURN_IF_ERROR(SameDTypes(node, 0, node.num_inputs() - 1));
  if (bool_inputs && node.input(0)->type().dtype != DType::kBool) {
    return Invalid(node, "inputs must be bool");
  }
  KILN_ASSIGN_OR_RETURN(Dims s, Broadcast(node, 0, node.num_inputs() - 1));
  return Types{TensorType::WithDims(DType::kBool, s)};
}

absl::StatusOr<Types> ArithRule(const Node& node) {
  KILN_RETURN_IF_ERROR(SameDTypes(node, 0, node.num_inputs() - 1));
  KILN_ASSIGN_OR_RETURN(Dims s, Broadcast(node, 0, node.num_inputs() - 1));
  return Types{TensorType::WithDims(node.input(0)->type().dtype, s)};
}

absl::StatusOr<Types> WhereRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* c, In(node, 0));
  if (c->dtype != DType::kBool) return Invalid(node, "input 0 must be bool");
  KILN_RETURN_IF_ERROR(SameDTypes(node, 1, 2));
  KILN_ASSIGN_OR_RETURN(Dims s, Broadcast(node, 0, 2));
  return Types{TensorType::WithDims(node.input(1)->type().dtype, s)};
}

absl::StatusOr<Types> ReduceRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  if (node.input(1) != nullptr) return Invalid(node, "axes must be canonicalized to an attribute");
  const ReduceAttrs attrs = ReduceAttrs::Of(node);
  const bool keep = attrs.keepdims;
  const Shape& axes = attrs.axes;
  std::vector<bool> reduced(x->shape.size(), !node.attrs().Has("axes"));
  for (int64_t a : axes) {
    KILN_ASSIGN_OR_RETURN(int64_t n, Axis(node, a, x->rank()));
    reduced[n] = true;
  }
  const Dims xd = x->dims();
  Dims out;
  for (size_t d = 0; d < xd.size(); ++d) {
    if (!reduced[d]) {
      out.push_back(xd[d]);
    } else if (keep) {
      out.push_back(1);
    }
  }
  return Types{TensorType::WithDims(x->dtype, out)};
}

absl::StatusOr<Types> ArgRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  if (x->rank() == 0) return Invalid(node, "input must have rank >= 1");
  const ArgMaxAttrs a = ArgMaxAttrs::Of(node);
  KILN_ASSIGN_OR_RETURN(int64_t axis, Axis(node, a.axis, x->rank()));
  Shape out = x->shape;
  if (a.keepdims) {
    out[axis] = 1;
  } else {
    out.erase(out.begin() + axis);
  }
  return Types{TensorType{DType::kInt64, out}};
}

absl::StatusOr<Types> RangeRule(const Node& node) {
  KILN_RETURN_IF_ERROR(SameDTypes(node, 0, 2));
  for (int i = 0; i < 3; ++i) {
    if (node.input(i)->type().NumElements() != 1) {
      return Invalid(node, absl::StrCat("input ", i, " must be a scalar"));
    }
  }
  DType dt = node.input(0)->type().dtype;
  int64_t count = RangeAttrs::Of(node).count;
  if (count < 0 && !IsFloat(dt) && node.input(2)->is_constant() &&
      (rules::ShapeValue(node.input(0)) || rules::ShapeValue(node.input(1)))) {
    // Integer bounds known from shapes: max(ceil((limit - start) / delta), 0) elements.
    KILN_ASSIGN_OR_RETURN(Dims start, ConstDims(node, 0));
    KILN_ASSIGN_OR_RETURN(Dims limit, ConstDims(node, 1));
    const int64_t delta = node.input(2)->constant()->GetAsInt64(0);
    if (delta == 0) return Invalid(node, "delta must not be 0");
    sym::Expr n = sym::Max(sym::CeilDiv(limit[0] - start[0], delta), 0);
    if (n.is_invalid()) return Invalid(node, "the element count overflows int64");
    return Types{TensorType::WithDims(dt, {n})};
  }
  if (count < 0) {
    for (int i = 0; i < 3; ++i) {
      if (!node.input(i)->is_constant()) {
        return absl::UnimplementedError(
            Prefix(node) + "the element count is unknown: inputs are not constant");
      }
    }
    double start = node.input(0)->constant()->GetAsDouble(0);
    double limit = node.input(1)->constant()->GetAsDouble(0);
    double delta = node.input(2)->constant()->GetAsDouble(0);
    if (delta == 0) return Invalid(node, "delta must not be 0");
    std::optional<int64_t> n = CheckedToInt64(std::ceil((limit - start) / delta));
    if (!n) {
      return Invalid(node, absl::StrCat("element count ceil((", limit, " - ", start, ") / ", delta,
                                        ") is not an int64"));
    }
    count = std::max<int64_t>(0, *n);
  }
  return Types{TensorType{dt, {count}}};
}

absl::StatusOr<Types> ExpandRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_ASSIGN_OR_RETURN(Dims shape, ConstDims(node, 1));
  std::optional<Dims> b = BroadcastDims(x->dims(), shape);
  if (!b) {
    return Invalid(node, absl::StrCat("cannot expand ", x->ToString(), " to ", DimsStr(shape)));
  }
  return Types{TensorType::WithDims(x->dtype, *b)};
}

absl::StatusOr<Types> TileRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_ASSIGN_OR_RETURN(Shape reps, ConstInts(node, 1));
  if (static_cast<int64_t>(reps.size()) != x->rank()) {
    return Invalid(node, absl::StrCat("repeats has ", reps.size(), " values, expected ",
                                      x->rank()));
  }
  Shape out = x->shape;
  for (size_t d = 0; d < out.size(); ++d) {
    if (reps[d] < 0) return Invalid(node, "repeats must be >= 0");
    KILN_ASSIGN_OR_RETURN(out[d], Mul(node, out[d], reps[d], absl::StrCat("tiled dim ", d)));
  }
  return Types{TensorType{x->dtype, out}};
}

absl::StatusOr<Types> SplitRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  const SplitAttrs a = SplitAttrs::Of(node);
  KILN_ASSIGN_OR_RETURN(int64_t axis, Axis(node, a.axis, x->rank()));
  Shape split = a.split;
  size_t n = node.outputs().size();
  if (split.empty()) {
    int64_t dim = x->shape[axis], chunk = (dim + n - 1) / n;
    for (size_t i = 0; i < n; ++i) split.push_back(std::min(chunk, dim - chunk * int64_t(i)));
  }
  if (split.size() != n) return Invalid(node, "split sizes do not match the outputs");
  Types out;
  int64_t total = 0;
  for (int64_t s : split) {
    if (s < 0) return Invalid(node, absl::StrCat("split size ", s, " is negative"));
    TensorType t = *x;
    t.shape[axis] = s;
    KILN_ASSIGN_OR_RETURN(total, Add(node, total, s, "the sum of the split sizes"));
    out.push_back(t);
  }
  if (total != x->shape[axis]) return Invalid(node, "split sizes do not sum to the axis size");
  return out;
}

absl::StatusOr<Types> GatherElementsRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_ASSIGN_OR_RETURN(const TensorType* idx, In(node, 1));
  if (idx->rank() != x->rank() || x->rank() == 0) {
    return Invalid(node, "indices must have the data's rank (>= 1)");
  }
  KILN_RETURN_IF_ERROR(Axis(node, Axis0Attrs::Of(node).axis, x->rank()).status());
  return Types{TensorType{x->dtype, idx->shape}};
}

absl::StatusOr<Types> GatherNDRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_ASSIGN_OR_RETURN(const TensorType* idx, In(node, 1));
  const int64_t b = GatherNDAttrs::Of(node).batch_dims;
  if (idx->rank() < 1 || b < 0 || b >= std::min(x->rank(), idx->rank())) {
    return Invalid(node, "invalid batch_dims or indices rank");
  }
  int64_t last = idx->shape.back();
  if (last < 1 || b + last > x->rank()) return Invalid(node, "index tuple too long");
  Shape out(idx->shape.begin(), idx->shape.end() - 1);
  out.insert(out.end(), x->shape.begin() + b + last, x->shape.end());
  return Types{TensorType{x->dtype, out}};
}

absl::StatusOr<Types> SpaceDepthRule(const Node& node, bool to_space) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  const int64_t bs = DepthToSpaceAttrs::Of(node).blocksize;
  if (x->rank() != 4 || bs <= 0) return Invalid(node, "expected a rank-4 input and blocksize > 0");
  Shape s = x->shape;
  KILN_ASSIGN_OR_RETURN(int64_t bs2, Mul(node, bs, bs, "blocksize^2"));
  if (to_space) {
    if (s[1] % bs2 != 0) return Invalid(node, "channels not divisible by blocksize^2");
    KILN_ASSIGN_OR_RETURN(int64_t h, Mul(node, s[2], bs, "output height"));
    KILN_ASSIGN_OR_RETURN(int64_t w, Mul(node, s[3], bs, "output width"));
    return Types{TensorType{x->dtype, {s[0], s[1] / bs2, h, w}}};
  }
  if (s[2] % bs != 0 || s[3] % bs != 0) return Invalid(node, "spatial dims not divisible");
  KILN_ASSIGN_OR_RETURN(int64_t c, Mul(node, s[1], bs2, "output channels"));
  return Types{TensorType{x->dtype, {s[0], c, s[2] / bs, s[3] / bs}}};
}

absl::StatusOr<Types> OneHotRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* idx, In(node, 0));
  KILN_ASSIGN_OR_RETURN(const TensorType* values, In(node, 2));
  const Value* dv = node.input(1);
  if (!dv->is_constant()) {
    return absl::UnimplementedError(Prefix(node) + "depth must be a constant");
  }
  if (values->NumElements() != 2) return Invalid(node, "values must have 2 elements");
  std::optional<int64_t> depth_or = CheckedToInt64(dv->constant()->GetAsDouble(0));
  if (!depth_or || *depth_or < 0) {
    return Invalid(node, absl::StrCat("depth ", dv->constant()->GetAsDouble(0),
                                      " is not a non-negative int64"));
  }
  const int64_t depth = *depth_or;
  KILN_ASSIGN_OR_RETURN(int64_t axis, Axis(node, AxisAttrs::Of(node).axis, idx->rank() + 1));
  Shape out = idx->shape;
  out.insert(out.begin() + axis, depth);
  return Types{TensorType{values->dtype, out}};
}

absl::StatusOr<Types> TopKRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_ASSIGN_OR_RETURN(Shape k, ConstInts(node, 1));
  if (k.size() != 1 || x->rank() == 0) return Invalid(node, "k must have one element");
  KILN_ASSIGN_OR_RETURN(int64_t axis, Axis(node, TopKAttrs::Of(node).axis, x->rank()));
  if (k[0] < 0 || k[0] > x->shape[axis]) return Invalid(node, "k is out of range");
  Shape out = x->shape;
  out[axis] = k[0];
  Types types{TensorType{x->dtype, out}};
  if (node.outputs().size() > 1) types.push_back(TensorType{DType::kInt64, out});
  return types;
}

// Det: [*, M, M] float → [*].
absl::StatusOr<Types> DetRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  int64_t r = x->rank();
  if (!IsFloat(x->dtype) || r < 2 || x->shape[r - 1] != x->shape[r - 2]) {
    return Invalid(node,
                   absl::StrCat("input has type ", x->ToString(), ", expected a float [*, M, M]"));
  }
  return Types{TensorType{x->dtype, Shape(x->shape.begin(), x->shape.end() - 2)}};
}

absl::StatusOr<Types> TfIdfVectorizerRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  if ((x->dtype != DType::kInt32 && x->dtype != DType::kInt64) || x->rank() < 1 || x->rank() > 2) {
    return Invalid(node, absl::StrCat("input has type ", x->ToString(),
                                      ", expected i32 or i64 [C] or [B, C]"));
  }
  KILN_ASSIGN_OR_RETURN(const TensorType* pool, In(node, 1));
  KILN_ASSIGN_OR_RETURN(const TensorType* lengths, In(node, 2));
  KILN_ASSIGN_OR_RETURN(const TensorType* indexes, In(node, 3));
  KILN_ASSIGN_OR_RETURN(const TensorType* weights, In(node, 4));
  if (pool->dtype != DType::kInt64 || pool->rank() != 2 ||
      lengths->shape != Shape{pool->shape[0]} || indexes->shape != lengths->shape ||
      weights->rank() != 1 || weights->dtype != DType::kFloat32) {
    return Invalid(
        node, absl::StrCat("tables have types ", pool->ToString(), ", ", lengths->ToString(), ", ",
                           indexes->ToString(), ", ", weights->ToString(),
                           "; expected i64 [J, L], [J], [J] and f32 [O]"));
  }
  Shape out = x->rank() == 2 ? Shape{x->shape[0], weights->shape[0]} : Shape{weights->shape[0]};
  return Types{TensorType{DType::kFloat32, out}};
}

// The static output shape of a data-dependent op (attribute "shape"), of rank `rank`.
absl::StatusOr<Shape> DataDependentShape(const Node& node, int64_t rank) {
  if (!node.attrs().Has("shape")) {
    return Invalid(node,
                   "the output shape depends on the data and the node has no static "
                   "\"shape\"");
  }
  const Shape out = CommonAttrs::Of(node).shape;
  if (static_cast<int64_t>(out.size()) != rank) {
    return Invalid(node, absl::StrCat("static shape ", ShapeStr(out), " is not of rank ", rank));
  }
  for (int64_t d : out) {
    if (d < 0) return Invalid(node, absl::StrCat("static shape ", ShapeStr(out), " is negative"));
  }
  return out;
}

// NonZero: X [d0..dr-1] → i64 [r, K], K <= numel(X).
absl::StatusOr<Types> NonZeroRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  if (x->rank() < 1) return Invalid(node, "a scalar input is not supported");
  KILN_ASSIGN_OR_RETURN(Shape out, DataDependentShape(node, 2));
  if (out[0] != x->rank() || out[1] > x->NumElements()) {
    return Invalid(
        node, absl::StrCat("static shape ", ShapeStr(out), " does not fit input ", x->ToString()));
  }
  return Types{TensorType{DType::kInt64, out}};
}

// Compress: X [.., n, ..], bool condition [c] → [.., K, ..] with K <= min(c, n).
absl::StatusOr<Types> CompressRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_ASSIGN_OR_RETURN(const TensorType* c, In(node, 1));
  KILN_ASSIGN_OR_RETURN(int64_t axis, Axis(node, Axis0Attrs::Of(node).axis, x->rank()));
  if (c->dtype != DType::kBool || c->rank() != 1) {
    return Invalid(node, absl::StrCat("condition has type ", c->ToString(), ", expected bool [c]"));
  }
  KILN_ASSIGN_OR_RETURN(Shape out, DataDependentShape(node, x->rank()));
  for (int64_t d = 0; d < x->rank(); ++d) {
    if (d == axis ? out[d] > std::min(x->shape[d], c->shape[0]) : out[d] != x->shape[d]) {
      return Invalid(node, absl::StrCat("static shape ", ShapeStr(out), " does not fit input ",
                                        x->ToString(), " and condition ", c->ToString()));
    }
  }
  return Types{TensorType{x->dtype, out}};
}

// Unique: X [.., n, ..] → Y [.., U, ..], indices [U], inverse_indices [n], counts [U].
absl::StatusOr<Types> UniqueRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  if (x->rank() < 1) return Invalid(node, "a scalar input is not supported");
  // The importer always sets axis (flattening the input when ONNX gives none).
  KILN_ASSIGN_OR_RETURN(int64_t axis,
                        Axis(node, UniqueAttrs::Of(node).axis.value_or(0), x->rank()));
  KILN_ASSIGN_OR_RETURN(Shape out, DataDependentShape(node, x->rank()));
  for (int64_t d = 0; d < x->rank(); ++d) {
    if (d == axis ? (out[d] > x->shape[d] || (out[d] == 0) != (x->shape[d] == 0))
                  : out[d] != x->shape[d]) {
      return Invalid(node, absl::StrCat("static shape ", ShapeStr(out), " does not fit input ",
                                        x->ToString()));
    }
  }
  const int64_t u = out[axis];
  return Types{TensorType{x->dtype, out}, TensorType{DType::kInt64, {u}},
               TensorType{DType::kInt64, {x->shape[axis]}}, TensorType{DType::kInt64, {u}}};
}

// NonMaxSuppression: boxes [B, N, 4], scores [B, C, N] → i64 [K, 3], K <= B * C * N.
absl::StatusOr<Types> NonMaxSuppressionRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* boxes, In(node, 0));
  KILN_ASSIGN_OR_RETURN(const TensorType* scores, In(node, 1));
  if (boxes->dtype != DType::kFloat32 || scores->dtype != DType::kFloat32 || boxes->rank() != 3 ||
      boxes->shape[2] != 4 || scores->rank() != 3 || scores->shape[0] != boxes->shape[0] ||
      scores->shape[2] != boxes->shape[1]) {
    return Invalid(node, absl::StrCat("boxes ", boxes->ToString(), " and scores ",
                                      scores->ToString(), " are not f32 [B, N, 4] and [B, C, N]"));
  }
  for (int i = 2; i < 5; ++i) {
    const Value* v = node.input(i);
    if (v != nullptr && v->type().NumElements() != 1) {
      return Invalid(node, absl::StrCat("input ", i, " has type ", v->type().ToString(),
                                        "; expected one element"));
    }
  }
  if (node.input(2) != nullptr && node.input(2)->type().dtype != DType::kInt64) {
    return Invalid(node, "max_output_boxes_per_class must be i64");
  }
  KILN_ASSIGN_OR_RETURN(Shape out, DataDependentShape(node, 2));
  if (out[1] != 3 || out[0] > boxes->shape[0] * scores->shape[1] * boxes->shape[1]) {
    return Invalid(node, absl::StrCat("static shape ", ShapeStr(out), " does not fit boxes ",
                                      boxes->ToString(), " and scores ", scores->ToString()));
  }
  return Types{TensorType{DType::kInt64, out}};
}

// RuntimeCheck: x, i64 value [n] or scalar (n values in "expected") → x's type.
absl::StatusOr<Types> RuntimeCheckRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_ASSIGN_OR_RETURN(const TensorType* v, In(node, 1));
  const Shape expected = RuntimeCheckAttrs::Of(node).expected;
  if (v->dtype != DType::kInt64 || v->rank() > 1 ||
      v->NumElements() != static_cast<int64_t>(expected.size())) {
    return Invalid(node, absl::StrCat("value has type ", v->ToString(), " for ", expected.size(),
                                      " expected values; expected i64"));
  }
  return Types{*x};
}

// BoundMask: x, i64 dims [S] → x's type; "axis" a dim of x, "symbol" in [0, S).
absl::StatusOr<Types> BoundMaskRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_ASSIGN_OR_RETURN(const TensorType* dims, In(node, 1));
  // Every attribute but fill and rescale is required: an absent one reads (and prints) as a value
  // the check below rejects, not as the schema's placeholder default.
  const BoundMaskAttrs a = BoundMaskAttrs::Of(node);
  const auto given = [&node](const char* name) { return node.attrs().Has(name); };
  const int64_t axis = given("axis") ? a.axis : -1;
  const int64_t symbol = given("symbol") ? a.symbol : -1;
  if (dims->dtype != DType::kInt64 || dims->rank() != 1) {
    return Invalid(node, absl::StrCat("dims has type ", dims->ToString(), ", expected i64[S]"));
  }
  if (axis < 0 || axis >= x->rank() || symbol < 0 || symbol >= dims->shape[0] || !given("mul") ||
      a.mul < 1 || !given("div") || a.div < 1) {
    return Invalid(node, absl::StrCat("axis ", axis, ", symbol ", symbol,
                                      ", mul and div must "
                                      "name a dim of ",
                                      x->ToString(), ", one of ", dims->shape[0],
                                      " symbols and positive factors"));
  }
  return Types{*x};
}

absl::StatusOr<Types> EinsumRule(const Node& node) {
  std::vector<Shape> shapes;
  for (int i = 0; i < node.num_inputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(const TensorType* t, In(node, i));
    shapes.push_back(t->shape);
  }
  KILN_RETURN_IF_ERROR(SameDTypes(node, 0, node.num_inputs() - 1));
  auto spec = ParseEinsum(EinsumAttrs::Of(node).equation, shapes);
  if (!spec.ok()) return Invalid(node, std::string(spec.status().message()));
  Shape out;
  for (char c : spec->output) out.push_back(spec->size[static_cast<int>(c)]);
  return Types{TensorType{node.input(0)->type().dtype, out}};
}

absl::StatusOr<Types> EyeLikeRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  if (x->rank() != 2) return Invalid(node, "input must have rank 2");
  DType dt = x->dtype;
  if (const std::optional<int64_t> code = EyeLikeAttrs::Of(node).dtype) {
    std::optional<DType> d = DTypeFromOnnx(static_cast<int>(*code));
    if (!d) return absl::UnimplementedError(Prefix(node) + "unsupported dtype");
    dt = *d;
  }
  return Types{TensorType{dt, x->shape}};
}

absl::StatusOr<Types> ConstantOfShapeRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(Dims shape, ConstDims(node, 0));
  auto value = ConstantOfShapeAttrs::Of(node).value;
  return Types{TensorType::WithDims(value ? value->type.dtype : DType::kFloat32, shape)};
}

}  // namespace

std::vector<int64_t> ReductionAxes(const Node& node) {
  if (node.attrs().Has("axes")) return ReduceAttrs::Of(node).axes;
  std::vector<int64_t> all;
  for (int64_t d = 0; d < node.input(0)->type().rank(); ++d) all.push_back(d);
  return all;
}

absl::StatusOr<EinsumSpec> ParseEinsum(const std::string& equation,
                                       const std::vector<std::vector<int64_t>>& shapes) {
  std::string eq;
  for (char c : equation) {
    if (c != ' ') eq += c;
  }
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != shapes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("equation '", equation, "' has ",
                                                   terms.size(), " inputs, got ",
                                                   shapes.size()));
  }
  EinsumSpec spec;
  int64_t ell_rank = 0;
  std::vector<int64_t> ell_size;
  std::map<char, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string& t = terms[i];
    size_t dots = t.find("...");
    int64_t letters = static_cast<int64_t>(t.size()) - (dots == std::string::npos ? 0 : 3);
    int64_t rank = static_cast<int64_t>(shapes[i].size());
    int64_t er = dots == std::string::npos ? 0 : rank - letters;
    if (er < 0 || (dots == std::string::npos && letters != rank)) {
      return absl::InvalidArgumentError(absl::StrCat("term '", t, "' does not match rank ",
                                                     rank));
    }
    if (er > 10) {  // the ellipsis dims are labelled '0'..'9'
      return absl::InvalidArgumentError(absl::StrCat("term '", t, "': its ellipsis covers ", er,
                                                     " dims; at most 10 are supported"));
    }
    ell_rank = std::max(ell_rank, er);
    std::string labels;
    int64_t dim = 0;
    for (size_t p = 0; p < t.size(); ++p) {
      if (p == dots) {
        for (int64_t e = 0; e < er; ++e) labels += static_cast<char>('0' + (10 - er + e));
        dim += er;
        p += 2;
        continue;
      }
      char c = t[p];
      if (!std::isalpha(static_cast<unsigned char>(c))) {
        return absl::InvalidArgumentError(absl::StrCat("bad label '", std::string(1, c), "'"));
      }
      labels += c;
      ++dim;
    }
    for (size_t d = 0; d < labels.size(); ++d) {
      char c = labels[d];
      int64_t n = shapes[i][d];
      int64_t& s = spec.size[static_cast<int>(c)];
      if (s == 0 || s == 1) {
        s = std::max(s, n);
      } else if (n != s && n != 1) {
        return absl::InvalidArgumentError(absl::StrCat("label '", std::string(1, c),
                                                       "' has sizes ", s, " and ", n));
      }
      if (labels.find(c) == d) ++count[c];
    }
    spec.inputs.push_back(labels);
  }
  std::string ell;
  for (int64_t e = 0; e < ell_rank; ++e) ell += static_cast<char>('0' + (10 - ell_rank + e));
  if (arrow == std::string::npos) {
    spec.output = ell;
    for (const auto& [c, n] : count) {
      if (n == 1 && std::isalpha(static_cast<unsigned char>(c))) {
        // Letters used exactly once across all terms (counting repeats within a term once).
        int uses = 0;
        for (const std::string& l : spec.inputs) uses += static_cast<int>(std::count(l.begin(), l.end(), c));
        if (uses == 1) spec.output += c;
      }
    }
  } else {
    std::string rhs = eq.substr(arrow + 2);
    size_t dots = rhs.find("...");
    if (dots != std::string::npos) rhs.replace(dots, 3, ell);
    for (char c : rhs) {
      const bool ellipsis_dim = ell.find(c) != std::string::npos;
      if (!ellipsis_dim && !std::isalpha(static_cast<unsigned char>(c))) {
        return absl::InvalidArgumentError(
            absl::StrCat("bad output label '", std::string(1, c), "' (byte ",
                         static_cast<int>(static_cast<unsigned char>(c)), ")"));
      }
      if (spec.size[static_cast<int>(c)] == 0) {
        bool known = false;
        for (const std::string& l : spec.inputs) known = known || l.find(c) != std::string::npos;
        if (!known) {
          return absl::InvalidArgumentError(absl::StrCat("output label '", std::string(1, c),
                                                         "' is not an input label"));
        }
      }
    }
    spec.output = rhs;
  }
  std::set<char> seen(spec.output.begin(), spec.output.end());
  for (const std::string& l : spec.inputs) {
    for (char c : l) {
      if (seen.insert(c).second) spec.reduced += c;
    }
  }
  return spec;
}

absl::StatusOr<std::vector<TensorType>> InferTensorOpTypes(const Node& node) {
  switch (node.op()) {
    case OpKind::kEqual: case OpKind::kLess: case OpKind::kLessOrEqual: case OpKind::kGreater:
    case OpKind::kGreaterOrEqual:
      return CompareRule(node, false);
    case OpKind::kAnd: case OpKind::kOr: case OpKind::kXor:
      return CompareRule(node, true);
    case OpKind::kNot: {
      KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
      if (x->dtype != DType::kBool) return Invalid(node, "input must be bool");
      return Types{*x};
    }
    case OpKind::kIsNaN: case OpKind::kIsInf: {
      KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
      return Types{TensorType::WithDims(DType::kBool, x->dims())};
    }
    case OpKind::kWhere:
      return WhereRule(node);
    case OpKind::kMod: case OpKind::kBitShift: case OpKind::kMean:
      return ArithRule(node);
    case OpKind::kSign: case OpKind::kFloor: case OpKind::kCeil: case OpKind::kRound:
    case OpKind::kSin: case OpKind::kCos: case OpKind::kTan: case OpKind::kAsin:
    case OpKind::kAcos: case OpKind::kAtan: case OpKind::kSinh: case OpKind::kCosh:
    case OpKind::kAsinh: case OpKind::kAcosh: case OpKind::kAtanh: case OpKind::kTrilu:
    case OpKind::kCumSum: case OpKind::kScatterElements: case OpKind::kScatterND: {
      KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
      return Types{*x};
    }
    case OpKind::kCastLike: {
      KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
      KILN_ASSIGN_OR_RETURN(const TensorType* like, In(node, 1));
      return Types{TensorType::WithDims(like->dtype, x->dims())};
    }
    case OpKind::kReduceSum: case OpKind::kReduceMean: case OpKind::kReduceMax:
    case OpKind::kReduceMin: case OpKind::kReduceProd: case OpKind::kReduceL1:
    case OpKind::kReduceL2: case OpKind::kReduceLogSum: case OpKind::kReduceLogSumExp:
    case OpKind::kReduceSumSquare:
      return ReduceRule(node);
    case OpKind::kArgMax: case OpKind::kArgMin:
      return ArgRule(node);
    case OpKind::kSize:
      return Types{TensorType{DType::kInt64, {}}};
    case OpKind::kConstantOfShape:
      return ConstantOfShapeRule(node);
    case OpKind::kRange:
      return RangeRule(node);
    case OpKind::kEyeLike:
      return EyeLikeRule(node);
    case OpKind::kExpand:
      return ExpandRule(node);
    case OpKind::kTile:
      return TileRule(node);
    case OpKind::kSplit:
      return SplitRule(node);
    case OpKind::kGatherElements:
      return GatherElementsRule(node);
    case OpKind::kGatherND:
      return GatherNDRule(node);
    case OpKind::kDepthToSpace:
      return SpaceDepthRule(node, true);
    case OpKind::kSpaceToDepth:
      return SpaceDepthRule(node, false);
    case OpKind::kOneHot:
      return OneHotRule(node);
    case OpKind::kTopK:
      return TopKRule(node);
    case OpKind::kEinsum:
      return EinsumRule(node);
    case OpKind::kDet:
      return DetRule(node);
    case OpKind::kTfIdfVectorizer:
      return TfIdfVectorizerRule(node);
    case OpKind::kNonZero:
      return NonZeroRule(node);
    case OpKind::kCompress:
      return CompressRule(node);
    case OpKind::kUnique:
      return UniqueRule(node);
    case OpKind::kNonMaxSuppression:
      return NonMaxSuppressionRule(node);
    case OpKind::kRuntimeCheck:
      return RuntimeCheckRule(node);
    case OpKind::kBoundMask:
      return BoundMaskRule(node);
    default:
      return absl::UnimplementedError(Prefix(node) + "no shape rule");
  }
}

}  // namespace kiln::graph
