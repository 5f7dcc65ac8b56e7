// Type and shape rules of every op in ops.def. Rules read the canonical attribute forms the
// ONNX importer produces (explicit kernel_shape/strides/pads/..., constant shape/axes/pads
// inputs), falling back to ONNX defaults where an attribute is absent.
#include "compiler_core/ir/graph/shape_rules.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/ir/graph/layout_rules.h"
#include "compiler_core/ir/graph/matmul_packing.h"
#include "compiler_core/ir/graph/nn_op_rules.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/ir/graph/shape_rule_util.h"
#include "compiler_core/ir/graph/tensor_op_rules.h"
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

absl::Status ExpectRank(const Node& node, int i, const TensorType& t, int64_t rank) {
  if (t.rank() != rank) {
    return Invalid(node, absl::StrCat("input ", i, " has rank ", t.rank(), ", expected ", rank));
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

absl::StatusOr<int64_t> NormalizeAxis(const Node& node, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) {
    return Invalid(node, absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

// Values of a constant integer input, or `attr_value` (attribute `attr`, decoded by the caller)
// when the input is absent.
absl::StatusOr<std::vector<int64_t>> IntsFromInputOrAttr(const Node& node, int i,
                                                         const std::string& attr,
                                                         const std::vector<int64_t>& attr_value,
                                                         bool* present) {
  const Value* v = node.input(i);
  *present = true;
  if (v == nullptr) {
    *present = node.attrs().Has(attr);
    return attr_value;
  }
  if (!v->is_constant()) {
    return absl::UnimplementedError(
        Prefix(node) + absl::StrCat("input ", i, " must be a constant"));
  }
  if (IsFloat(v->type().dtype) || v->type().rank() > 1) {
    return Invalid(node, absl::StrCat("input ", i, " must be a 1-D integer tensor, got ",
                                      v->type().ToString()));
  }
  std::vector<int64_t> out;
  const Tensor& t = *v->constant();
  for (int64_t k = 0; k < t.type.NumElements(); ++k) out.push_back(t.GetAsInt64(k));
  return out;
}

absl::StatusOr<Types> UnaryRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  return Types{*x};
}

absl::StatusOr<Types> CastRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  const int64_t to = CastAttrs::Of(node).to;
  std::optional<DType> dt = DTypeFromOnnx(static_cast<int>(to));
  if (!dt) {
    return absl::UnimplementedError(Prefix(node) + absl::StrCat("unsupported cast target ", to));
  }
  return Types{TensorType{*dt, x->shape}};
}

absl::StatusOr<Types> ClipRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  for (int i = 1; i < node.num_inputs(); ++i) {
    const Value* b = node.input(i);
    if (b == nullptr) continue;
    if (b->type().NumElements() != 1 || b->type().rank() > 1) {
      return Invalid(node, absl::StrCat("input ", i, " must be a scalar, got ",
                                        b->type().ToString()));
    }
    KILN_RETURN_IF_ERROR(ExpectSameDType(node, i, b->type(), x->dtype));
  }
  return Types{*x};
}

absl::StatusOr<Types> DropoutRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  Types out{*x};
  if (node.outputs().size() > 1) out.push_back(TensorType{DType::kBool, x->shape});
  return out;
}

absl::StatusOr<Types> BroadcastRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* first, In(node, 0));
  Shape shape = first->shape;
  for (int i = 1; i < node.num_inputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(const TensorType* t, In(node, i));
    // Pow's exponent may have a different numeric type (ONNX opset 12+).
    if (node.op() != OpKind::kPow) {
      KILN_RETURN_IF_ERROR(ExpectSameDType(node, i, *t, first->dtype));
    }
    auto b = BroadcastShapes(shape, t->shape);
    if (!b.ok()) {
      return Invalid(node, absl::StrCat("input shapes ", ShapeStr(shape), " and ",
                                        ShapeStr(t->shape), " are not broadcastable"));
    }
    shape = *b;
  }
  return Types{TensorType{first->dtype, shape}};
}

// Spatial attribute `name`, decoded as `v` (with its default filled in); checks its length.
absl::StatusOr<Shape> SpatialAttr(const Node& node, const std::string& name, const Shape& v,
                                  size_t n) {
  if (v.size() != n) {
    return Invalid(node, absl::StrCat("attribute '", name, "' has ", v.size(),
                                      " values, expected ", n));
  }
  return v;
}

