// The activation ops (Elu, Selu, Celu, HardSigmoid, HardSwish, Softplus, Softsign,
// ThresholdedRelu, Mish, Gelu, PRelu) as scalar expressions, so they run as group anchors or
// fused consumers like every other elementwise op. Softplus uses the overflow-free form
// max(x, 0) + log(1 + exp(-|x|)).
#include <cmath>

#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/lowering/op_lowering.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::lowering {
namespace {

using graph::OpKind;
using loop::BinaryOp;
using loop::Expr;
using loop::UnaryOp;

Expr Div(Expr a, Expr b) { return loop::Binary(BinaryOp::kDiv, std::move(a), std::move(b)); }
Expr Exp(Expr a) { return loop::Unary(UnaryOp::kExp, std::move(a)); }
Expr Lt(Expr a, Expr b) { return loop::Binary(BinaryOp::kLt, std::move(a), std::move(b)); }

Expr Softplus(const Expr& x) {
  DType dt = x->dtype;
  Expr e = Exp(loop::Unary(UnaryOp::kNeg, loop::Unary(UnaryOp::kAbs, x)));
  return loop::Max(x, Const(0, dt)) + loop::Unary(UnaryOp::kLog, Const(1, dt) + e);
}

}  // namespace

absl::StatusOr<Expr> LowerActivation(KernelBuilder& b, const graph::Node& node,
                                     const std::vector<Expr>& out_idx,
                                     const ValueExprs& computed) {
  auto operand = [&](int i) -> Expr {
    const graph::Value* v = node.input(i);
    auto it = computed.find(v);
    if (it != computed.end()) return it->second;
    return loop::Load(b.Input(v), BroadcastIndices(v->type().shape, out_idx));
  };
  Expr x = operand(0);
  DType dt = x->dtype;
  if (!IsFloat(dt)) return NoLowering(node, "integer operands");
  auto c = [&](double v) { return Const(v, dt); };
  switch (node.op()) {
    case OpKind::kElu:
      return loop::Select(Lt(x, c(0)), c(graph::EluAttrs::Of(node).alpha) * (Exp(x) - c(1)), x);
    case OpKind::kSelu: {
      const graph::SeluAttrs a = graph::SeluAttrs::Of(node);
      Expr alpha = c(a.alpha);
      Expr gamma = c(a.gamma);
      return loop::Select(loop::Binary(BinaryOp::kLe, x, c(0)),
                          gamma * (alpha * Exp(x) - alpha), gamma * x);
    }
    case OpKind::kCelu: {
      double alpha = graph::EluAttrs::Of(node).alpha;
      return loop::Max(x, c(0)) + loop::Min(c(0), c(alpha) * (Exp(Div(x, c(alpha))) - c(1)));
    }
    case OpKind::kHardSigmoid: {
      const graph::HardSigmoidAttrs a = graph::HardSigmoidAttrs::Of(node);
      return loop::Max(c(0), loop::Min(c(1), c(a.alpha) * x + c(a.beta)));
    }
    case OpKind::kHardSwish:
      return x * loop::Max(c(0), loop::Min(c(1), x * c(1.0 / 6) + c(0.5)));
    case OpKind::kSoftplus:
      return Softplus(x);
    case OpKind::kSoftsign:
      return Div(x, c(1) + loop::Unary(UnaryOp::kAbs, x));
    case OpKind::kThresholdedRelu:
      return loop::Select(loop::Binary(BinaryOp::kGt, x, c(graph::EluAttrs::Of(node).alpha)), x,
                          c(0));
    case OpKind::kMish:
      return x * loop::Unary(UnaryOp::kTanh, Softplus(x));
    case OpKind::kGelu:
      if (graph::GeluAttrs::Of(node).approximate == graph::GeluApproximate::kTanh) {
        Expr inner = c(std::sqrt(2 / M_PI)) * (x + c(0.044715) * x * x * x);
        return c(0.5) * x * (c(1) + loop::Unary(UnaryOp::kTanh, inner));
      }
      return c(0.5) * x * (c(1) + loop::Unary(UnaryOp::kErf, x * c(M_SQRT1_2)));
    case OpKind::kPRelu: {
      Expr slope = operand(1);
      return loop::Select(Lt(x, c(0)), x * slope, x);
    }
    default:
      return NoLowering(node, "this op as an activation");
  }
}

}  // namespace kiln::lowering
