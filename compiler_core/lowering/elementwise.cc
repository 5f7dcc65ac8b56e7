// Elementwise and broadcast ops (unary math, binary arithmetic with multidirectional
// broadcasting, Clip, LeakyRelu, Cast, BatchNormalization in inference form) as scalar
// expressions, and the single-nest kernel for groups anchored on one of them.
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/nn_op_rules.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/lowering/op_lowering.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::lowering {
namespace {

using graph::OpKind;
using loop::BinaryOp;
using loop::Expr;
using loop::UnaryOp;

/// The value of input `i` of `node` at the output index: a computed group value, or a
/// broadcast load of an external input.
Expr Operand(KernelBuilder& b, const graph::Node& node, int i, const std::vector<Expr>& out_idx,
             const ValueExprs& computed) {
  const graph::Value* v = node.input(i);
  auto it = computed.find(v);
  if (it != computed.end()) return it->second;
  return loop::Load(b.Input(v), BroadcastIndices(v->type().shape, out_idx));
}

/// A Clip bound: an immediate for a constant input (or the legacy attribute `attr`, whose
/// value is `legacy`), else a load.
std::optional<Expr> ClipBound(KernelBuilder& b, const graph::Node& node, int i, const char* attr,
                              float legacy, DType dtype, const std::vector<Expr>& out_idx,
                              const ValueExprs& computed) {
  const graph::Value* v = node.input(i);
  if (v == nullptr) {
    if (node.attrs().Has(attr)) return Const(legacy, dtype);
    return std::nullopt;
  }
  if (v->is_constant() && v->type().NumElements() == 1) {
    return Const(v->constant()->GetAsDouble(0), dtype);
  }
  return Operand(b, node, i, out_idx, computed);
}

absl::StatusOr<Expr> FloatUnary(const graph::Node& node, UnaryOp op, Expr x) {
  if (!IsFloat(x->dtype)) return NoLowering(node, "integer operands");
  return loop::Unary(op, std::move(x));
}

absl::StatusOr<Expr> BatchNorm(KernelBuilder& b, const graph::Node& node,
                               const std::vector<Expr>& out_idx, const ValueExprs& computed) {
  Expr x = Operand(b, node, 0, out_idx, computed);
  DType dt = x->dtype;
  if (!IsFloat(dt)) return NoLowering(node, "integer operands");
  Expr c = out_idx.size() >= 2 ? out_idx[1] : Idx(0);
  auto param = [&](int i) -> Expr {
    const graph::Value* v = node.input(i);
    auto it = computed.find(v);
    if (it != computed.end()) return it->second;
    return loop::Load(b.Input(v), {v->type().NumElements() == 1 ? Idx(0) : c});
  };
  Expr scale = param(1), bias = param(2), mean = param(3), var = param(4);
  double eps = graph::BatchNormalizationAttrs::Of(node).epsilon;
  Expr inv_std =
      loop::Binary(BinaryOp::kDiv, scale, loop::Unary(UnaryOp::kSqrt, var + Const(eps, dt)));
  return (x - mean) * inv_std + bias;
}

absl::StatusOr<Expr> Compute(KernelBuilder& b, const graph::Node& node,
                             const std::vector<Expr>& out_idx, const ValueExprs& computed) {
  DType out_dtype = node.output(0)->type().dtype;
  auto x = [&]() { return Operand(b, node, 0, out_idx, computed); };
  switch (node.op()) {
    case OpKind::kRelu: return loop::Max(x(), Const(0, out_dtype));
    case OpKind::kLeakyRelu: {
      Expr v = x();
      Expr alpha = Const(graph::LeakyReluAttrs::Of(node).alpha, v->dtype);
      return loop::Select(loop::Binary(BinaryOp::kLt, v, Const(0, v->dtype)), v * alpha, v);
    }
    case OpKind::kSigmoid: {
      Expr v = x();
      if (!IsFloat(v->dtype)) return NoLowering(node, "integer operands");
      Expr one = Const(1, v->dtype);
      return loop::Binary(BinaryOp::kDiv, one,
                          one + loop::Unary(UnaryOp::kExp, loop::Unary(UnaryOp::kNeg, v)));
    }
    case OpKind::kTanh: return FloatUnary(node, UnaryOp::kTanh, x());
    case OpKind::kExp: return FloatUnary(node, UnaryOp::kExp, x());
    case OpKind::kLog: return FloatUnary(node, UnaryOp::kLog, x());
    case OpKind::kSqrt: return FloatUnary(node, UnaryOp::kSqrt, x());
    case OpKind::kErf: return FloatUnary(node, UnaryOp::kErf, x());
    case OpKind::kNeg: return loop::Unary(UnaryOp::kNeg, x());
    case OpKind::kAbs: return loop::Unary(UnaryOp::kAbs, x());
    case OpKind::kReciprocal: {
      Expr v = x();
      return loop::Binary(BinaryOp::kDiv, Const(1, v->dtype), v);
    }
    case OpKind::kIdentity:
    case OpKind::kDropout:
      return x();
    case OpKind::kClip: {
      Expr v = x();
      const graph::ClipAttrs a = graph::ClipAttrs::Of(node);
      auto lo = ClipBound(b, node, 1, "min", a.min, v->dtype, out_idx, computed);
      auto hi = ClipBound(b, node, 2, "max", a.max, v->dtype, out_idx, computed);
      if (lo) v = loop::Max(v, *lo);
      if (hi) v = loop::Min(v, *hi);
      return v;
    }
    case OpKind::kCast: {
      Expr v = x();
      if (out_dtype == v->dtype) return v;
      if (out_dtype == DType::kBool) {
        return loop::Binary(BinaryOp::kNe, v, Const(0, v->dtype));
      }
      return loop::Cast(out_dtype, v);
    }
    case OpKind::kAdd: case OpKind::kSub: case OpKind::kMul: case OpKind::kDiv:
    case OpKind::kPow: {
      Expr a = x();
      if (node.op() == OpKind::kPow && IsFloat(a->dtype)) {
        // A constant exponent of 2 (RMSNorm's x^2) is one multiply: exact where powf rounds
        // the same product, and vectorizable where powf is a scalar libm call.
        const graph::Value* e = node.input(1);
        if (e->is_constant() && e->type().NumElements() == 1) {
          const double p = e->constant()->GetAsDouble(0);
          if (p == 2) return a * a;
          if (p == 1) return a;
        }
      }
      Expr c = Operand(b, node, 1, out_idx, computed);
      if (node.op() == OpKind::kPow && !IsFloat(a->dtype)) {
        // Integer Pow in f64: exact while the result fits in 53 bits.
        Expr e = loop::Cast(DType::kFloat64, c);
        Expr p = loop::Binary(BinaryOp::kPow, loop::Cast(DType::kFloat64, a), e);
        return loop::Cast(a->dtype, p);
      }
      if (c->dtype != a->dtype) c = loop::Cast(a->dtype, c);
      switch (node.op()) {
        case OpKind::kAdd: return a + c;
        case OpKind::kSub: return a - c;
        case OpKind::kMul: return a * c;
        case OpKind::kDiv: return loop::Binary(BinaryOp::kDiv, a, c);
        default:
          if (!IsFloat(a->dtype)) return NoLowering(node, "integer Pow");
          return loop::Binary(BinaryOp::kPow, a, c);
      }
    }
    case OpKind::kMax: case OpKind::kMin: case OpKind::kSum: {
      Expr acc = x();
      for (int i = 1; i < node.num_inputs(); ++i) {
        Expr v = Operand(b, node, i, out_idx, computed);
        acc = node.op() == OpKind::kMax ? loop::Max(acc, v)
              : node.op() == OpKind::kMin ? loop::Min(acc, v)
                                          : acc + v;
      }
      return acc;
    }
    case OpKind::kBatchNormalization: return BatchNorm(b, node, out_idx, computed);
    case OpKind::kBoundMask: {
      // x where the index along "axis" is below the run-time length dims[symbol] * mul / div.
      Expr v = x();
      const graph::BoundMaskAttrs a = graph::BoundMaskAttrs::Of(node);
      Expr dim = loop::Load(b.Input(node.input(1)), {Idx(a.symbol)});
      Expr length = IdxMul(dim, a.mul);
      if (a.div != 1) {
        length = loop::Binary(BinaryOp::kFloorDiv, length, Idx(a.div));
      }
      const int64_t axis = a.axis;
      Expr inside = loop::Binary(BinaryOp::kLt, out_idx[axis], length);
      if (a.rescale) {
        // bound / length: a mean over the bound then averages the valid elements only.
        const double bound = static_cast<double>(node.input(0)->type().shape[axis]);
        v = v * loop::Binary(BinaryOp::kDiv, Const(bound, v->dtype), loop::Cast(v->dtype, length));
      }
      return loop::Select(inside, v, Const(a.fill, v->dtype));
    }
    default:
      if (graph::IsNnOp(node.op())) return LowerActivation(b, node, out_idx, computed);
      return LowerTensorElementwise(b, node, out_idx, computed);
  }
}

}  // namespace

absl::StatusOr<Expr> LowerElementwiseNode(KernelBuilder& b, const graph::Node& node,
                                          const std::vector<Expr>& out_idx,
                                          ValueExprs& computed) {
  for (int i = 0; i < node.num_inputs(); ++i) {
    const graph::Value* v = node.input(i);
    if (v != nullptr && v->type().rank() > static_cast<int64_t>(out_idx.size())) {
      return NoLowering(node, absl::StrCat("input ", i, " of higher rank than the output"));
    }
  }
  KILN_ASSIGN_OR_RETURN(Expr value, Compute(b, node, out_idx, computed));
  if (value->dtype != node.output(0)->type().dtype) {
    return NoLowering(node, absl::StrCat("result dtype ", DTypeName(value->dtype), ", expected ",
                                         DTypeName(node.output(0)->type().dtype)));
  }
  computed[node.output(0)] = value;
  return value;
}

absl::StatusOr<std::vector<loop::Stmt>> LowerElementwiseAnchor(KernelBuilder& b,
                                                               const graph::Node& node,
                                                               const Epilogue& epi) {
  loop::BufferRef out = b.out();
  const std::vector<int64_t>& shape = node.output(0)->type().shape;
  std::vector<loop::Var> vars = b.NewVars("", AxisNames(shape.size()));
  std::vector<Expr> idx = Refs(vars);
  ValueExprs computed;
  KILN_ASSIGN_OR_RETURN(Expr value, LowerElementwiseNode(b, node, idx, computed));
  KILN_ASSIGN_OR_RETURN(value, epi.Apply(value, idx));
  return std::vector<loop::Stmt>{NestDims(vars, loop::BufferDims(*out), loop::Store(out, idx, value))};
}

}  // namespace kiln::lowering
