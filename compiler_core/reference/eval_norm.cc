// Reference kernels of the normalization ops: LayerNormalization,
// InstanceNormalization and MeanVarianceNormalization (mean/variance over a set of axes), LRN,
// Hardmax and LpNormalization (along one axis). Everything computes in double.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/nn_op_rules.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/reference/eval_internal.h"

namespace kiln::reference {
namespace {

using graph::OpKind;

// For every flat index of `shape`, the flat index of its position with `axes` removed (the
// group of elements that one mean/variance covers); `num_groups` receives the group count.
std::vector<int64_t> GroupIndex(const Shape& shape, const std::vector<int64_t>& axes,
                                int64_t* num_groups) {
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t a : axes) reduced[a] = true;
  Shape kept_shape = shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d]) kept_shape[d] = 1;
  }
  *num_groups = 1;
  for (int64_t d : kept_shape) *num_groups *= d;
  // Broadcasting the kept shape to the full shape maps each element to its group.
  return BroadcastIndex(kept_shape, shape);
}

TensorVec EvalMeanVarNorm(const graph::Node& node, const TensorVec& in) {
  const TensorType& type = node.output(0)->type();
  const Shape& shape = type.shape;
  std::vector<int64_t> axes = graph::NormalizedAxes(node);
  int64_t groups = 0;
  std::vector<int64_t> group = GroupIndex(shape, axes, &groups);
  std::vector<double> x = ToDoubles(*in[0]);
  int64_t n = static_cast<int64_t>(x.size());
  int64_t count = groups == 0 ? 0 : n / groups;
  std::vector<double> mean(groups, 0.0), var(groups, 0.0);
  for (int64_t i = 0; i < n; ++i) mean[group[i]] += x[i];
  for (double& m : mean) m /= static_cast<double>(count);
  for (int64_t i = 0; i < n; ++i) var[group[i]] += (x[i] - mean[group[i]]) * (x[i] - mean[group[i]]);
  for (double& v : var) v /= static_cast<double>(count);

  // Scale and bias: broadcast over the normalized dims (LayerNormalization) or by channel.
  std::vector<double> scale, bias;
  std::vector<int64_t> scale_idx, bias_idx;
  auto param = [&](int i, std::vector<double>& values, std::vector<int64_t>& idx) {
    if (node.num_inputs() <= i || in[i] == nullptr) return;
    values = ToDoubles(*in[i]);
    Shape ps = in[i]->type.shape;
    if (node.op() == OpKind::kInstanceNormalization) ps.resize(shape.size() - 1, 1);
    idx = BroadcastIndex(ps, shape);
  };
  param(1, scale, scale_idx);
  param(2, bias, bias_idx);
  // MeanVarianceNormalization has no epsilon (it adds 1e-9 to the deviation below).
  double eps = node.op() == OpKind::kLayerNormalization
                   ? graph::LayerNormalizationAttrs::Of(node).epsilon
               : node.op() == OpKind::kInstanceNormalization
                   ? graph::InstanceNormalizationAttrs::Of(node).epsilon
                   : 1e-5f;  // MeanVarianceNormalization, as the lowering's Epsilon()
  std::vector<double> out(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t g = group[i];
    double y = node.op() == OpKind::kMeanVarianceNormalization
                   ? (x[i] - mean[g]) / (std::sqrt(var[g]) + 1e-9)
                   : (x[i] - mean[g]) / std::sqrt(var[g] + eps);
    if (!scale.empty()) y *= scale[scale_idx[i]];
    if (!bias.empty()) y += bias[bias_idx[i]];
    out[i] = y;
  }
  return TensorVec{FromDoubles(type, out)};
}

TensorVec EvalLrn(const graph::Node& node, const TensorVec& in) {
  const TensorType& type = node.output(0)->type();
  const Shape& s = type.shape;
  const graph::LRNAttrs a = graph::LRNAttrs::Of(node);
  int64_t size = a.size;
  double alpha = a.alpha;
  double beta = a.beta;
  double bias = a.bias;
  int64_t channels = s[1], inner = 1;
  for (size_t d = 2; d < s.size(); ++d) inner *= s[d];
  std::vector<double> x = ToDoubles(*in[0]);
  std::vector<double> out(x.size());
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;  // window [c - lo, c + hi]
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    int64_t c = (i / inner) % channels;
    double sum = 0;
    for (int64_t k = std::max<int64_t>(0, c - lo); k <= std::min(channels - 1, c + hi); ++k) {
      double v = x[i + (k - c) * inner];
      sum += v * v;
    }
    out[i] = x[i] / std::pow(bias + alpha / static_cast<double>(size) * sum, beta);
  }
  return TensorVec{FromDoubles(type, out)};
}

// Hardmax and LpNormalization along "axis".
TensorVec EvalAlongAxis(const graph::Node& node, const TensorVec& in) {
  const TensorType& type = node.output(0)->type();
  const Shape& s = type.shape;
  const bool hardmax = node.op() == OpKind::kHardmax;
  const graph::LpNormalizationAttrs lp =
      hardmax ? graph::LpNormalizationAttrs{} : graph::LpNormalizationAttrs::Of(node);
  int64_t axis = hardmax ? graph::AxisAttrs::Of(node).axis : lp.axis;
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  int64_t outer = 1, len = s.empty() ? 1 : s[axis], inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    if (d < axis) outer *= s[d];
    if (d > axis) inner *= s[d];
  }
  std::vector<double> x = ToDoubles(*in[0]);
  std::vector<double> out(x.size(), 0.0);
  int64_t p = lp.p;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return (o * len + k) * inner + i; };
      if (hardmax) {
        int64_t best = 0;
        for (int64_t k = 1; k < len; ++k) {
          if (x[at(k)] > x[at(best)]) best = k;
        }
        if (len > 0) out[at(best)] = 1;
      } else {
        double norm = 0;
        for (int64_t k = 0; k < len; ++k) norm += p == 1 ? std::fabs(x[at(k)]) : x[at(k)] * x[at(k)];
        if (p == 2) norm = std::sqrt(norm);
        for (int64_t k = 0; k < len; ++k) out[at(k)] = x[at(k)] / norm;
      }
    }
  }
  return TensorVec{FromDoubles(type, out)};
}

}  // namespace

absl::StatusOr<TensorVec> EvalNormalization(const graph::Node& node, const TensorVec& in) {
  switch (node.op()) {
    case OpKind::kLayerNormalization:
    case OpKind::kInstanceNormalization:
    case OpKind::kMeanVarianceNormalization:
      return EvalMeanVarNorm(node, in);
    case OpKind::kLRN:
      return EvalLrn(node, in);
    case OpKind::kHardmax:
    case OpKind::kLpNormalization:
      return EvalAlongAxis(node, in);
    default:
      return absl::UnimplementedError(NodePrefix(node) + "not a normalization op");
  }
}

}  // namespace kiln::reference