// Output spatial sizes of a windowed op (conv, pooling) over x's spatial dims.
absl::StatusOr<Shape> WindowOutput(const Node& node, const SlidingWindowAttrs& a, const Shape& in,
                                   const Shape& kernel, bool ceil_mode) {
  size_t n = in.size();
  if (a.auto_pad != AutoPad::kNotSet) {
    return Invalid(node, "auto_pad must be resolved to explicit pads");
  }
  KILN_ASSIGN_OR_RETURN(Shape strides, SpatialAttr(node, "strides", OrFill(a.strides, n, 1), n));
  KILN_ASSIGN_OR_RETURN(Shape dilations,
                        SpatialAttr(node, "dilations", OrFill(a.dilations, n, 1), n));
  KILN_ASSIGN_OR_RETURN(Shape pads, SpatialAttr(node, "pads", OrFill(a.pads, 2 * n, 0), 2 * n));
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    if (strides[i] <= 0 || dilations[i] <= 0 || kernel[i] <= 0 || pads[i] < 0 ||
        pads[i + n] < 0) {
      return Invalid(node, "kernel_shape, strides and dilations must be positive, pads >= 0");
    }
    const std::string dim = absl::StrCat(" of spatial dim ", i);
    KILN_ASSIGN_OR_RETURN(int64_t span, Mul(node, kernel[i] - 1, dilations[i], "window" + dim));
    KILN_ASSIGN_OR_RETURN(span, Add(node, span, 1, "window" + dim));
    KILN_ASSIGN_OR_RETURN(int64_t padded, Add(node, in[i], pads[i], "padded input" + dim));
    KILN_ASSIGN_OR_RETURN(padded, Add(node, padded, pads[i + n], "padded input" + dim));
    if (padded < span) {
      return Invalid(node, absl::StrCat("window ", span, " exceeds padded input size ", padded,
                                        " in spatial dim ", i));
    }
    const int64_t num = padded - span;
    // ceil(num / stride) without forming num + stride - 1, which a huge stride overflows.
    const int64_t steps = num / strides[i] + (ceil_mode && num % strides[i] != 0 ? 1 : 0);
    out[i] = steps + 1;
  }
  return out;
}

absl::StatusOr<Types> ConvRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_ASSIGN_OR_RETURN(const TensorType* w, In(node, 1));
  if (x->rank() < 3) {
    return Invalid(node, absl::StrCat("input 0 has rank ", x->rank(), ", expected at least 3"));
  }
  KILN_RETURN_IF_ERROR(ExpectRank(node, 1, *w, x->rank()));
  KILN_RETURN_IF_ERROR(ExpectSameDType(node, 1, *w, x->dtype));
  size_t n = x->shape.size() - 2;
  const ConvAttrs a = ConvAttrs::Of(node);
  const int64_t group = a.group;
  int64_t m = w->shape[0];
  if (group <= 0 || CheckedMul(w->shape[1], group) != x->shape[1] || m % group != 0) {
    return Invalid(node, absl::StrCat("input channels ", x->shape[1], " do not match weight ",
                                      w->ToString(), " with group ", group));
  }
  Shape wk(w->shape.begin() + 2, w->shape.end());
  Shape kernel = wk;
  if (node.attrs().Has("kernel_shape")) {
    KILN_ASSIGN_OR_RETURN(kernel, SpatialAttr(node, "kernel_shape", a.kernel_shape, n));
  }
  if (kernel != wk) {
    return Invalid(node, absl::StrCat("kernel_shape ", ShapeStr(kernel),
                                      " does not match weight ", w->ToString()));
  }
  if (const Value* b = node.input(2)) {
    if (b->type().shape != Shape{m}) {
      return Invalid(node, absl::StrCat("input 2 has shape ", ShapeStr(b->type().shape),
                                        ", expected [", m, "]"));
    }
    KILN_RETURN_IF_ERROR(ExpectSameDType(node, 2, b->type(), x->dtype));
  }
  Shape in(x->shape.begin() + 2, x->shape.end());
  KILN_ASSIGN_OR_RETURN(Shape spatial,
                        WindowOutput(node, SlidingWindowAttrs::From(a), in, kernel, false));
  Shape out{x->shape[0], m};
  out.insert(out.end(), spatial.begin(), spatial.end());
  return Types{TensorType{x->dtype, out}};
}

