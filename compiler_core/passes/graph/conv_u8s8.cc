// The conv-u8s8 pass: int32 convolutions of 8-bit activations and weights as u8s8 convolutions
// on packed words (see conv_u8s8.h).
#include "compiler_core/passes/graph/conv_u8s8.h"

#include <algorithm>
#include <limits>

#include "compiler_core/ir/graph/layout_rules.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/passes/graph/rewrite.h"
#include "compiler_core/passes/graph/u8s8_words.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Value;
using Shape = std::vector<int64_t>;

/// `u` (uint8, plain [N, C, H, W] or blocked) blocked by `block` channels, before `before`.
Value* Blocked(Graph& graph, Node& before, Value* u, int64_t block) {
  if (u->type().rank() != 4) return u;
  graph::AttrMap attrs;
  attrs.Set("src_layout", std::string("NCHW"));
  attrs.Set("dst_layout", graph::BlockedLayoutName(block));
  return graph
      .InsertNodeBefore(&before, OpKind::kLayoutTransform, "", {u},
                        {graph::BlockedType(u->type(), block)}, attrs)
      ->output(0);
}

/// A blocked depthwise conv of `op`: Conv{quant="u8"} on the uint8 data itself (weights stay
/// int32; no byte packing, as no product sums over channels).
bool RewriteDepthwise(Graph& graph, Node& conv, const u8s8::U8Operand& op, int64_t x,
                      std::unordered_map<const Value*, Value*>& converted) {
  const Value* w = conv.input(1);
  const Value* bias = conv.input(2);
  const Shape& ws = w->type().shape;  // [Cb, 1, KH, KW, 1, x]
  const TensorType& ut = op.u->type();
  if (ws[1] != 1 || ws[4] != 1 || ws[5] != x ||
      (ut.rank() == 5 ? ut.shape[4] != x || ut.shape[1] != ws[0]
                      : ut.rank() != 4 || (ut.shape[1] + x - 1) / x != ws[0])) {
    return false;
  }
  // bias' = bias - zp * (sum of each channel's taps), in int32 (wrapping, as the sums do).
  auto new_bias = Tensor::Zeros(TensorType{DType::kInt32, {ws[0] * x}});
  const int64_t taps = ws[2] * ws[3];
  for (int64_t c = 0; c < ws[0] * x; ++c) {
    uint32_t sum = 0;
    for (int64_t t = 0; t < taps; ++t) {
      sum += static_cast<uint32_t>(w->constant()->GetAsInt64(((c / x) * taps + t) * x + c % x));
    }
    const uint32_t b = bias != nullptr ? static_cast<uint32_t>(bias->constant()->GetAsInt64(c)) : 0;
    new_bias->mutable_data<uint32_t>()[c] = b - static_cast<uint32_t>(op.zero_point) * sum;
  }
  Value* u = Blocked(graph, conv, u8s8::ToUnsigned(graph, conv, op.u, converted), x);
  graph::AttrMap attrs = conv.attrs();
  attrs.Set("quant", std::string("u8"));
  attrs.Set("pad_value", op.zero_point);
  Value* bv = graph.AddConstant(conv.name() + "_bias_u8", std::move(new_bias));
  Node* q = graph.InsertNodeBefore(&conv, OpKind::kConv, conv.name(), {u, conv.input(1), bv},
                                   {conv.output(0)->type()}, attrs);
  u8s8::ReplaceContraction(graph, conv, q->output(0), op.chain);
  return true;
}

