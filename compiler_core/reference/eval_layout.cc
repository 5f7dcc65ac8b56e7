// Reference kernels of the channel-blocked layout: LayoutTransform by direct index mapping, and
// blocked Conv/pool nodes by unblocking their operands, running the plain NCHW kernel over the
// padded channel count, and blocking the result (so each op's meaning is still written once).
#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/layout_rules.h"
#include "compiler_core/reference/eval_internal.h"

namespace kiln::reference {
namespace {

using graph::OpKind;

/// [N, Cb, S..., x] → [N, channels, S...] (channels <= Cb*x; padding dropped).
std::shared_ptr<Tensor> Unblock(const Tensor& t, int64_t channels) {
  const Shape& s = t.type.shape;
  const int64_t x = s.back(), cb = s[1];
  int64_t sp = 1;
  for (size_t d = 2; d + 1 < s.size(); ++d) sp *= s[d];
  std::vector<double> in = ToDoubles(t);
  TensorType out_type = graph::UnblockedType(t.type, channels);
  std::vector<double> out(out_type.NumElements());
  for (int64_t n = 0; n < s[0]; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t p = 0; p < sp; ++p) {
        out[(n * channels + c) * sp + p] = in[((n * cb + c / x) * sp + p) * x + c % x];
      }
    }
  }
  return FromDoubles(out_type, out);
}

/// [N, C, S...] → [N, ceil(C/x), S..., x] with zero padding.
std::shared_ptr<Tensor> Block(const Tensor& t, int64_t x) {
  const Shape& s = t.type.shape;
  const int64_t c_all = s[1];
  int64_t sp = 1;
  for (size_t d = 2; d < s.size(); ++d) sp *= s[d];
  std::vector<double> in = ToDoubles(t);
  TensorType out_type = graph::BlockedType(t.type, x);
  const int64_t cb = out_type.shape[1];
  std::vector<double> out(out_type.NumElements(), 0.0);
  for (int64_t n = 0; n < s[0]; ++n) {
    for (int64_t c = 0; c < c_all; ++c) {
      for (int64_t p = 0; p < sp; ++p) {
        out[((n * cb + c / x) * sp + p) * x + c % x] = in[(n * c_all + c) * sp + p];
      }
    }
  }
  return FromDoubles(out_type, out);
}

/// Packed [OCb, ICb, KH, KW, ICI, x] → OIHW [OCb*x, ICb*ICI, KH, KW].
std::shared_ptr<Tensor> UnpackWeights(const Tensor& w) {
  const Shape& s = w.type.shape;
  const int64_t ocb = s[0], icb = s[1], kh = s[2], kw = s[3], ici = s[4], x = s[5];
  std::vector<double> in = ToDoubles(w);
  TensorType out_type{w.type.dtype, {ocb * x, icb * ici, kh, kw}};
  std::vector<double> out(out_type.NumElements());
  for (int64_t o = 0; o < ocb * x; ++o) {
    for (int64_t i = 0; i < icb * ici; ++i) {
      for (int64_t k = 0; k < kh * kw; ++k) {
        out[(o * icb * ici + i) * kh * kw + k] =
            in[((((o / x) * icb + i / ici) * kh * kw + k) * ici + i % ici) * x + o % x];
      }
    }
  }
  return FromDoubles(out_type, out);
}

absl::StatusOr<TensorVec> EvalTransform(const graph::Node& node, const TensorVec& in) {
  const int64_t dst = graph::LayoutBlock(node.attrs().GetString("dst_layout", ""));
  if (dst > 0) return TensorVec{Block(*in[0], dst)};
  return TensorVec{Unblock(*in[0], node.attrs().GetInt("channels", 0))};
}

/// A blocked Conv/pool: evaluated as the plain op over all Cb*x channels.
absl::StatusOr<TensorVec> EvalBlocked(const graph::Node& node, const TensorVec& in) {
  const int64_t x = graph::LayoutBlock(node.attrs().GetString("layout", ""));
  const TensorType& out_type = node.output(0)->type();
  TensorVec plain_in;
  TensorPtr xin = in[0];
  if (xin->type.rank() == 5) xin = Unblock(*xin, xin->type.shape[1] * x);
  plain_in.push_back(xin);
  graph::AttrMap attrs = node.attrs();
  attrs.Erase("layout");
  if (node.op() == OpKind::kConv) {
    plain_in.push_back(UnpackWeights(*in[1]));
    if (attrs.GetInt("group", 1) != 1) attrs.Set("group", out_type.shape[1] * x);
    if (node.num_inputs() > 2 && in[2] != nullptr) plain_in.push_back(in[2]);
  }
  graph::Graph g;
  std::vector<graph::Value*> values;
  for (size_t i = 0; i < plain_in.size(); ++i) {
    values.push_back(g.AddInput(absl::StrCat("in", i), plain_in[i]->type));
  }
  graph::Node* plain = g.AddNode(node.op(), node.name(), values,
                                 {graph::UnblockedType(out_type, out_type.shape[1] * x)}, attrs);
  absl::StatusOr<TensorVec> out = EvalNn(*plain, plain_in);
  if (!out.ok()) return out.status();
  return TensorVec{Block(*(*out)[0], x)};
}

}  // namespace

absl::StatusOr<TensorVec> EvalLayout(const graph::Node& node, const TensorVec& in) {
  if (node.op() == OpKind::kLayoutTransform) return EvalTransform(node, in);
  return EvalBlocked(node, in);
}

}  // namespace kiln::reference
