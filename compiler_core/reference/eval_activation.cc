// Reference kernels of the activation ops (Elu, Selu, Celu, HardSigmoid, HardSwish,
// Softplus, Softsign, ThresholdedRelu, Mish, Gelu, PRelu), computed in double with the ONNX
// attribute defaults.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/reference/eval_internal.h"

namespace kiln::reference {
namespace {

using graph::OpKind;

double Softplus(double x) { return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0); }

// The attributes of the activations that have any, decoded once per node.
struct ActivationAttrs {
  explicit ActivationAttrs(const graph::Node& node) {
    switch (node.op()) {
      case OpKind::kElu:
      case OpKind::kCelu:
      case OpKind::kThresholdedRelu:
        elu = graph::EluAttrs::Of(node);
        break;
      case OpKind::kSelu:
        selu = graph::SeluAttrs::Of(node);
        break;
      case OpKind::kHardSigmoid:
        hard_sigmoid = graph::HardSigmoidAttrs::Of(node);
        break;
      case OpKind::kGelu:
        gelu = graph::GeluAttrs::Of(node);
        break;
      default:
        break;
    }
  }
  graph::EluAttrs elu;  // Elu, Celu, ThresholdedRelu
  graph::SeluAttrs selu;
  graph::HardSigmoidAttrs hard_sigmoid;
  graph::GeluAttrs gelu;
};

double Activation(OpKind op, const ActivationAttrs& a, double x) {
  switch (op) {
    case OpKind::kElu: {
      double alpha = a.elu.alpha;
      return x < 0 ? alpha * (std::exp(x) - 1) : x;
    }
    case OpKind::kSelu: {
      double alpha = a.selu.alpha;
      double gamma = a.selu.gamma;
      return x <= 0 ? gamma * (alpha * std::exp(x) - alpha) : gamma * x;
    }
    case OpKind::kCelu: {
      double alpha = a.elu.alpha;
      return std::max(0.0, x) + std::min(0.0, alpha * (std::exp(x / alpha) - 1));
    }
    case OpKind::kHardSigmoid: {
      double alpha = a.hard_sigmoid.alpha, beta = a.hard_sigmoid.beta;
      return std::max(0.0, std::min(1.0, alpha * x + beta));
    }
    case OpKind::kHardSwish:
      return x * std::max(0.0, std::min(1.0, x / 6 + 0.5));
    case OpKind::kSoftplus:
      return Softplus(x);
    case OpKind::kSoftsign:
      return x / (1 + std::fabs(x));
    case OpKind::kThresholdedRelu:
      return x > a.elu.alpha ? x : 0.0;
    case OpKind::kMish:
      return x * std::tanh(Softplus(x));
    case OpKind::kGelu:
      if (a.gelu.approximate == graph::GeluApproximate::kTanh) {
        return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
      }
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    default:
      return NAN;
  }
}

}  // namespace

absl::StatusOr<TensorVec> EvalActivation(const graph::Node& node, const TensorVec& in) {
  const TensorType& out_type = node.output(0)->type();
  if (!IsFloat(out_type.dtype)) {
    return absl::UnimplementedError(NodePrefix(node) +
                                    absl::StrCat("dtype ", DTypeName(out_type.dtype),
                                                 " is not supported"));
  }
  std::vector<double> x = ToDoubles(*in[0]);
  std::vector<double> out(x.size());
  if (node.op() == OpKind::kPRelu) {
    std::vector<double> slope = ToDoubles(*in[1]);
    std::vector<int64_t> idx = BroadcastIndex(in[1]->type.shape, out_type.shape);
    for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] < 0 ? x[i] * slope[idx[i]] : x[i];
  } else {
    const ActivationAttrs attrs(node);
    for (size_t i = 0; i < x.size(); ++i) out[i] = Activation(node.op(), attrs, x[i]);
  }
  return TensorVec{FromDoubles(out_type, out)};
}

}  // namespace kiln::reference
