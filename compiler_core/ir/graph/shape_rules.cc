// Type and shape rules of every op in ops.def. Rules read the canonical attribute forms the
// ONNX importer produces (explicit kernel_shape/strides/pads/..., constant shape/axes/pads
// inputs), falling back to ONNX defaults where an attribute is absent.
#include "compiler_core/ir/graph/shape_rules.h"

#include <algorithm>
#include <cstdint>
#include <optional>
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
using rules::BroadcastDims;
using rules::Dims;
using rules::DimsStr;
using rules::In;
using rules::Invalid;
using rules::WindowOutput;
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
  TensorType out = *x;
  out.dtype = *dt;
  return Types{out};
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
  if (node.outputs().size() > 1) out.push_back(TensorType::WithDims(DType::kBool, x->dims()));
  return out;
}

absl::StatusOr<Types> BroadcastRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* first, In(node, 0));
  Dims shape = first->dims();
  for (int i = 1; i < node.num_inputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(const TensorType* t, In(node, i));
    // Pow's exponent may have a different numeric type (ONNX opset 12+).
    if (node.op() != OpKind::kPow) {
      KILN_RETURN_IF_ERROR(ExpectSameDType(node, i, *t, first->dtype));
    }
    std::optional<Dims> b = BroadcastDims(shape, t->dims());
    if (!b) {
      return Invalid(node, absl::StrCat("input shapes ", DimsStr(shape), " and ",
                                        DimsStr(t->dims()), " are not broadcastable"));
    }
    shape = *std::move(b);
  }
  return Types{TensorType::WithDims(first->dtype, shape)};
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

absl::StatusOr<Types> ConvRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  KILN_ASSIGN_OR_RETURN(const TensorType* w, In(node, 1));
  if (!w->is_static()) {
    return absl::UnimplementedError(Prefix(node) + "the weight must have a static shape, got " +
                                    w->ToString());
  }
  if (x->rank() < 3) {
    return Invalid(node, absl::StrCat("input 0 has rank ", x->rank(), ", expected at least 3"));
  }
  KILN_RETURN_IF_ERROR(ExpectRank(node, 1, *w, x->rank()));
  KILN_RETURN_IF_ERROR(ExpectSameDType(node, 1, *w, x->dtype));
  size_t n = x->shape.size() - 2;
  const ConvAttrs a = ConvAttrs::Of(node);
  const int64_t group = a.group;
  int64_t m = w->shape[0];
  if (group <= 0 || CheckedMul(w->shape[1], group) != x->dim(1).AsConstant() || m % group != 0) {
    return Invalid(node, absl::StrCat("input channels ", x->dim(1).ToString(), " do not match weight ",
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
  const Dims xd = x->dims();
  Dims in(xd.begin() + 2, xd.end());
  KILN_ASSIGN_OR_RETURN(Dims spatial,
                        WindowOutput(node, SlidingWindowAttrs::From(a), in, kernel, false));
  Dims out{xd[0], m};
  out.insert(out.end(), spatial.begin(), spatial.end());
  return Types{TensorType::WithDims(x->dtype, out)};
}

absl::StatusOr<Types> PoolRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  if (x->rank() < 3) {
    return Invalid(node, absl::StrCat("input 0 has rank ", x->rank(), ", expected at least 3"));
  }
  size_t n = x->shape.size() - 2;
  const PoolAttrs a = PoolAttrs::Of(node);
  KILN_ASSIGN_OR_RETURN(Shape kernel, SpatialAttr(node, "kernel_shape", a.kernel_shape, n));
  const Dims xd = x->dims();
  Dims in(xd.begin() + 2, xd.end());
  KILN_ASSIGN_OR_RETURN(Dims spatial,
                        WindowOutput(node, SlidingWindowAttrs::From(a), in, kernel, a.ceil_mode));
  Dims out{xd[0], xd[1]};
  out.insert(out.end(), spatial.begin(), spatial.end());
  Types types{TensorType::WithDims(x->dtype, out)};
  if (node.op() == OpKind::kMaxPool && node.outputs().size() > 1) {
    types.push_back(TensorType::WithDims(DType::kInt64, out));
  }
  return types;
}

absl::StatusOr<Types> GlobalPoolRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  if (x->rank() < 3) {
    return Invalid(node, absl::StrCat("input 0 has rank ", x->rank(), ", expected at least 3"));
  }
  Dims out = x->dims();
  for (size_t i = 2; i < out.size(); ++i) out[i] = 1;
  return Types{TensorType::WithDims(x->dtype, out)};
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
  const Dims ad = a->dims(), bd = b->dims();
  sym::Expr m = ta ? ad[1] : ad[0];
  sym::Expr ka = ta ? ad[0] : ad[1];
  sym::Expr kb = nr != 0 ? bd[1] : tb ? bd[1] : bd[0];
  sym::Expr n = nr != 0 ? sym::Expr(PackedBCols(node)) : tb ? bd[0] : bd[1];
  if (ka != kb) {
    return Invalid(node, absl::StrCat("inner dimensions differ: ", a->ToString(), " and ",
                                      b->ToString(), " (transA=", ta, ", transB=", tb, ")"));
  }
  if (const Value* c = node.input(2)) {
    KILN_RETURN_IF_ERROR(ExpectSameDType(node, 2, c->type(), a->dtype));
    std::optional<Dims> bc = BroadcastDims(c->type().dims(), {m, n});
    if (!bc || *bc != Dims{m, n}) {
      return Invalid(node, absl::StrCat("input 2 shape ", DimsStr(c->type().dims()),
                                        " does not broadcast to ", DimsStr({m, n})));
    }
  }
  return Types{TensorType::WithDims(a->dtype, {m, n})};
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
    if (a->dim(a->rank() - 1) != b->dim(1)) {
      return Invalid(node, absl::StrCat("inner dimensions differ: ", a->ToString(),
                                        " and packed ", b->ToString()));
    }
    Dims out = a->dims();
    out.back() = PackedBCols(node);
    return Types{TensorType::WithDims(a->dtype, out)};
  }
  Dims sa = a->dims(), sb = b->dims();
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  if (sa.back() != sb[sb.size() - 2]) {
    return Invalid(node, absl::StrCat("inner dimensions differ: ", a->ToString(), " and ",
                                      b->ToString()));
  }
  Dims ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  std::optional<Dims> batch = BroadcastDims(ba, bb);
  if (!batch) {
    return Invalid(node, absl::StrCat("batch dimensions of ", a->ToString(), " and ",
                                      b->ToString(), " are not broadcastable"));
  }
  Dims out = *std::move(batch);
  if (a->rank() > 1) out.push_back(sa[sa.size() - 2]);
  if (b->rank() > 1) out.push_back(sb.back());
  return Types{TensorType::WithDims(a->dtype, out)};
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
  sym::Expr outer = 1, inner = 1;
  const Dims xd = x->dims();
  for (int64_t i = 0; i < x->rank(); ++i) (i < axis ? outer : inner) *= xd[i];
  return Types{TensorType::WithDims(x->dtype, {outer, inner})};
}

