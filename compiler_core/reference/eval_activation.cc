// Reference kernels of the activation ops of issue 4 (Elu, Selu, Celu, HardSigmoid, HardSwish,
// Softplus, Softsign, ThresholdedRelu, Mish, Gelu, PRelu), computed in double with the ONNX
// attribute defaults.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "compiler_core/reference/eval_internal.h"

namespace kiln::reference {
namespace {

using graph::OpKind;

double Softplus(double x) { return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0); }

double Activation(const graph::Node& node, double x) {
  const graph::AttrMap& a = node.attrs();
  switch (node.op()) {
    case OpKind::kElu: {
      double alpha = a.GetFloat("alpha", 1.0f);
      return x < 0 ? alpha * (std::exp(x) - 1) : x;
    }
    case OpKind::kSelu: {
      double alpha = a.GetFloat("alpha", 1.67326319217681884765625f);
      double gamma = a.GetFloat("gamma", 1.05070102214813232421875f);
      return x <= 0 ? gamma * (alpha * std::exp(x) - alpha) : gamma * x;
    }
    case OpKind::kCelu: {
      double alpha = a.GetFloat("alpha", 1.0f);
      return std::max(0.0, x) + std::min(0.0, alpha * (std::exp(x / alpha) - 1));
    }
    case OpKind::kHardSigmoid: {
      double alpha = a.GetFloat("alpha", 0.2f), beta = a.GetFloat("beta", 0.5f);
      return std::max(0.0, std::min(1.0, alpha * x + beta));
    }
    case OpKind::kHardSwish:
      return x * std::max(0.0, std::min(1.0, x / 6 + 0.5));
    case OpKind::kSoftplus:
      return Softplus(x);
    case OpKind::kSoftsign:
      return x / (1 + std::fabs(x));
    case OpKind::kThresholdedRelu:
      return x > a.GetFloat("alpha", 1.0f) ? x : 0.0;
    case OpKind::kMish:
      return x * std::tanh(Softplus(x));
    case OpKind::kGelu:
      if (a.GetString("approximate", "none") == "tanh") {
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
    for (size_t i = 0; i < x.size(); ++i) out[i] = Activation(node, x[i]);
  }
  return TensorVec{FromDoubles(out_type, out)};
}

}  // namespace kiln::reference