/// Rewrites `conv` if it matches (see conv_u8s8.h); returns whether it did.
bool Rewrite(Graph& graph, Node& conv, std::unordered_map<const Value*, Value*>& converted) {
  if (conv.op() != OpKind::kConv || conv.attrs().Has("quant") ||
      conv.output(0)->type().dtype != DType::kInt32) {
    return false;
  }
  const bool depthwise = graph::ConvAttrs::Of(conv).group != 1;
  const int64_t x = graph::LayoutBlock(graph::CommonAttrs::Of(conv).layout);
  const Value* w = conv.input(1);
  const Value* bias = conv.input(2);
  if (x <= 0 || w == nullptr || !w->is_constant() || w->type().rank() != 6 ||
      (bias != nullptr && !bias->is_constant())) {
    return false;
  }
  // [LayoutTransform to NCHW<x>c of] the 8-bit operand.
  Value* in = conv.input(0);
  Node* lt = u8s8::ProducerIs(in, OpKind::kLayoutTransform);
  if (lt != nullptr) {
    if (graph::LayoutBlock(graph::LayoutTransformAttrs::Of(*lt).dst_layout) != x) return false;
    in = lt->input(0);
  }
  std::optional<u8s8::U8Operand> op = u8s8::MatchU8Operand(in);
  // The padding word repeats the zero point, a constant uint8.
  if (!op || op->runtime_zero_point != nullptr || op->zero_point < 0 || op->zero_point > 255) {
    return false;
  }
  if (lt != nullptr) op->chain.insert(op->chain.begin(), lt);
  if (depthwise) return RewriteDepthwise(graph, conv, *op, x, converted);
  const Shape& ws = w->type().shape;
  const int64_t ici = ws[4], icw = (ici + 3) / 4, block = 4 * icw;
  const TensorType& ut = op->u->type();
  if (ut.rank() == 5 ? ut.shape[4] != block || ici != block || ut.shape[1] != ws[1]
                     : ut.rank() != 4 || (ut.shape[1] + block - 1) / block != ws[1]) {
    return false;
  }
  // Weights [OCb, ICb, KH, KW, ICI, x] → words [OCb, ICb, KH, KW, ICW, x]; sums per channel.
  std::vector<int64_t> sums;
  std::shared_ptr<Tensor> words = u8s8::PackWords(*w->constant(), ws[0] * ws[1] * ws[2] * ws[3],
                                                  ici, x, ws[1] * ws[2] * ws[3], sums);
  if (words == nullptr) return false;
  words->type.shape = {ws[0], ws[1], ws[2], ws[3], icw, x};
  auto new_bias = Tensor::Zeros(TensorType{DType::kInt32, {ws[0] * x}});
  for (int64_t c = 0; c < ws[0] * x; ++c) {
    const int64_t b =
        (bias != nullptr ? bias->constant()->GetAsInt64(c) : 0) - op->zero_point * sums[c];
    if (b < std::numeric_limits<int32_t>::min() || b > std::numeric_limits<int32_t>::max()) {
      return false;
    }
    new_bias->mutable_data<int32_t>()[c] = static_cast<int32_t>(b);
  }

  Value* u = Blocked(graph, conv, u8s8::ToUnsigned(graph, conv, op->u, converted), block);
  Value* in_words = u8s8::BitcastToWords(graph, conv, u);
  graph::AttrMap attrs = conv.attrs();
  attrs.Set("quant", std::string("u8s8"));
  attrs.Set("pad_value", static_cast<int64_t>(static_cast<int32_t>(
                             static_cast<uint32_t>(op->zero_point) * 0x01010101u)));
  Value* wv = graph.AddConstant(w->name() + "_u8s8", std::move(words));
  Value* bv = graph.AddConstant(conv.name() + "_bias_u8s8", std::move(new_bias));
  Node* q = graph.InsertNodeBefore(&conv, OpKind::kConv, conv.name(), {in_words, wv, bv},
                                   {conv.output(0)->type()}, attrs);
  u8s8::ReplaceContraction(graph, conv, q->output(0), op->chain);
  return true;
}

}  // namespace

absl::StatusOr<bool> ConvU8S8::Run(Graph& graph) {
  KILN_RETURN_IF_ERROR(CheckRunsBeforeFusion(graph, name()));
  if (!options_.int8_dot4) return false;
  bool changed = false;
  std::unordered_map<const Value*, Value*> converted;  // i8 values made uint8
  for (Node* node : graph.nodes()) changed |= Rewrite(graph, *node, converted);
  return changed;
}

}  // namespace kiln::passes