// Integer operand `i` as dims: its sym_value where shape arithmetic computed it (a Reshape
// target built from Shape), else its constant values or `attr_value` (IntsFromInputOrAttr).
absl::StatusOr<Dims> DimsFromInputOrAttr(const Node& node, int i, const std::string& attr,
                                         const std::vector<int64_t>& attr_value, bool* present) {
  if (const Dims* d = rules::ShapeValue(node.input(i)); d && node.input(i)->type().rank() <= 1) {
    *present = true;
    return *d;
  }
  KILN_ASSIGN_OR_RETURN(Shape ints, IntsFromInputOrAttr(node, i, attr, attr_value, present));
  return Dims(ints.begin(), ints.end());
}

absl::StatusOr<Types> ReshapeRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  bool present = false;
  KILN_ASSIGN_OR_RETURN(
      Dims target, DimsFromInputOrAttr(node, 1, "shape", CommonAttrs::Of(node).shape, &present));
  if (!present) return Invalid(node, "missing target shape");
  const bool allow_zero = ReshapeAttrs::Of(node).allowzero;
  const Dims xd = x->dims();
  Dims out(target.size());
  int infer = -1;
  sym::Expr known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    sym::Expr d = target[i];
    if (d == sym::Expr(-1)) {
      if (infer >= 0) return Invalid(node, "target shape has more than one -1");
      infer = static_cast<int>(i);
      continue;
    }
    if (d == sym::Expr(0) && !allow_zero) {
      if (i >= xd.size()) {
        return Invalid(node, absl::StrCat("target dim ", i, " is 0 but input has rank ",
                                          x->rank()));
      }
      d = xd[i];
    }
    if (std::optional<int64_t> c = d.AsConstant(); c && *c < 0) {
      return Invalid(node, absl::StrCat("target dim ", i, " is ", *c));
    }
    out[i] = d;
    known = known * d;
    if (known.is_invalid()) {
      return Invalid(node, absl::StrCat("cannot reshape ", x->ToString(), " to ", DimsStr(target),
                                        ": its element count overflows int64"));
    }
  }
  sym::Expr total = x->NumElementsExpr();
  if (infer >= 0) {
    // The run-time shape check refuses a symbol value where `known` is 0 (ONNX cannot infer
    // -1 then) or the product differs.
    std::optional<sym::Expr> exact = sym::ExactDiv(total, known);
    if (exact) {
      out[infer] = *exact;
    } else if (known == sym::Expr(0) || sym::Mod(total, known) != sym::Expr(0)) {
      return Invalid(node, absl::StrCat("cannot reshape ", x->ToString(), " to ",
                                        DimsStr(target)));
    } else {
      out[infer] = sym::FloorDiv(total, known);
    }
  } else if (known != total) {
    return Invalid(node, absl::StrCat("cannot reshape ", x->ToString(), " to ",
                                      DimsStr(target)));
  }
  return Types{TensorType::WithDims(x->dtype, out)};
}