absl::StatusOr<Types> PoolRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  if (x->rank() < 3) {
    return Invalid(node, absl::StrCat("input 0 has rank ", x->rank(), ", expected at least 3"));
  }
  size_t n = x->shape.size() - 2;
  const PoolAttrs a = PoolAttrs::Of(node);
  KILN_ASSIGN_OR_RETURN(Shape kernel, SpatialAttr(node, "kernel_shape", a.kernel_shape, n));
  Shape in(x->shape.begin() + 2, x->shape.end());
  KILN_ASSIGN_OR_RETURN(Shape spatial,
                        WindowOutput(node, SlidingWindowAttrs::From(a), in, kernel, a.ceil_mode));
  Shape out{x->shape[0], x->shape[1]};
  out.insert(out.end(), spatial.begin(), spatial.end());
  Types types{TensorType{x->dtype, out}};
  if (node.op() == OpKind::kMaxPool && node.outputs().size() > 1) {
    types.push_back(TensorType{DType::kInt64, out});
  }
  return types;
}

absl::StatusOr<Types> GlobalPoolRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  if (x->rank() < 3) {
    return Invalid(node, absl::StrCat("input 0 has rank ", x->rank(), ", expected at least 3"));
  }
  Shape out = x->shape;
  for (size_t i = 2; i < out.size(); ++i) out[i] = 1;
  return Types{TensorType{x->dtype, out}};
}

/// Checks a packed B (b_layout="packed<nr>", see matmul_packing.h): shape [ceil(N/nr), K, nr]
/// with N = b_cols. Returns nr, or 0 when B is not packed.
absl::StatusOr<int64_t> CheckPackedB(const Node& node, const TensorType& b) {
  const int64_t nr = PackedBPanelWidth(node);
  if (nr == 0) return 0;
  const int64_t n = PackedBCols(node);
  if (nr < 0 || n <= 0) {
    return Invalid(node, "b_layout must be packed<nr> (nr > 0) with b_cols > 0");
  }
  if (b.rank() != 3 || b.shape[2] != nr || b.shape[0] != (n + nr - 1) / nr) {
    return Invalid(node, absl::StrCat("packed input 1 ", b.ToString(), " is not [",
                                      (n + nr - 1) / nr, ",K,", nr, "] for b_cols=", n));
  }
  return nr;
}

absl::StatusOr<Types> GemmRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* a, In(node, 0));
  KILN_ASSIGN_OR_RETURN(const TensorType* b, In(node, 1));
  KILN_RETURN_IF_ERROR(ExpectRank(node, 0, *a, 2));
  KILN_ASSIGN_OR_RETURN(const int64_t nr, CheckPackedB(node, *b));
  if (nr == 0) KILN_RETURN_IF_ERROR(ExpectRank(node, 1, *b, 2));
  KILN_RETURN_IF_ERROR(ExpectSameDType(node, 1, *b, a->dtype));
  const GemmAttrs attrs = GemmAttrs::Of(node);
  const bool ta = attrs.transA, tb = attrs.transB;
  if (nr != 0 && tb) return Invalid(node, "a packed B requires transB=0");
  int64_t m = ta ? a->shape[1] : a->shape[0];
  int64_t ka = ta ? a->shape[0] : a->shape[1];
  int64_t kb = nr != 0 ? b->shape[1] : tb ? b->shape[1] : b->shape[0];
  int64_t n = nr != 0 ? PackedBCols(node) : tb ? b->shape[0] : b->shape[1];
  if (ka != kb) {
    return Invalid(node, absl::StrCat("inner dimensions differ: ", a->ToString(), " and ",
                                      b->ToString(), " (transA=", ta, ", transB=", tb, ")"));
  }
  if (const Value* c = node.input(2)) {
    KILN_RETURN_IF_ERROR(ExpectSameDType(node, 2, c->type(), a->dtype));
    auto bc = BroadcastShapes(c->type().shape, {m, n});
    if (!bc.ok() || *bc != Shape{m, n}) {
      return Invalid(node, absl::StrCat("input 2 shape ", ShapeStr(c->type().shape),
                                        " does not broadcast to [", m, ",", n, "]"));
    }
  }
  return Types{TensorType{a->dtype, {m, n}}};
}

