// Reference kernels of the channel-blocked layout: LayoutTransform by direct index mapping, and
// blocked Conv/pool nodes by unblocking their operands, running the plain NCHW kernel over the
// padded channel count, and blocking the result (so each op's meaning is still written once);
// Bitcast and the u8s8 conv on packed words directly.
#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/layout_rules.h"
#include "compiler_core/ir/graph/op_attrs.h"
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
  const graph::LayoutTransformAttrs a = graph::LayoutTransformAttrs::Of(node);
  const int64_t dst = graph::LayoutBlock(a.dst_layout);
  if (dst > 0) return TensorVec{Block(*in[0], dst)};
  return TensorVec{Unblock(*in[0], a.channels)};
}

/// Bitcast: the same bytes under the output's type.
TensorVec EvalBitcast(const graph::Node& node, const TensorVec& in) {
  auto t = std::make_shared<Tensor>(*in[0]);
  t->type = node.output(0)->type();
  return TensorVec{t};
}

/// A quantized blocked conv's 2-D window: the input position of output `o` and tap `k` along
/// spatial dim `d` (may be outside the input: padding), and the padding value.
struct Window {
  explicit Window(const graph::ConvAttrs& a)
      : strides(graph::OrFill(a.strides, 2, 1)),
        dilations(graph::OrFill(a.dilations, 2, 1)),
        pads(graph::OrFill(a.pads, 4, 0)),
        pad_value(static_cast<uint32_t>(a.pad_value)) {}
  int64_t In(int d, int64_t o, int64_t k) const {
    return o * strides[d] + k * dilations[d] - pads[d];
  }
  Shape strides, dilations, pads;
  uint32_t pad_value;
};

/// A "quant"="u8s8" blocked conv (graph/layout_rules.h), directly from its definition: every
/// output element sums the byte products of its window's words, out-of-bounds words reading
/// "pad_value".
TensorVec EvalConvU8S8(const graph::Node& node, const graph::ConvAttrs& conv, const TensorVec& in) {
  const Shape& xs = in[0]->type.shape;
  const Shape& ws = in[1]->type.shape;
  const TensorType& out_type = node.output(0)->type();
  const Shape& os = out_type.shape;
  const Window win(conv);
  const uint32_t pad_word = win.pad_value;
  const uint32_t* x = in[0]->data<uint32_t>();
  const uint32_t* w = in[1]->data<uint32_t>();
  const int32_t* bias = in.size() > 2 && in[2] != nullptr ? in[2]->data<int32_t>() : nullptr;
  const int64_t icb_n = ws[1], kh_n = ws[2], kw_n = ws[3], icw = ws[4], xb = ws[5];
  auto dot4 = [](uint32_t a, uint32_t b) {
    int64_t sum = 0;
    for (int k = 0; k < 4; ++k) {
      sum += static_cast<int64_t>((a >> (8 * k)) & 0xff) *
             static_cast<int8_t>(static_cast<uint8_t>(b >> (8 * k)));
    }
    return sum;
  };
  auto out = Tensor::Zeros(out_type);
  int32_t* y = out->mutable_data<int32_t>();
  for (int64_t n = 0; n < os[0]; ++n) {
    for (int64_t ocb = 0; ocb < os[1]; ++ocb) {
      for (int64_t oh = 0; oh < os[2]; ++oh) {
        for (int64_t ow = 0; ow < os[3]; ++ow) {
          for (int64_t oc = 0; oc < xb; ++oc) {
            int64_t acc = bias != nullptr ? bias[ocb * xb + oc] : 0;
            for (int64_t icb = 0; icb < icb_n; ++icb) {
              for (int64_t kh = 0; kh < kh_n; ++kh) {
                for (int64_t kw = 0; kw < kw_n; ++kw) {
                  const int64_t ih = win.In(0, oh, kh), iw = win.In(1, ow, kw);
                  const bool inside = ih >= 0 && ih < xs[2] && iw >= 0 && iw < xs[3];
                  for (int64_t j = 0; j < icw; ++j) {
                    const uint32_t a =
                        inside ? x[(((n * xs[1] + icb) * xs[2] + ih) * xs[3] + iw) * icw + j]
                               : pad_word;
                    acc += dot4(
                        a,
                        w[((((ocb * icb_n + icb) * kh_n + kh) * kw_n + kw) * icw + j) * xb + oc]);
                  }
                }
              }
            }
            y[(((n * os[1] + ocb) * os[2] + oh) * os[3] + ow) * xb + oc] =
                static_cast<int32_t>(static_cast<uint32_t>(acc));
          }
        }
      }
    }
  }
  return TensorVec{out};
}