absl::StatusOr<Types> SqueezeRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  bool present = false;
  KILN_ASSIGN_OR_RETURN(
      Shape axes, IntsFromInputOrAttr(node, 1, "axes", SqueezeAttrs::Of(node).axes, &present));
  const Dims xd = x->dims();
  std::vector<bool> drop(xd.size(), false);
  if (!present) {
    for (size_t i = 0; i < xd.size(); ++i) {
      if (!xd[i].is_constant()) {
        return absl::UnimplementedError(
            Prefix(node) + absl::StrCat("without axes, squeezing ", x->ToString(),
                                        " depends on whether its symbolic dim ", i, " is 1"));
      }
      drop[i] = xd[i] == sym::Expr(1);
    }
  }
  for (int64_t a : axes) {
    KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, a, x->rank()));
    if (xd[axis] != sym::Expr(1)) {
      return Invalid(node, absl::StrCat("cannot squeeze axis ", a, " of size ",
                                        xd[axis].ToString()));
    }
    drop[axis] = true;
  }
  Dims out;
  for (size_t i = 0; i < xd.size(); ++i) {
    if (!drop[i]) out.push_back(xd[i]);
  }
  return Types{TensorType::WithDims(x->dtype, out)};
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
  const Dims xd = x->dims();
  Dims out;
  size_t k = 0;
  for (int64_t i = 0; i < rank; ++i) out.push_back(inserted[i] ? sym::Expr(1) : xd[k++]);
  return Types{TensorType::WithDims(x->dtype, out)};
}

absl::StatusOr<Types> TransposeRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  Shape perm = TransposePermutation(node);
  if (static_cast<int64_t>(perm.size()) != x->rank()) {
    return Invalid(node, absl::StrCat("perm has ", perm.size(), " entries, expected ",
                                      x->rank()));
  }
  std::vector<bool> seen(perm.size(), false);
  const Dims xd = x->dims();
  Dims out;
  for (int64_t p : perm) {
    if (p < 0 || p >= x->rank() || seen[p]) {
      return Invalid(node, absl::StrCat("perm ", ShapeStr(perm), " is not a permutation"));
    }
    seen[p] = true;
    out.push_back(xd[p]);
  }
  return Types{TensorType::WithDims(x->dtype, out)};
}

absl::StatusOr<Types> ConcatRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* first, In(node, 0));
  KILN_ASSIGN_OR_RETURN(int64_t axis,
                        NormalizeAxis(node, ConcatAttrs::Of(node).axis, first->rank()));
  if (first->rank() == 0) return Invalid(node, "inputs must have rank >= 1");
  const Dims fd = first->dims();
  Dims out = fd;
  for (int i = 1; i < node.num_inputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(const TensorType* t, In(node, i));
    KILN_RETURN_IF_ERROR(ExpectSameDType(node, i, *t, first->dtype));
    KILN_RETURN_IF_ERROR(ExpectRank(node, i, *t, first->rank()));
    const Dims td = t->dims();
    for (int64_t d = 0; d < first->rank(); ++d) {
      if (d != axis && td[d] != fd[d]) {
        return Invalid(node, absl::StrCat("input ", i, " has shape ", DimsStr(td),
                                          ", incompatible with ", DimsStr(fd),
                                          " outside axis ", axis));
      }
    }
    out[axis] += td[axis];
  }
  return Types{TensorType::WithDims(first->dtype, out)};
}