absl::StatusOr<Types> MatMulRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* a, In(node, 0));
  KILN_ASSIGN_OR_RETURN(const TensorType* b, In(node, 1));
  KILN_RETURN_IF_ERROR(ExpectSameDType(node, 1, *b, a->dtype));
  if (a->rank() == 0 || b->rank() == 0) return Invalid(node, "inputs must have rank >= 1");
  KILN_ASSIGN_OR_RETURN(const int64_t nr, CheckPackedB(node, *b));
  if (nr != 0) {
    // A packed B is one [K, b_cols] matrix shared by every batch of A.
    if (a->rank() < 2) return Invalid(node, "a packed B requires input 0 of rank >= 2");
    if (a->shape.back() != b->shape[1]) {
      return Invalid(node, absl::StrCat("inner dimensions differ: ", a->ToString(),
                                        " and packed ", b->ToString()));
    }
    Shape out = a->shape;
    out.back() = PackedBCols(node);
    return Types{TensorType{a->dtype, out}};
  }
  Shape sa = a->shape, sb = b->shape;
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  int64_t k1 = sa.back(), k2 = sb[sb.size() - 2];
  if (k1 != k2) {
    return Invalid(node, absl::StrCat("inner dimensions differ: ", a->ToString(), " and ",
                                      b->ToString()));
  }
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  auto batch = BroadcastShapes(ba, bb);
  if (!batch.ok()) {
    return Invalid(node, absl::StrCat("batch dimensions of ", a->ToString(), " and ",
                                      b->ToString(), " are not broadcastable"));
  }
  Shape out = *batch;
  if (a->rank() > 1) out.push_back(sa[sa.size() - 2]);
  if (b->rank() > 1) out.push_back(sb.back());
  return Types{TensorType{a->dtype, out}};
}

absl::StatusOr<Types> BatchNormRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  if (x->rank() < 2) {
    return Invalid(node, absl::StrCat("input 0 has rank ", x->rank(), ", expected at least 2"));
  }
  for (int i = 1; i < 5; ++i) {
    KILN_ASSIGN_OR_RETURN(const TensorType* p, In(node, i));
    if (p->shape != Shape{x->shape[1]}) {
      return Invalid(node, absl::StrCat("input ", i, " has shape ", ShapeStr(p->shape),
                                        ", expected [", x->shape[1], "]"));
    }
    KILN_RETURN_IF_ERROR(ExpectSameDType(node, i, *p, x->dtype));
  }
  Types out{*x};
  TensorType stat{x->dtype, {x->shape[1]}};
  for (size_t i = 1; i < node.outputs().size(); ++i) out.push_back(stat);
  return out;
}

absl::StatusOr<Types> SoftmaxRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_RETURN_IF_ERROR(NormalizeAxis(node, AxisAttrs::Of(node).axis, x->rank()).status());
  return Types{*x};
}

absl::StatusOr<Types> FlattenRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  int64_t axis = FlattenAttrs::Of(node).axis;
  if (axis < -x->rank() || axis > x->rank()) {
    return Invalid(node, absl::StrCat("axis ", axis, " is out of range for rank ", x->rank()));
  }
  if (axis < 0) axis += x->rank();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < x->rank(); ++i) (i < axis ? outer : inner) *= x->shape[i];
  return Types{TensorType{x->dtype, {outer, inner}}};
}

absl::StatusOr<Types> ReshapeRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  bool present = false;
  KILN_ASSIGN_OR_RETURN(
      Shape target, IntsFromInputOrAttr(node, 1, "shape", CommonAttrs::Of(node).shape, &present));
  if (!present) return Invalid(node, "missing target shape");
  const bool allow_zero = ReshapeAttrs::Of(node).allowzero;
  Shape out(target.size());
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == -1) {
      if (infer >= 0) return Invalid(node, "target shape has more than one -1");
      infer = static_cast<int>(i);
      continue;
    }
    if (d == 0 && !allow_zero) {
      if (i >= x->shape.size()) {
        return Invalid(node, absl::StrCat("target dim ", i, " is 0 but input has rank ",
                                          x->rank()));
      }
      d = x->shape[i];
    }
    if (d < 0) return Invalid(node, absl::StrCat("target dim ", i, " is ", d));
    out[i] = d;
    std::optional<int64_t> product = CheckedMul(known, d);
    if (!product) {
      return Invalid(node, absl::StrCat("cannot reshape ", x->ToString(), " to ", ShapeStr(target),
                                        ": its element count overflows int64"));
    }
    known = *product;
  }
  int64_t total = x->NumElements();
  if (infer >= 0) {
    if (known == 0 || total % known != 0) {
      return Invalid(node, absl::StrCat("cannot reshape ", x->ToString(), " to ",
                                        ShapeStr(target)));
    }
    out[infer] = total / known;
  } else if (known != total) {
    return Invalid(node, absl::StrCat("cannot reshape ", x->ToString(), " to ",
                                      ShapeStr(target)));
  }
  return Types{TensorType{x->dtype, out}};
}

