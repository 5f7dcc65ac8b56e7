// Reference kernels of elementwise ops: unary math, Clip, Cast, Dropout/Identity, and the
// broadcasting binary and variadic ops. Floats compute in double, integers in int64.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/reference/eval_internal.h"

namespace kiln::reference {
namespace {

using graph::OpKind;

// `leaky`: the node's attributes when it is a LeakyRelu.
absl::StatusOr<double> Unary(const graph::Node& node, const graph::LeakyReluAttrs& leaky,
                             double x) {
  switch (node.op()) {
    case OpKind::kRelu: return x > 0 ? x : 0.0;
    case OpKind::kLeakyRelu:
      return x >= 0 ? x : x * leaky.alpha;
    case OpKind::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
    case OpKind::kTanh: return std::tanh(x);
    case OpKind::kExp: return std::exp(x);
    case OpKind::kLog: return std::log(x);
    case OpKind::kSqrt: return std::sqrt(x);
    case OpKind::kNeg: return -x;
    case OpKind::kAbs: return std::fabs(x);
    case OpKind::kReciprocal: return 1.0 / x;
    case OpKind::kErf: return std::erf(x);
    default:
      return absl::UnimplementedError(NodePrefix(node) + "not a unary op");
  }
}

int64_t UnaryInt(OpKind op, int64_t x) {
  switch (op) {
    case OpKind::kRelu: return x > 0 ? x : 0;
    case OpKind::kNeg: return -x;
    case OpKind::kAbs: return x < 0 ? -x : x;
    default: return x;
  }
}

double BinaryFloat(OpKind op, double a, double b) {
  switch (op) {
    case OpKind::kAdd: case OpKind::kSum: return a + b;
    case OpKind::kSub: return a - b;
    case OpKind::kMul: return a * b;
    case OpKind::kDiv: return a / b;
    case OpKind::kPow: return std::pow(a, b);
    case OpKind::kMax: return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
    case OpKind::kMin: return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
    default: return 0;
  }
}

int64_t BinaryInt(OpKind op, int64_t a, int64_t b) {
  switch (op) {
    case OpKind::kAdd: case OpKind::kSum: return a + b;
    case OpKind::kSub: return a - b;
    case OpKind::kMul: return a * b;
    // ONNX integer Div truncates; by 0 it is undefined, Kiln gives 0 (and MIN / -1 wraps).
    case OpKind::kDiv:
      return b == 0 ? 0 : b == -1 ? static_cast<int64_t>(0 - static_cast<uint64_t>(a)) : a / b;
    case OpKind::kPow: {
      int64_t r = 1;
      for (int64_t k = 0; k < b; ++k) r *= a;
      return r;
    }
    case OpKind::kMax: return std::max(a, b);
    case OpKind::kMin: return std::min(a, b);
    default: return 0;
  }
}

absl::StatusOr<TensorVec> EvalBroadcast(const graph::Node& node, const TensorVec& in) {
  const TensorType& out_type = node.output(0)->type();
  auto out = Tensor::Zeros(out_type);
  int64_t n = out_type.NumElements();
  bool is_float = IsFloat(out_type.dtype);
  OpKind op = node.op();
  std::vector<double> facc;
  std::vector<int64_t> iacc;
  for (size_t k = 0; k < in.size(); ++k) {
    std::vector<int64_t> idx = BroadcastIndex(in[k]->type.shape, out_type.shape);
    bool exp_float = IsFloat(in[k]->type.dtype);
    if (is_float) {
      std::vector<double> v = ToDoubles(*in[k]);
      if (k == 0) {
        facc.resize(n);
        for (int64_t i = 0; i < n; ++i) facc[i] = v[idx[i]];
      } else {
        for (int64_t i = 0; i < n; ++i) facc[i] = BinaryFloat(op, facc[i], v[idx[i]]);
      }
    } else if (op == OpKind::kPow && k == 1 && exp_float) {
      for (int64_t i = 0; i < n; ++i) {
        iacc[i] = static_cast<int64_t>(
            std::pow(static_cast<double>(iacc[i]), in[k]->GetAsDouble(idx[i])));
      }
    } else {
      if (k == 0) {
        iacc.resize(n);
        for (int64_t i = 0; i < n; ++i) iacc[i] = in[k]->GetAsInt64(idx[i]);
      } else {
        for (int64_t i = 0; i < n; ++i) iacc[i] = BinaryInt(op, iacc[i], in[k]->GetAsInt64(idx[i]));
      }
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    if (is_float) {
      StoreDouble(*out, i, facc[i]);
    } else {
      StoreInt(*out, i, iacc[i]);
    }
  }
  return TensorVec{out};
}

absl::StatusOr<TensorVec> EvalClip(const graph::Node& node, const TensorVec& in) {
  const Tensor& x = *in[0];
  auto out = Tensor::Zeros(node.output(0)->type());
  bool has_lo = in.size() > 1 && in[1], has_hi = in.size() > 2 && in[2];
  int64_t n = x.type.NumElements();
  if (IsFloat(x.type.dtype)) {
    double lo = has_lo ? in[1]->GetAsDouble(0) : -INFINITY;
    double hi = has_hi ? in[2]->GetAsDouble(0) : INFINITY;
    for (int64_t i = 0; i < n; ++i) StoreDouble(*out, i, std::min(std::max(x.GetAsDouble(i), lo), hi));
  } else {
    int64_t lo = has_lo ? in[1]->GetAsInt64(0) : INT64_MIN;
    int64_t hi = has_hi ? in[2]->GetAsInt64(0) : INT64_MAX;
    for (int64_t i = 0; i < n; ++i) StoreInt(*out, i, std::min(std::max(x.GetAsInt64(i), lo), hi));
  }
  return TensorVec{out};
}

absl::StatusOr<TensorVec> EvalCast(const graph::Node& node, const TensorVec& in) {
  const Tensor& x = *in[0];
  auto out = Tensor::Zeros(node.output(0)->type());
  int64_t n = x.type.NumElements();
  for (int64_t i = 0; i < n; ++i) {
    if (IsFloat(x.type.dtype)) {
      double v = x.GetAsDouble(i);
      if (out->type.dtype == DType::kBool) {
        StoreInt(*out, i, v != 0);
      } else {
        StoreDouble(*out, i, v);
      }
    } else if (IsFloat(out->type.dtype)) {
      StoreDouble(*out, i, static_cast<double>(x.GetAsInt64(i)));
    } else {
      StoreInt(*out, i, x.GetAsInt64(i));
    }
  }
  return TensorVec{out};
}

}  // namespace

absl::StatusOr<TensorVec> EvalElementwise(const graph::Node& node, const TensorVec& in) {
  switch (node.op()) {
    case OpKind::kIdentity:
      return TensorVec{in[0]};
    case OpKind::kDropout: {
      TensorVec out{in[0]};
      if (node.outputs().size() > 1) {
        auto mask = Tensor::Zeros(node.output(1)->type());
        std::fill(mask->bytes.begin(), mask->bytes.end(), 1);
        out.push_back(mask);
      }
      return out;
    }
    case OpKind::kClip:
      return EvalClip(node, in);
    case OpKind::kCast:
      return EvalCast(node, in);
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kPow:
    case OpKind::kMax:
    case OpKind::kMin:
    case OpKind::kSum:
      return EvalBroadcast(node, in);
    default:
      break;
  }
  const Tensor& x = *in[0];
  auto out = Tensor::Zeros(node.output(0)->type());
  int64_t n = x.type.NumElements();
  if (!IsFloat(x.type.dtype)) {
    if (node.op() != OpKind::kRelu && node.op() != OpKind::kNeg && node.op() != OpKind::kAbs) {
      return absl::UnimplementedError(NodePrefix(node) + absl::StrCat("dtype ",
                                                                      DTypeName(x.type.dtype),
                                                                      " is not supported"));
    }
    for (int64_t i = 0; i < n; ++i) StoreInt(*out, i, UnaryInt(node.op(), x.GetAsInt64(i)));
    return TensorVec{out};
  }
  std::vector<double> v = ToDoubles(x);
  const graph::LeakyReluAttrs leaky =
      node.op() == OpKind::kLeakyRelu ? graph::LeakyReluAttrs::Of(node) : graph::LeakyReluAttrs{};
  for (int64_t i = 0; i < n; ++i) {
    auto r = Unary(node, leaky, v[i]);
    if (!r.ok()) return r.status();
    StoreDouble(*out, i, *r);
  }
  return TensorVec{out};
}

}  // namespace kiln::reference