// True if any of inputs [first, last] of `node` is present and neither a constant nor known
// from shapes (Value::sym_value): an operand that arrives at run time.
bool HasRuntimeOperand(const Node& node, int first, int last) {
  for (int i = first; i <= last; ++i) {
    const Value* v = node.input(i);
    if (v != nullptr && !v->is_constant() && rules::ShapeValue(v) == nullptr) return true;
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
    if (!x->is_static()) {
      return absl::UnimplementedError(Prefix(node) +
                                      "pads computed at run time over symbolic dims " +
                                      x->ToString());
    }
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
  Dims out = x->dims();
  for (int64_t i = 0; i < x->rank(); ++i) {
    const std::string what = absl::StrCat("padded dim ", i);
    if (x->shape[i] == kSymbolicDim) {
      // A symbolic dim grows by the pads (a crop below 0 is refused by the run-time check).
      out[i] = out[i] + sym::Expr(pads[i]) + sym::Expr(pads[i + x->rank()]);
      if (out[i].is_invalid()) return Invalid(node, what + " overflows int64");
      continue;
    }
    KILN_ASSIGN_OR_RETURN(int64_t d, Add(node, x->shape[i], pads[i], what));
    KILN_ASSIGN_OR_RETURN(d, Add(node, d, pads[i + x->rank()], what));
    if (d < 0) return Invalid(node, what + " is negative");
    out[i] = d;
  }
  return Types{TensorType::WithDims(x->dtype, out)};
}

absl::StatusOr<Types> ShapeRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  auto [start, end] = ShapeOpDims(node, x->rank());
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
  const Dims xd = x->dims(), id = idx->dims();
  Dims out(xd.begin(), xd.begin() + axis);
  out.insert(out.end(), id.begin(), id.end());
  out.insert(out.end(), xd.begin() + axis + 1, xd.end());
  return Types{TensorType::WithDims(x->dtype, out)};
}

// The length of a slice [start, end) by `step` > 0 along a dim where the dim, the start or the
// end is symbolic: ONNX's rule (a negative index counts from the end, then both are clamped to
// [0, dim]) as expressions. A constant at or past kMaxTensorBytes in magnitude (INT64_MAX for
// "to the end") is past every dim, since no tensor has that many elements.
absl::StatusOr<sym::Expr> SymbolicSliceLength(const Node& node, const sym::Expr& dim,
                                              const sym::Expr& start, const sym::Expr& end,
                                              int64_t step) {
  if (step < 0) {
    return absl::UnimplementedError(Prefix(node) +
                                    "a negative step where the dim, start or end is symbolic");
  }
  auto clamp = [&](const sym::Expr& v) -> std::optional<sym::Expr> {
    if (std::optional<int64_t> c = v.AsConstant()) {
      if (*c >= kMaxTensorBytes) return dim;
      if (*c <= -kMaxTensorBytes) return sym::Expr(0);
      if (*c < 0) return sym::Max(dim + *c, 0);
      return sym::Min(*c, dim);
    }
    if (!sym::ProveNonNegative(v)) return std::nullopt;
    return sym::Min(v, dim);
  };
  std::optional<sym::Expr> s = clamp(start), e = clamp(end);
  if (!s || !e) {
    return absl::UnimplementedError(
        Prefix(node) + absl::StrCat("start ", start.ToString(), " or end ", end.ToString(),
                                    " is symbolic and may be negative"));
  }
  return sym::Max(sym::CeilDiv(*e - *s, step), 0);
}