absl::StatusOr<Types> SqueezeRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  bool present = false;
  KILN_ASSIGN_OR_RETURN(
      Shape axes, IntsFromInputOrAttr(node, 1, "axes", SqueezeAttrs::Of(node).axes, &present));
  std::vector<bool> drop(x->shape.size(), false);
  if (!present) {
    for (size_t i = 0; i < x->shape.size(); ++i) drop[i] = x->shape[i] == 1;
  }
  for (int64_t a : axes) {
    KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, a, x->rank()));
    if (x->shape[axis] != 1) {
      return Invalid(node, absl::StrCat("cannot squeeze axis ", a, " of size ",
                                        x->shape[axis]));
    }
    drop[axis] = true;
  }
  Shape out;
  for (size_t i = 0; i < x->shape.size(); ++i) {
    if (!drop[i]) out.push_back(x->shape[i]);
  }
  return Types{TensorType{x->dtype, out}};
}

absl::StatusOr<Types> UnsqueezeRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  bool present = false;
  KILN_ASSIGN_OR_RETURN(
      Shape axes, IntsFromInputOrAttr(node, 1, "axes", SqueezeAttrs::Of(node).axes, &present));
  if (!present) return Invalid(node, "missing axes");
  int64_t rank = x->rank() + static_cast<int64_t>(axes.size());
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, a, rank));
    if (inserted[axis]) return Invalid(node, absl::StrCat("axis ", a, " is repeated"));
    inserted[axis] = true;
  }
  Shape out;
  size_t k = 0;
  for (int64_t i = 0; i < rank; ++i) out.push_back(inserted[i] ? 1 : x->shape[k++]);
  return Types{TensorType{x->dtype, out}};
}

absl::StatusOr<Types> TransposeRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  Shape perm = TransposePermutation(node);
  if (static_cast<int64_t>(perm.size()) != x->rank()) {
    return Invalid(node, absl::StrCat("perm has ", perm.size(), " entries, expected ",
                                      x->rank()));
  }
  std::vector<bool> seen(perm.size(), false);
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= x->rank() || seen[p]) {
      return Invalid(node, absl::StrCat("perm ", ShapeStr(perm), " is not a permutation"));
    }
    seen[p] = true;
    out.push_back(x->shape[p]);
  }
  return Types{TensorType{x->dtype, out}};
}

absl::StatusOr<Types> ConcatRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* first, In(node, 0));
  KILN_ASSIGN_OR_RETURN(int64_t axis,
                        NormalizeAxis(node, ConcatAttrs::Of(node).axis, first->rank()));
  if (first->rank() == 0) return Invalid(node, "inputs must have rank >= 1");
  Shape out = first->shape;
  for (int i = 1; i < node.num_inputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(const TensorType* t, In(node, i));
    KILN_RETURN_IF_ERROR(ExpectSameDType(node, i, *t, first->dtype));
    KILN_RETURN_IF_ERROR(ExpectRank(node, i, *t, first->rank()));
    for (int64_t d = 0; d < first->rank(); ++d) {
      if (d != axis && t->shape[d] != first->shape[d]) {
        return Invalid(node, absl::StrCat("input ", i, " has shape ", ShapeStr(t->shape),
                                          ", incompatible with ", ShapeStr(first->shape),
                                          " outside axis ", axis));
      }
    }
    out[axis] += t->shape[axis];
  }
  return Types{TensorType{first->dtype, out}};
}

// True if any of inputs [first, last] of `node` is present and not a constant: an operand that
// arrives at run time.
bool HasRuntimeOperand(const Node& node, int first, int last) {
  for (int i = first; i <= last; ++i) {
    if (node.input(i) != nullptr && !node.input(i)->is_constant()) return true;
  }
  return false;
}