/// A "quant"="u8" blocked depthwise conv (graph/layout_rules.h), from its definition.
TensorVec EvalConvU8Depthwise(const graph::Node& node, const graph::ConvAttrs& conv,
                              const TensorVec& in) {
  const Shape& xs = in[0]->type.shape;
  const Shape& ws = in[1]->type.shape;
  const TensorType& out_type = node.output(0)->type();
  const Shape& os = out_type.shape;
  const Window win(conv);
  const uint32_t pad = win.pad_value;
  const uint8_t* x = in[0]->data<uint8_t>();
  const uint32_t* w = in[1]->data<uint32_t>();
  const uint32_t* bias = in.size() > 2 && in[2] != nullptr ? in[2]->data<uint32_t>() : nullptr;
  const int64_t xb = ws[5];
  auto out = Tensor::Zeros(out_type);
  uint32_t* y = out->mutable_data<uint32_t>();
  for (int64_t n = 0; n < os[0]; ++n) {
    for (int64_t cb = 0; cb < os[1]; ++cb) {
      for (int64_t oh = 0; oh < os[2]; ++oh) {
        for (int64_t ow = 0; ow < os[3]; ++ow) {
          for (int64_t c = 0; c < xb; ++c) {
            uint32_t acc = bias != nullptr ? bias[cb * xb + c] : 0;  // int32, wrapping
            for (int64_t kh = 0; kh < ws[2]; ++kh) {
              for (int64_t kw = 0; kw < ws[3]; ++kw) {
                const int64_t ih = win.In(0, oh, kh), iw = win.In(1, ow, kw);
                const bool inside = ih >= 0 && ih < xs[2] && iw >= 0 && iw < xs[3];
                const uint32_t v =
                    inside ? x[(((n * xs[1] + cb) * xs[2] + ih) * xs[3] + iw) * xb + c] : pad;
                acc += v * w[((cb * ws[2] + kh) * ws[3] + kw) * xb + c];
              }
            }
            y[(((n * os[1] + cb) * os[2] + oh) * os[3] + ow) * xb + c] = acc;
          }
        }
      }
    }
  }
  return TensorVec{out};
}

/// A blocked Conv/pool: evaluated as the plain op over all Cb*x channels.
absl::StatusOr<TensorVec> EvalBlocked(const graph::Node& node, const TensorVec& in) {
  const graph::ConvAttrs conv =
      node.op() == OpKind::kConv ? graph::ConvAttrs::Of(node) : graph::ConvAttrs{};
  if (conv.quant == graph::Quant::kU8) return EvalConvU8Depthwise(node, conv, in);
  if (conv.quant == graph::Quant::kU8S8) return EvalConvU8S8(node, conv, in);
  const int64_t x = graph::LayoutBlock(graph::CommonAttrs::Of(node).layout);
  const TensorType& out_type = node.output(0)->type();
  TensorVec plain_in;
  TensorPtr xin = in[0];
  if (xin->type.rank() == 5) xin = Unblock(*xin, xin->type.shape[1] * x);
  plain_in.push_back(xin);
  graph::AttrMap attrs = node.attrs();
  attrs.Erase("layout");
  if (node.op() == OpKind::kConv) {
    plain_in.push_back(UnpackWeights(*in[1]));
    if (conv.group != 1) attrs.Set("group", out_type.shape[1] * x);
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
  if (node.op() == OpKind::kBitcast) return EvalBitcast(node, in);
  return EvalBlocked(node, in);
}

}  // namespace kiln::reference