absl::StatusOr<Types> SliceRule(const Node& node) {
  KILN_ASSIGN_OR_RETURN(const TensorType* x, In(node, 0));
  if (HasRuntimeOperand(node, 1, 4)) return RuntimeOperandShape(node, *x, 1, 4, true);
  bool has_starts = false, has_ends = false, has_axes = false, has_steps = false;
  const SliceAttrs a = SliceAttrs::Of(node);
  KILN_ASSIGN_OR_RETURN(Dims starts,
                        DimsFromInputOrAttr(node, 1, "starts", a.starts, &has_starts));
  KILN_ASSIGN_OR_RETURN(Dims ends, DimsFromInputOrAttr(node, 2, "ends", a.ends, &has_ends));
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
  const Dims xd = x->dims();
  Dims out = xd;
  std::vector<bool> seen(xd.size(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, axes[i], x->rank()));
    if (seen[axis]) return Invalid(node, absl::StrCat("axis ", axes[i], " is repeated"));
    seen[axis] = true;
    if (steps[i] == 0) return Invalid(node, "slice step must not be 0");
    const int64_t step = steps[i];
    std::optional<int64_t> dim_c = xd[axis].AsConstant();
    std::optional<int64_t> start_c = starts[i].AsConstant();
    std::optional<int64_t> end_c = ends[i].AsConstant();
    if (!dim_c || !start_c || !end_c) {
      KILN_ASSIGN_OR_RETURN(out[axis], SymbolicSliceLength(node, xd[axis], starts[i], ends[i], step));
      continue;
    }
    int64_t dim = *dim_c;
    int64_t s = *start_c, e = *end_c;
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
  return Types{TensorType::WithDims(x->dtype, out)};
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

std::pair<int64_t, int64_t> ShapeOpDims(const Node& node, int64_t rank) {
  const ShapeAttrs a = ShapeAttrs::Of(node);
  int64_t start = a.start, end = a.end.value_or(rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  return {std::clamp<int64_t>(start, 0, rank), std::clamp<int64_t>(end, 0, rank)};
}

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
  if (!SupportsSymbolic(node.op(), kSymRule)) {
    for (int i = 0; i < n; ++i) {
      const Value* v = node.input(i);
      if (v != nullptr && !v->type().is_static()) {
        return absl::UnimplementedError(
            Prefix(node) + absl::StrCat("input ", i, " has symbolic dims (", v->type().ToString(),
                                        "), which ", info.name, " does not support yet"));
      }
    }
  }
  KILN_ASSIGN_OR_RETURN(Types types, Dispatch(node));
  for (size_t i = 0; i < types.size(); ++i) {
    for (const sym::Expr& d : types[i].sym_shape) {
      if (d.is_invalid()) {
        return Invalid(node, absl::StrCat("the size of output ", i, " overflows int64"));
      }
    }
  }
  return types;
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

namespace rules {

absl::StatusOr<Dims> WindowOutput(const Node& node, const SlidingWindowAttrs& a, const Dims& in,
                                  const Shape& kernel, bool ceil_mode) {
  size_t n = in.size();
  if (a.auto_pad != AutoPad::kNotSet) {
    return Invalid(node, "auto_pad must be resolved to explicit pads");
  }
  KILN_ASSIGN_OR_RETURN(Shape strides, SpatialAttr(node, "strides", OrFill(a.strides, n, 1), n));
  KILN_ASSIGN_OR_RETURN(Shape dilations,
                        SpatialAttr(node, "dilations", OrFill(a.dilations, n, 1), n));
  KILN_ASSIGN_OR_RETURN(Shape pads, SpatialAttr(node, "pads", OrFill(a.pads, 2 * n, 0), 2 * n));
  Dims out(n);
  for (size_t i = 0; i < n; ++i) {
    if (strides[i] <= 0 || dilations[i] <= 0 || kernel[i] <= 0 || pads[i] < 0 ||
        pads[i + n] < 0) {
      return Invalid(node, "kernel_shape, strides and dilations must be positive, pads >= 0");
    }
    const std::string dim = absl::StrCat(" of spatial dim ", i);
    KILN_ASSIGN_OR_RETURN(int64_t span, Mul(node, kernel[i] - 1, dilations[i], "window" + dim));
    KILN_ASSIGN_OR_RETURN(span, Add(node, span, 1, "window" + dim));
    std::optional<int64_t> in_size = in[i].AsConstant();
    if (!in_size) {
      sym::Expr num = in[i] + sym::Expr(pads[i]) + sym::Expr(pads[i + n]) - sym::Expr(span);
      sym::Expr steps = ceil_mode ? sym::CeilDiv(num, strides[i]) : sym::FloorDiv(num, strides[i]);
      out[i] = steps + 1;
      if (out[i].is_invalid()) return Invalid(node, "output size" + dim + " overflows int64");
      continue;
    }
    KILN_ASSIGN_OR_RETURN(int64_t padded, Add(node, *in_size, pads[i], "padded input" + dim));
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

}  // namespace rules

}  // namespace kiln::graph