// The output type of a node whose shape operands (inputs [first, last]) arrive at run time: the
// static shape in attribute "shape" (what ONNX shape inference or the declared graph output
// gave; the kernel checks it at run time), of `x`'s rank and dtype. Each runtime operand must
// be a 1-D integer tensor; with `no_growth`, no dim may exceed `x`'s (Slice).
absl::StatusOr<Types> RuntimeOperandShape(const Node& node, const TensorType& x, int first,
                                          int last, bool no_growth) {
  if (!node.attrs().Has("shape")) {
    return Invalid(node, "an operand arrives at run time but the node has no static \"shape\"");
  }
  for (int i = first; i <= last; ++i) {
    const Value* v = node.input(i);
    if (v == nullptr) continue;
    if (IsFloat(v->type().dtype) || v->type().dtype == DType::kBool || v->type().rank() != 1) {
      return Invalid(node, absl::StrCat("input ", i, " must be a 1-D integer tensor, got ",
                                        v->type().ToString()));
    }
  }
  const Shape out = CommonAttrs::Of(node).shape;
  if (static_cast<int64_t>(out.size()) != x.rank()) {
    return Invalid(node, absl::StrCat("static shape ", ShapeStr(out), " has rank ", out.size(),
                                      ", the input ", x.rank()));
  }
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (out[d] < 0 || (no_growth && out[d] > x.shape[d])) {
      return Invalid(node, absl::StrCat("static shape ", ShapeStr(out), " does not fit input ",
                                        ShapeStr(x.shape)));
    }
  }
  return Types{TensorType{x.dtype, out}};
}

absl::StatusOr<Types> PadRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  if (HasRuntimeOperand(node, 1, 1)) {
    if (const Value* c = node.input(2)) {
      KILN_RETURN_IF_ERROR(ExpectSameDType(node, 2, c->type(), x->dtype));
    }
    return RuntimeOperandShape(node, *x, 1, 1, /*no_growth=*/false);
  }
  bool present = false;
  KILN_ASSIGN_OR_RETURN(Shape pads,
                        IntsFromInputOrAttr(node, 1, "pads", PadAttrs::Of(node).pads, &present));
  if (static_cast<int64_t>(pads.size()) != 2 * x->rank()) {
    return Invalid(node, absl::StrCat("pads has ", pads.size(), " values, expected ",
                                      2 * x->rank()));
  }
  if (const Value* c = node.input(2)) {
    if (c->type().NumElements() != 1) {
      return Invalid(node, absl::StrCat("constant_value must be a scalar, got ",
                                        c->type().ToString()));
    }
    KILN_RETURN_IF_ERROR(ExpectSameDType(node, 2, c->type(), x->dtype));
  }
  Shape out = x->shape;
  for (int64_t i = 0; i < x->rank(); ++i) {
    const std::string what = absl::StrCat("padded dim ", i);
    KILN_ASSIGN_OR_RETURN(out[i], Add(node, out[i], pads[i], what));
    KILN_ASSIGN_OR_RETURN(out[i], Add(node, out[i], pads[i + x->rank()], what));
    if (out[i] < 0) return Invalid(node, what + " is negative");
  }
  return Types{TensorType{x->dtype, out}};
}

absl::StatusOr<Types> ShapeRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  int64_t r = x->rank();
  const ShapeAttrs a = ShapeAttrs::Of(node);
  int64_t start = a.start, end = a.end.value_or(r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  return Types{TensorType{DType::kInt64, {std::max<int64_t>(0, end - start)}}};
}

absl::StatusOr<Types> GatherRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_ASSIGN_OR_RETURN(const TensorType* idx, In(node, 1));
  if (idx->dtype != DType::kInt64 && idx->dtype != DType::kInt32) {
    return Invalid(node, absl::StrCat("input 1 has dtype ", DTypeName(idx->dtype),
                                      ", expected i32 or i64"));
  }
  if (x->rank() == 0) return Invalid(node, "input 0 must have rank >= 1");
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, Axis0Attrs::Of(node).axis, x->rank()));
  Shape out(x->shape.begin(), x->shape.begin() + axis);
  out.insert(out.end(), idx->shape.begin(), idx->shape.end());
  out.insert(out.end(), x->shape.begin() + axis + 1, x->shape.end());
  return Types{TensorType{x->dtype, out}};
}

