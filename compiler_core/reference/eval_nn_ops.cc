// Reference kernels of ConvTranspose and NegativeLogLikelihoodLoss, and the dispatch of the NN
// ops (graph::IsNnOp) to their kernels. Everything computes in double.
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/reference/eval_internal.h"

namespace kiln::reference {
namespace {

using graph::OpKind;

// Scatter form: every input element adds x * w to the output positions its kernel covers.
TensorVec EvalConvTranspose(const graph::Node& node, const TensorVec& in) {
  const TensorType& type = node.output(0)->type();
  const Shape& os = type.shape;
  const Shape& xs = in[0]->type.shape;
  const Shape& ws = in[1]->type.shape;
  size_t n = xs.size() - 2;
  const graph::ConvAttrs a = graph::ConvAttrs::Of(node);
  Shape strides = graph::OrFill(a.strides, n, 1);
  Shape dil = graph::OrFill(a.dilations, n, 1);
  Shape pads = graph::OrFill(a.pads, 2 * n, 0);
  int64_t group = a.group;
  int64_t cin = xs[1], cin_g = cin / group, cout_g = ws[1];
  Shape in_sp(xs.begin() + 2, xs.end()), k_sp(ws.begin() + 2, ws.end()),
      o_sp(os.begin() + 2, os.end());
  int64_t num_in = 1, num_k = 1, num_o = 1;
  for (size_t d = 0; d < n; ++d) {
    num_in *= in_sp[d];
    num_k *= k_sp[d];
    num_o *= o_sp[d];
  }
  std::vector<double> x = ToDoubles(*in[0]), w = ToDoubles(*in[1]);
  std::vector<double> out(type.NumElements(), 0.0);
  if (in.size() > 2 && in[2]) {
    std::vector<double> bias = ToDoubles(*in[2]);
    for (int64_t i = 0; i < type.NumElements(); ++i) out[i] = bias[(i / num_o) % os[1]];
  }
  Shape o_strides = RowMajorStrides(o_sp);
  Shape ipos(n), kpos(n);
  for (int64_t b = 0; b < xs[0]; ++b) {
    for (int64_t ic = 0; ic < cin; ++ic) {
      int64_t g = ic / cin_g;
      for (int64_t ii = 0; ii < num_in; ++ii) {
        for (int64_t r = ii, d = static_cast<int64_t>(n) - 1; d >= 0; --d) {
          ipos[d] = r % in_sp[d];
          r /= in_sp[d];
        }
        double xv = x[(b * cin + ic) * num_in + ii];
        for (int64_t ki = 0; ki < num_k; ++ki) {
          for (int64_t r = ki, d = static_cast<int64_t>(n) - 1; d >= 0; --d) {
            kpos[d] = r % k_sp[d];
            r /= k_sp[d];
          }
          int64_t flat = 0;
          bool inside = true;
          for (size_t d = 0; d < n; ++d) {
            int64_t o = ipos[d] * strides[d] + kpos[d] * dil[d] - pads[d];
            inside &= o >= 0 && o < o_sp[d];
            flat += o * o_strides[d];
          }
          if (!inside) continue;
          for (int64_t oc = 0; oc < cout_g; ++oc) {
            int64_t m = g * cout_g + oc;
            out[(b * os[1] + m) * num_o + flat] += xv * w[(ic * cout_g + oc) * num_k + ki];
          }
        }
      }
    }
  }
  return TensorVec{FromDoubles(type, out)};
}

TensorVec EvalNll(const graph::Node& node, const TensorVec& in) {
  const TensorType& type = node.output(0)->type();
  const Shape& xs = in[0]->type.shape;
  std::vector<double> x = ToDoubles(*in[0]);
  const Tensor& target = *in[1];
  std::vector<double> weight;
  if (in.size() > 2 && in[2]) weight = ToDoubles(*in[2]);
  const graph::LossAttrs a = graph::LossAttrs::Of(node);
  const std::optional<int64_t> ignore = a.ignore_index;
  int64_t batch = xs[0], classes = xs[1], inner = 1;
  for (size_t d = 2; d < xs.size(); ++d) inner *= xs[d];
  std::vector<double> loss(batch * inner, 0.0);
  double loss_sum = 0, weight_sum = 0;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t t = target.GetAsInt64(b * inner + i);
      if ((ignore.has_value() && t == *ignore) || t < 0 || t >= classes) continue;
      double wt = weight.empty() ? 1.0 : weight[t];
      double l = -x[(b * classes + t) * inner + i] * wt;
      loss[b * inner + i] = l;
      loss_sum += l;
      weight_sum += wt;
    }
  }
  if (a.reduction == graph::LossReduction::kNone) return TensorVec{FromDoubles(type, loss)};
  double r = a.reduction == graph::LossReduction::kSum ? loss_sum : loss_sum / weight_sum;
  return TensorVec{FromDoubles(type, {r})};
}

}  // namespace

absl::StatusOr<TensorVec> EvalNnOp(const graph::Node& node, const TensorVec& in) {
  switch (node.op()) {
    case OpKind::kElu: case OpKind::kSelu: case OpKind::kCelu: case OpKind::kHardSigmoid:
    case OpKind::kHardSwish: case OpKind::kSoftplus: case OpKind::kSoftsign:
    case OpKind::kThresholdedRelu: case OpKind::kMish: case OpKind::kGelu: case OpKind::kPRelu:
      return EvalActivation(node, in);
    case OpKind::kLayerNormalization: case OpKind::kInstanceNormalization: case OpKind::kLRN:
    case OpKind::kHardmax: case OpKind::kLpNormalization:
    case OpKind::kMeanVarianceNormalization:
      return EvalNormalization(node, in);
    case OpKind::kConvTranspose:
      return EvalConvTranspose(node, in);
    case OpKind::kNegativeLogLikelihoodLoss:
      return EvalNll(node, in);
    case OpKind::kGridSample: case OpKind::kRoiAlign: case OpKind::kResizeTap:
      return EvalSampling(node, in);
    default:
      return absl::UnimplementedError(NodePrefix(node) +
                                      "no reference kernel (the importer decomposes this op)");
  }
}

}  // namespace kiln::reference
