// Optimizer ops (ONNX operator spec, domain ai.onnx.preview.training, version 1), per tensor:
//   g = norm_coefficient * X + G
//   Adagrad:  r = R / (1 + T * decay_factor); H' = H + g^2; X' = X - r * g / (sqrt(H') + eps)
//   Momentum: b = T > 0 ? beta : 1; V' = alpha * V + b * g;
//             X' = X - R * V' (standard) or X - R * (g + alpha * V') (nesterov)
//   Adam:     V' = alpha * V + (1 - alpha) * g; H' = beta * H + (1 - beta) * g^2;
//             r = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R;
//             X' = (1 - norm_coefficient_post) * (X - r * V' / (sqrt(H') + eps))
#include "compiler_core/importer/onnx/training_builders.h"

#include "compiler_core/importer/onnx/decomposer.h"

namespace kiln::importer {
namespace {

using graph::OpKind;
using graph::Value;

struct Operands {
  Value* r = nullptr;  // f32 scalar
  Value* t = nullptr;  // T as f32 scalar
  // [tensor][0 = X, 1 = G, 2.. = states]
  std::vector<std::vector<Value*>> tensors;
};

// Splits the inputs into R, T and `groups` lists (X, G, states...) of equal length.
absl::StatusOr<Operands> SplitOperands(Decomposer& d, int groups) {
  const OnnxNode& node = d.node();
  const int count = static_cast<int>(node.inputs.size()) - 2;
  if (count <= 0 || count % groups != 0) {
    return absl::InvalidArgumentError(
        node.Prefix() + absl::StrCat("has ", node.inputs.size(), " inputs; expected R, T and ",
                                     groups, " lists of equally many tensors"));
  }
  for (const Value* v : node.inputs) {
    if (v == nullptr) return absl::InvalidArgumentError(node.Prefix() + "an input is omitted");
  }
  Operands ops;
  KILN_ASSIGN_OR_RETURN(ops.r, d.Cast(node.input(0), DType::kFloat32));
  KILN_ASSIGN_OR_RETURN(ops.t, d.Cast(node.input(1), DType::kFloat32));
  const int n = count / groups;
  for (int i = 0; i < n; ++i) {
    std::vector<Value*> group;
    for (int k = 0; k < groups; ++k) group.push_back(node.input(2 + k * n + i));
    const TensorType& xt = group[0]->type();
    if (xt.dtype != DType::kFloat32) {
      return absl::UnimplementedError(node.Prefix() + absl::StrCat("tensor ", i, " has type ",
                                                                   xt.ToString(),
                                                                   "; float32 is supported"));
    }
    for (int k = 1; k < groups; ++k) {
      if (group[k]->type() != xt) {
        return absl::InvalidArgumentError(
            node.Prefix() + absl::StrCat("input ", 2 + k * n + i, " has type ",
                                         group[k]->type().ToString(), " but its weight tensor has ",
                                         xt.ToString()));
      }
    }
    ops.tensors.push_back(std::move(group));
  }
  return ops;
}

// g = norm_coefficient * X + G.
absl::StatusOr<Value*> Regularized(Decomposer& d, Value* x, Value* g, double norm) {
  if (norm == 0) return g;
  KILN_ASSIGN_OR_RETURN(Value * nx, d.Op(OpKind::kMul, {d.Scalar(DType::kFloat32, norm), x}));
  return d.Op(OpKind::kAdd, {nx, g});
}

// T > 0 ? a : b (scalars).
absl::StatusOr<Value*> IfStarted(Decomposer& d, Value* t, Value* a, Value* b) {
  KILN_ASSIGN_OR_RETURN(Value * started, d.Op(OpKind::kGreater, {t, d.Scalar(DType::kFloat32, 0)}));
  return d.Op(OpKind::kWhere, {started, a, b});
}

// X - r * u / (sqrt(h) + eps).
absl::StatusOr<Value*> AdaptiveStep(Decomposer& d, Value* x, Value* r, Value* u, Value* h,
                                    double eps) {
  KILN_ASSIGN_OR_RETURN(Value * s, d.Op(OpKind::kSqrt, {h}));
  KILN_ASSIGN_OR_RETURN(s, d.Op(OpKind::kAdd, {s, d.Scalar(DType::kFloat32, eps)}));
  KILN_ASSIGN_OR_RETURN(Value * q, d.Op(OpKind::kDiv, {u, s}));
  KILN_ASSIGN_OR_RETURN(q, d.Op(OpKind::kMul, {r, q}));
  return d.Op(OpKind::kSub, {x, q});
}

absl::StatusOr<BuiltOutputs> BuildAdagrad(Decomposer& d) {
  const graph::AttrMap& a = d.node().attrs;
  const double decay = a.GetFloat("decay_factor", 0.0f);
  const double eps = a.GetFloat("epsilon", 1e-6f);
  const double norm = a.GetFloat("norm_coefficient", 0.0f);
  KILN_ASSIGN_OR_RETURN(Operands ops, SplitOperands(d, 3));
  KILN_ASSIGN_OR_RETURN(Value * td, d.Op(OpKind::kMul, {ops.t, d.Scalar(DType::kFloat32, decay)}));
  KILN_ASSIGN_OR_RETURN(td, d.Op(OpKind::kAdd, {td, d.Scalar(DType::kFloat32, 1)}));
  KILN_ASSIGN_OR_RETURN(Value * r, d.Op(OpKind::kDiv, {ops.r, td}));
  BuiltOutputs xs, hs;
  for (const std::vector<Value*>& t : ops.tensors) {
    KILN_ASSIGN_OR_RETURN(Value * g, Regularized(d, t[0], t[1], norm));
    KILN_ASSIGN_OR_RETURN(Value * g2, d.Op(OpKind::kMul, {g, g}));
    KILN_ASSIGN_OR_RETURN(Value * h, d.Op(OpKind::kAdd, {t[2], g2}));
    KILN_ASSIGN_OR_RETURN(Value * x, AdaptiveStep(d, t[0], r, g, h, eps));
    xs.push_back(x);
    hs.push_back(h);
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

absl::StatusOr<BuiltOutputs> BuildMomentum(Decomposer& d) {
  const graph::AttrMap& a = d.node().attrs;
  const double alpha = a.GetFloat("alpha", 0.0f);
  const double beta = a.GetFloat("beta", 0.0f);
  const double norm = a.GetFloat("norm_coefficient", 0.0f);
  const std::string mode = a.GetString("mode", "standard");
  if (mode != "standard" && mode != "nesterov") {
    return absl::InvalidArgumentError(
        d.node().Prefix() + absl::StrCat("mode '", mode, "'; expected standard or nesterov"));
  }
  KILN_ASSIGN_OR_RETURN(Operands ops, SplitOperands(d, 3));
  KILN_ASSIGN_OR_RETURN(Value * b, IfStarted(d, ops.t, d.Scalar(DType::kFloat32, beta),
                                             d.Scalar(DType::kFloat32, 1)));
  Value* alpha_c = d.Scalar(DType::kFloat32, alpha);
  BuiltOutputs xs, vs;
  for (const std::vector<Value*>& t : ops.tensors) {
    KILN_ASSIGN_OR_RETURN(Value * g, Regularized(d, t[0], t[1], norm));
    KILN_ASSIGN_OR_RETURN(Value * av, d.Op(OpKind::kMul, {alpha_c, t[2]}));
    KILN_ASSIGN_OR_RETURN(Value * bg, d.Op(OpKind::kMul, {b, g}));
    KILN_ASSIGN_OR_RETURN(Value * v, d.Op(OpKind::kAdd, {av, bg}));
    Value* step = v;
    if (mode == "nesterov") {
      KILN_ASSIGN_OR_RETURN(Value * avn, d.Op(OpKind::kMul, {alpha_c, v}));
      KILN_ASSIGN_OR_RETURN(step, d.Op(OpKind::kAdd, {g, avn}));
    }
    KILN_ASSIGN_OR_RETURN(Value * rs, d.Op(OpKind::kMul, {ops.r, step}));
    KILN_ASSIGN_OR_RETURN(Value * x, d.Op(OpKind::kSub, {t[0], rs}));
    xs.push_back(x);
    vs.push_back(v);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  return xs;
}

absl::StatusOr<BuiltOutputs> BuildAdam(Decomposer& d) {
  const graph::AttrMap& a = d.node().attrs;
  const double alpha = a.GetFloat("alpha", 0.9f);
  const double beta = a.GetFloat("beta", 0.999f);
  const double eps = a.GetFloat("epsilon", 1e-6f);
  const double norm = a.GetFloat("norm_coefficient", 0.0f);
  const double post = a.GetFloat("norm_coefficient_post", 0.0f);
  KILN_ASSIGN_OR_RETURN(Operands ops, SplitOperands(d, 4));
  // r = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R
  Value* one = d.Scalar(DType::kFloat32, 1);
  KILN_ASSIGN_OR_RETURN(Value * bt, d.Op(OpKind::kPow, {d.Scalar(DType::kFloat32, beta), ops.t}));
  KILN_ASSIGN_OR_RETURN(bt, d.Op(OpKind::kSub, {one, bt}));
  KILN_ASSIGN_OR_RETURN(bt, d.Op(OpKind::kSqrt, {bt}));
  KILN_ASSIGN_OR_RETURN(Value * at, d.Op(OpKind::kPow, {d.Scalar(DType::kFloat32, alpha), ops.t}));
  KILN_ASSIGN_OR_RETURN(at, d.Op(OpKind::kSub, {one, at}));
  KILN_ASSIGN_OR_RETURN(Value * corrected, d.Op(OpKind::kMul, {ops.r, bt}));
  KILN_ASSIGN_OR_RETURN(corrected, d.Op(OpKind::kDiv, {corrected, at}));
  KILN_ASSIGN_OR_RETURN(Value * r, IfStarted(d, ops.t, corrected, ops.r));
  BuiltOutputs xs, vs, hs;
  for (const std::vector<Value*>& t : ops.tensors) {
    KILN_ASSIGN_OR_RETURN(Value * g, Regularized(d, t[0], t[1], norm));
    KILN_ASSIGN_OR_RETURN(Value * av, d.Op(OpKind::kMul, {d.Scalar(DType::kFloat32, alpha), t[2]}));
    KILN_ASSIGN_OR_RETURN(Value * ag,
                          d.Op(OpKind::kMul, {d.Scalar(DType::kFloat32, 1 - alpha), g}));
    KILN_ASSIGN_OR_RETURN(Value * v, d.Op(OpKind::kAdd, {av, ag}));
    KILN_ASSIGN_OR_RETURN(Value * g2, d.Op(OpKind::kMul, {g, g}));
    KILN_ASSIGN_OR_RETURN(Value * bh, d.Op(OpKind::kMul, {d.Scalar(DType::kFloat32, beta), t[3]}));
    KILN_ASSIGN_OR_RETURN(g2, d.Op(OpKind::kMul, {d.Scalar(DType::kFloat32, 1 - beta), g2}));
    KILN_ASSIGN_OR_RETURN(Value * h, d.Op(OpKind::kAdd, {bh, g2}));
    KILN_ASSIGN_OR_RETURN(Value * x, AdaptiveStep(d, t[0], r, v, h, eps));
    if (post != 0) {
      KILN_ASSIGN_OR_RETURN(x, d.Op(OpKind::kMul, {d.Scalar(DType::kFloat32, 1 - post), x}));
    }
    xs.push_back(x);
    vs.push_back(v);
    hs.push_back(h);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

}  // namespace

bool IsTrainingOp(const std::string& domain, const std::string& op_type) {
  return domain == kTrainingDomain &&
         (op_type == "Adagrad" || op_type == "Momentum" || op_type == "Adam");
}

absl::StatusOr<BuiltOutputs> BuildTrainingOp(ImportContext& ctx, const OnnxNode& node) {
  Decomposer d(ctx, node);
  const std::string& op = node.proto->op_type();
  if (op == "Adagrad") return BuildAdagrad(d);
  if (op == "Momentum") return BuildMomentum(d);
  if (op == "Adam") return BuildAdam(d);
  return absl::UnimplementedError(node.Prefix() + "not a training op");
}

}  // namespace kiln::importer