absl::StatusOr<Types> SliceRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  if (HasRuntimeOperand(node, 1, 4)) return RuntimeOperandShape(node, *x, 1, 4, true);
  bool has_starts = false, has_ends = false, has_axes = false, has_steps = false;
  const SliceAttrs a = SliceAttrs::Of(node);
  KILN_ASSIGN_OR_RETURN(Shape starts,
                        IntsFromInputOrAttr(node, 1, "starts", a.starts, &has_starts));
  KILN_ASSIGN_OR_RETURN(Shape ends, IntsFromInputOrAttr(node, 2, "ends", a.ends, &has_ends));
  KILN_ASSIGN_OR_RETURN(Shape axes, IntsFromInputOrAttr(node, 3, "axes", a.axes, &has_axes));
  KILN_ASSIGN_OR_RETURN(Shape steps, IntsFromInputOrAttr(node, 4, "steps", {}, &has_steps));
  if (!has_starts || !has_ends) return Invalid(node, "missing starts or ends");
  if (x->rank() == 0) return Invalid(node, "cannot slice a rank-0 tensor");
  if (!has_axes) {
    axes.clear();
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (!has_steps) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return Invalid(node, "starts, ends, axes and steps must have the same length");
  }
  Shape out = x->shape;
  std::vector<bool> seen(x->shape.size(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, axes[i], x->rank()));
    if (seen[axis]) return Invalid(node, absl::StrCat("axis ", axes[i], " is repeated"));
    seen[axis] = true;
    if (steps[i] == 0) return Invalid(node, "slice step must not be 0");
    int64_t dim = x->shape[axis], step = steps[i];
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      out[axis] = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      out[axis] = s > e ? (s - e - step - 1) / (-step) : 0;
    }
  }
  return Types{TensorType{x->dtype, out}};
}

absl::StatusOr<Types> ConstantRule(const Node& node) {
  std::shared_ptr<const Tensor> value = ConstantAttrs::Of(node).value;
  if (value == nullptr) return Invalid(node, "missing tensor attribute 'value'");
  return Types{value->type};
}

// Loop: the carried values keep their types (the body must give each its input's type); each
// scan output is the body's per-iteration value stacked along a new axis 0 of "scan_length".
absl::StatusOr<Types> LoopRule(const Node& node) {
  const LoopAttrs a = LoopAttrs::Of(node);
  std::shared_ptr<Graph> body = a.body;
  if (body == nullptr) return Invalid(node, "missing graph attribute 'body'");
  // "num_carried" is required: absent reads as -1 (an error below), not the schema's 0.
  const int64_t carried = node.attrs().Has("num_carried") ? a.num_carried : -1;
  const int64_t n = a.scan_length;
  const int64_t outer = static_cast<int64_t>(node.num_inputs()) - 2 - carried;
  const int64_t scans = static_cast<int64_t>(body->outputs().size()) - 1 - carried;
  if (carried < 0 || outer < 0 || scans < 0 ||
      static_cast<int64_t>(body->inputs().size()) != 2 + carried + outer) {
    return Invalid(node, absl::StrCat("body has ", body->inputs().size(), " inputs and ",
                                      body->outputs().size(), " outputs for ", node.num_inputs(),
                                      " Loop inputs and num_carried ", carried));
  }
  const TensorType iter{DType::kInt64, {}}, cond{DType::kBool, {}};
  if (body->inputs()[0]->type() != iter || body->inputs()[1]->type() != cond) {
    return Invalid(node, "body inputs 0 and 1 must be i64[] (iteration_num) and bool[] (cond)");
  }
  const TensorType& cond_out = body->outputs()[0]->type();
  if (cond_out.dtype != DType::kBool || cond_out.NumElements() != 1) {
    return Invalid(node, absl::StrCat("body output 0 (the condition) has type ",
                                      cond_out.ToString(), ", expected one bool"));
  }
  // M and cond are scalars as the body's iteration_num and cond are; the rest as the body's.
  for (int i = 0; i < 2 + carried + outer; ++i) {
    const Value* in = node.input(i);
    const TensorType& want = i == 0 ? iter : body->inputs()[i]->type();
    if (in == nullptr || in->type() != want) {
      return Invalid(
          node, absl::StrCat("input ", i, " is ", in == nullptr ? "missing" : in->type().ToString(),
                             ", expected ", want.ToString()));
    }
  }
  Types out;
  for (int i = 0; i < carried; ++i) {
    const TensorType& t = body->outputs()[1 + i]->type();
    if (t != node.input(2 + i)->type()) {
      return Invalid(
          node,
          absl::StrCat("loop-carried value ", i, " has type ", node.input(2 + i)->type().ToString(),
                       " before the loop and ", t.ToString(), " after an iteration"));
    }
    out.push_back(t);
  }
  if (scans > 0 && n < 0) return Invalid(node, "scan outputs need attribute 'scan_length'");
  for (int64_t k = 0; k < scans; ++k) {
    TensorType t = body->outputs()[1 + carried + k]->type();
    t.shape.insert(t.shape.begin(), n);
    out.push_back(std::move(t));
  }
  return out;
}

absl::StatusOr<Types> Dispatch(const Node& node) {
  switch (node.op()) {
    case OpKind::kRelu:
    case OpKind::kLeakyRelu:
    case OpKind::kSigmoid:
    case OpKind::kTanh:
    case OpKind::kExp:
    case OpKind::kLog:
    case OpKind::kSqrt:
    case OpKind::kNeg:
    case OpKind::kAbs:
    case OpKind::kReciprocal:
    case OpKind::kIdentity:
    case OpKind::kErf:
      return UnaryRule(node);
    case OpKind::kClip:
      return ClipRule(node);
    case OpKind::kCast:
      return CastRule(node);
    case OpKind::kDropout:
      return DropoutRule(node);
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kPow:
    case OpKind::kMax:
    case OpKind::kMin:
    case OpKind::kSum:
      return BroadcastRule(node);
    case OpKind::kConv:
      return ConvRule(node);
    case OpKind::kGemm:
      return GemmRule(node);
    case OpKind::kMatMul:
      return MatMulRule(node);
    case OpKind::kMaxPool:
    case OpKind::kAveragePool:
    case OpKind::kLpPool:
      return PoolRule(node);
    case OpKind::kGlobalAveragePool:
    case OpKind::kGlobalMaxPool:
    case OpKind::kGlobalLpPool:
      return GlobalPoolRule(node);
    case OpKind::kBatchNormalization:
      return BatchNormRule(node);
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
      return SoftmaxRule(node);
    case OpKind::kFlatten:
      return FlattenRule(node);
    case OpKind::kReshape:
      return ReshapeRule(node);
    case OpKind::kSqueeze:
      return SqueezeRule(node);
    case OpKind::kUnsqueeze:
      return UnsqueezeRule(node);
    case OpKind::kTranspose:
      return TransposeRule(node);
    case OpKind::kConcat:
      return ConcatRule(node);
    case OpKind::kPad:
      return PadRule(node);
    case OpKind::kShape:
      return ShapeRule(node);
    case OpKind::kGather:
      return GatherRule(node);
    case OpKind::kSlice:
      return SliceRule(node);
    case OpKind::kConstant:
      return ConstantRule(node);
    case OpKind::kLoop:
      return LoopRule(node);
  }
  // Ops of the "NN ops" section of ops.def.
  if (IsNnOp(node.op())) return InferNnOpTypes(node);
  // Ops of the "Tensor, reduction and logic ops" section of ops.def.
  return InferTensorOpTypes(node);
}

}  // namespace

absl::StatusOr<std::vector<TensorType>> InferOutputTypes(const Node& node) {
  const OpInfo& info = node.info();
  int n = node.num_inputs();
  if (n < info.min_inputs || n > info.max_inputs) {
    return Invalid(node, absl::StrCat("has ", n, " inputs, expected ", info.min_inputs, "..",
                                      info.max_inputs));
  }
  for (int i = 0; i < info.min_inputs; ++i) {
    // Required inputs must be present (only Conv/Gemm bias and Clip bounds etc. are optional).
    if (node.input(i) == nullptr) return Invalid(node, absl::StrCat("input ", i, " is missing"));
  }
  if (static_cast<int>(node.outputs().size()) > info.num_outputs) {
    return Invalid(node, absl::StrCat("has ", node.outputs().size(), " outputs, expected at most ",
                                      info.num_outputs));
  }
  // Attribute kinds and values against op_attrs.def, so rules read them typed.
  KILN_RETURN_IF_ERROR(VerifyAttrs(node));
  // LayoutTransform and blocked Conv/pool nodes (graph/layout_rules.h).
  if (IsLayoutNode(node)) return InferLayoutTypes(node);
  return Dispatch(node);
}

absl::StatusOr<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a,
                                                     const std::vector<int64_t>& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shapes ", ShapeStr(a), " and ", ShapeStr(b), " are not broadcastable"));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace kiln::graph
